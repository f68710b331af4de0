package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/xconn/xconn/delivery"
)

// TestOutboxEngineOnBothBackends runs the delivery loop on the store:
// per-channel order, retries after temporary failures, one delivery each.
func TestOutboxEngineOnBothBackends(t *testing.T) {
	backends(t, func(t *testing.T, dsn string) {
		db := openDB(t, dsn, Options{})
		var mu sync.Mutex
		sent := map[string][]string{}
		failures := 0
		all := make(chan struct{}, 20)
		ob, err := delivery.NewOutbox(delivery.OutboxOptions{Storage: db, Queue: "engine",
			Backoff: delivery.Backoff{Base: 10 * time.Millisecond, Max: 20 * time.Millisecond},
			Send: func(ctx context.Context, e delivery.Entry) error {
				mu.Lock()
				defer mu.Unlock()
				if e.MessageID == "m1" && e.Attempts < 2 { // two temporary failures first
					failures++
					return errors.New("disconnected")
				}
				sent[e.Channel] = append(sent[e.Channel], e.MessageID)
				return nil
			},
			OnOutcome: func(o delivery.Outcome) { all <- struct{}{} },
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { ob.Run(ctx); close(done) }()
		for i := range 5 {
			for _, ch := range []string{"A", "B"} {
				if _, err := ob.Enqueue(ctx, ch, fmt.Sprint("m", i), []byte("x")); err != nil {
					t.Fatal(err)
				}
			}
		}
		for range 10 {
			select {
			case <-all:
			case <-time.After(20 * time.Second):
				t.Fatal("not every message reached a terminal outcome")
			}
		}
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		want := []string{"m0", "m1", "m2", "m3", "m4"}
		if !slices.Equal(sent["A"], want) || !slices.Equal(sent["B"], want) || failures != 4 {
			t.Fatalf("sent %v, %d failures; want each channel in order once after 4 failures", sent, failures)
		}
		s, err := ob.Stats(context.Background())
		if err != nil || s.Pending != 0 || s.Deliveries != 10 || s.Attempts != 14 {
			t.Fatalf("stats = %+v %v", s, err)
		}
	})
}
