package connector_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/delivery"
)

// BenchmarkEditStreamDelta measures what one delta costs an EditStream on
// the chat hot path, next to a baseline run in the same process: the
// SDK's own per-delta work, the sequence check and assembly of
// delivery.Assembler. "idle" is a delta between two edits (the common
// case: deltas come far more often than the edit interval); "edit" is a
// delta that edits (the first part cut from 4 KB of assembled text,
// hashed, and a no-op target call).
func BenchmarkEditStreamDelta(b *testing.B) {
	assembled := strings.Repeat("A streamed answer grows word by word, wörd 👍🏽. ", 90) // ~4.3 KB
	b.Run("baseline-assembler", func(b *testing.B) {
		a := delivery.NewAssembler(delivery.AssemblerOptions{MaxMessageBytes: 1 << 30, MaxBytes: 1 << 30})
		b.ReportAllocs()
		seq := int64(0)
		for b.Loop() {
			seq++
			if seq%1000 == 0 { // keep the message short, as real ones are
				a.Final("ch", "m")
				seq = 1
			}
			if _, _, err := a.Add("ch", "m", seq, "word "); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, tc := range []struct {
		name string
		tick time.Duration // clock advance per delta
	}{{"idle", 0}, {"edit", 2 * time.Second}} {
		b.Run(tc.name, func(b *testing.B) {
			bd := &board{}
			r := startStreamRig(b, connectortest.NewStore(b), bd, connector.EditStreamOptions[int]{
				Interval: time.Second, Limit: connector.TextLimit{Max: 4096, Unit: connector.TextUnitUTF16},
				Edit: func(context.Context, *connector.Channel, int, string) error { return nil }}, "")
			clk := newClock()
			r.stream.SetClock(clk.now)
			ch, ctx := r.channel(b), context.Background()
			texts := [2]string{assembled, assembled[:len(assembled)-1]}
			if err := r.stream.Delta(ctx, ch, delta("m", 1, texts[0])); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				clk.advance(tc.tick)
				if err := r.stream.Delta(ctx, ch, delta("m", int64(i+1), texts[i%2])); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
