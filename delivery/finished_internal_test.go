package delivery

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestStaleHeadHintNotResent: an Enqueue hands Run its entry as the
// channel's head only after its storage call returned; when a worker has
// delivered that entry meanwhile (a read of the due heads found it), Run
// must not send it again on the strength of the late hint. The late hint
// is injected here as Enqueue would send it. It fails without
// finishedSet: m0 is sent twice.
func TestStaleHeadHintNotResent(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	outcomes := make(chan Outcome, 8)
	ob, err := NewOutbox(OutboxOptions{Storage: NewMemoryStorage(0), Queue: "q",
		Send: func(_ context.Context, e Entry) error {
			mu.Lock()
			sent = append(sent, e.MessageID)
			mu.Unlock()
			return nil
		},
		OnOutcome: func(o Outcome) { outcomes <- o },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ob.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	for !ob.running.Load() {
		time.Sleep(time.Millisecond) // Run sets it before its first read
	}
	wait := func(id string) {
		t.Helper()
		select {
		case o := <-outcomes:
			if o.MessageID != id || o.Kind != OutcomeDelivered {
				t.Fatalf("outcome %+v, want %s delivered", o, id)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s not delivered", id)
		}
	}
	res, err := ob.Enqueue(ctx, "A", "m0", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	wait("m0")
	ob.kick(kick{channel: "A", head: res.Entry, hasHead: true}) // the late hint
	if _, err := ob.Enqueue(ctx, "A", "m1", []byte("y")); err != nil {
		t.Fatal(err)
	}
	wait("m1")
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"m0", "m1"}; !slices.Equal(sent, want) {
		t.Fatalf("sent %v, want %v (m0 once)", sent, want)
	}
}

// TestFinishedSetBounded: the set keeps the last recentFinished keys.
func TestFinishedSetBounded(t *testing.T) {
	var s finishedSet
	for i := range recentFinished + 10 {
		s.add(finishedKey{"c", fmt.Sprint("m", i)})
	}
	if len(s.set) != recentFinished || len(s.ring) != recentFinished {
		t.Fatalf("holds %d keys in a ring of %d, want %d", len(s.set), len(s.ring), recentFinished)
	}
	if s.has(finishedKey{"c", "m9"}) || !s.has(finishedKey{"c", "m10"}) || !s.has(finishedKey{"c", fmt.Sprint("m", recentFinished+9)}) {
		t.Fatal("the oldest keys were not the ones forgotten")
	}
}
