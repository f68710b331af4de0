package delivery_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/protocol"
)

type delta struct {
	seq  int64
	text string
}

func TestAssemblerSequences(t *testing.T) {
	tests := []struct {
		name    string
		deltas  []delta
		want    string // assembled text before Final
		badAt   int    // index of the delta that must fail, -1 for none
		ignored int    // index of a delta that must be ignored, -1 for none
	}{
		{"in order", []delta{{1, "he"}, {2, "ll"}, {3, "o"}}, "hello", -1, -1},
		{"retransmission ignored", []delta{{1, "he"}, {2, "ll"}, {2, "ll"}, {3, "o"}}, "hello", -1, 2},
		{"old retransmission ignored", []delta{{1, "he"}, {2, "ll"}, {1, "he"}}, "hell", -1, 2},
		{"gap", []delta{{1, "he"}, {3, "o"}}, "he", 1, -1},
		{"starts at 2", []delta{{2, "x"}}, "", 0, -1},
		{"zero", []delta{{0, "x"}}, "", 0, -1},
		{"negative", []delta{{-1, "x"}}, "", 0, -1},
		{"conflict", []delta{{1, "he"}, {2, "ll"}, {2, "LL"}}, "hell", 2, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := delivery.NewAssembler(delivery.AssemblerOptions{})
			for i, d := range tt.deltas {
				_, added, err := a.Add("c", "m", d.seq, d.text)
				if i == tt.badAt {
					if pe := protocol.AsError(err); pe == nil || pe.Code != protocol.CodeDeltaSequenceInvalid || pe.Retryable {
						t.Fatalf("delta %d: err = %v, want delta_sequence_invalid", i, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("delta %d: %v", i, err)
				}
				if added == (i == tt.ignored) {
					t.Fatalf("delta %d: added = %v", i, added)
				}
			}
			got, ok := a.Final("c", "m")
			if got != tt.want || ok != (tt.want != "") {
				t.Fatalf("Final = %q %v, want %q", got, ok, tt.want)
			}
			if _, ok := a.Final("c", "m"); ok {
				t.Fatal("Final did not clear the message")
			}
		})
	}
}

func TestAssemblerFinalWithoutDeltas(t *testing.T) {
	a := delivery.NewAssembler(delivery.AssemblerOptions{})
	if got, ok := a.Final("c", "never"); ok || got != "" {
		t.Fatalf("Final = %q %v", got, ok)
	}
	// Messages are per channel.
	a.Add("c1", "m", 1, "x")
	if _, ok := a.Final("c2", "m"); ok {
		t.Fatal("message visible on another channel")
	}
}

func TestAssemblerBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := delivery.NewAssembler(delivery.AssemblerOptions{MaxMessages: 2, MaxMessageBytes: 12, MaxBytes: 15, TTL: time.Minute})
		if _, _, err := a.Add("c", "big", 1, strings.Repeat("x", 13)); protocol.AsError(err) == nil {
			t.Fatalf("oversized delta err = %v", err)
		}
		a.Add("c", "m1", 1, "aaaa")
		a.Add("c", "m2", 1, "bbbb")
		a.Add("c", "m3", 1, "cccc") // evicts m1 (count)
		if _, ok := a.Final("c", "m1"); ok {
			t.Fatal("oldest message not evicted at MaxMessages")
		}
		a.Add("c", "m3", 2, "cccccc") // 14 bytes in all: fits
		a.Add("c", "m3", 3, "cc")     // 12 + 4 of m2 > 15: m2 goes
		if n, b := a.Len(); n != 1 || b != 12 {
			t.Fatalf("Len = %d, %d bytes; want 1 message of 12 bytes", n, b)
		}
		time.Sleep(time.Minute)
		if n, _ := a.Len(); n != 0 {
			t.Fatal("message kept past its TTL")
		}
		if _, _, err := a.Add("c", "m3", 4, "x"); protocol.AsError(err) == nil {
			t.Fatal("expired message continued at sequence 4")
		}
		a.Add("c", "m4", 1, "x")
		a.Add("d", "m5", 1, "x")
		a.DropChannel("c")
		if n, _ := a.Len(); n != 1 {
			t.Fatalf("after DropChannel: %d messages, want 1", n)
		}
	})
}

func FuzzAssembler(f *testing.F) {
	f.Add([]byte{1, 2, 2, 3, 5, 1})
	f.Fuzz(func(t *testing.T, seqs []byte) {
		a := delivery.NewAssembler(delivery.AssemblerOptions{MaxMessages: 4, MaxMessageBytes: 64, MaxBytes: 128})
		var want strings.Builder
		next := int64(1)
		for _, s := range seqs {
			seq := int64(s % 8)
			text := string(rune('a' + s%8))
			_, added, err := a.Add("c", "m", seq, text)
			switch {
			case seq == next && want.Len()+1 <= 64:
				if err != nil || !added {
					t.Fatalf("seq %d (next) rejected: %v", seq, err)
				}
				want.WriteString(text)
				next++
			case err == nil && added:
				t.Fatalf("seq %d added, want %d", seq, next)
			}
		}
		got, _ := a.Final("c", "m")
		if got != want.String() {
			t.Fatalf("assembled %q, want %q", got, want.String())
		}
	})
}
