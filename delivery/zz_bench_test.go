package delivery_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/xconn/xconn/delivery"
)

// BenchmarkOutboxEnqueueAck measures the outbox's own cost per message
// (enqueue, send, accepted outcome) on the in-memory storage, so that the
// storage backends' numbers (package store) can be read against it.
func BenchmarkOutboxEnqueueAck(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	left := make(chan struct{}, 1024)
	ob, err := delivery.NewOutbox(delivery.OutboxOptions{
		Storage:   delivery.NewMemoryStorage(0),
		Queue:     "bench",
		Send:      func(context.Context, delivery.Entry) error { return nil },
		OnOutcome: func(delivery.Outcome) { left <- struct{}{} },
	})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = ob.Run(ctx); close(done) }()
	payload := make([]byte, 256)
	channels := make([]string, 16)
	for i := range channels {
		channels[i] = "ch" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if _, err := ob.Enqueue(ctx, channels[n%len(channels)], "m"+strconv.Itoa(n), payload); err != nil {
			b.Fatal(err)
		}
		n++
		<-left
	}
	cancel()
	<-done
}

// BenchmarkAssemblerAdd measures delta assembly: 32 in-order fragments of
// one message, then its final.
func BenchmarkAssemblerAdd(b *testing.B) {
	a := delivery.NewAssembler(delivery.AssemblerOptions{})
	frag := "word "
	b.ReportAllocs()
	m := 0
	for b.Loop() {
		id := "msg" + strconv.Itoa(m)
		m++
		for seq := int64(1); seq <= 32; seq++ {
			if _, _, err := a.Add("ch", id, seq, frag); err != nil {
				b.Fatal(err)
			}
		}
		if _, ok := a.Final("ch", id); !ok {
			b.Fatal("final: message not found")
		}
	}
}
