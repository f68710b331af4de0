package connector_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/xconn/xconn/connector"
)

// consumer is a fake shared target consumer with a goroutine.
type consumer struct {
	starts, stops atomic.Int32
}

func (c *consumer) start(ctx context.Context, key string) (func(), error) {
	if key == "bad" {
		return nil, errors.New("cannot connect")
	}
	c.starts.Add(1)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() { <-quit; close(done) }()
	return func() { close(quit); <-done; c.stops.Add(1) }, nil
}

func TestSharedConsumers(t *testing.T) {
	var c consumer
	sc := connector.NewSharedConsumers(c.start, 2)
	ctx := context.Background()
	for range 3 {
		if err := sc.Acquire(ctx, "bot-1"); err != nil {
			t.Fatal(err)
		}
	}
	if c.starts.Load() != 1 || sc.Refs("bot-1") != 3 {
		t.Fatalf("starts %d refs %d", c.starts.Load(), sc.Refs("bot-1"))
	}
	sc.Release("bot-1")
	sc.Release("bot-1")
	if c.stops.Load() != 0 {
		t.Fatal("stopped before the last release")
	}
	sc.Release("bot-1")
	if c.stops.Load() != 1 || sc.Len() != 0 {
		t.Fatalf("stops %d len %d", c.stops.Load(), sc.Len())
	}
	sc.Release("bot-1") // unknown key: no effect
	if err := sc.Acquire(ctx, "bad"); err == nil || sc.Refs("bad") != 0 {
		t.Fatalf("failed start kept a reference: %v", err)
	}
	_ = sc.Acquire(ctx, "a")
	_ = sc.Acquire(ctx, "b")
	if err := sc.Acquire(ctx, "c"); !errors.Is(err, connector.ErrTooManyConsumers) {
		t.Fatalf("bound: %v", err)
	}
	sc.Close()
	if c.stops.Load() != 3 {
		t.Fatalf("Close stopped %d", c.stops.Load())
	}
	if err := sc.Acquire(ctx, "a"); !errors.Is(err, connector.ErrConsumersClosed) {
		t.Fatalf("after close: %v", err)
	}
}

func TestSharedConsumersConcurrent(t *testing.T) {
	var c consumer
	sc := connector.NewSharedConsumers(c.start, 0)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			key := []string{"x", "y"}[i%2]
			if err := sc.Acquire(context.Background(), key); err != nil {
				t.Error(err)
				return
			}
			sc.Release(key)
		})
	}
	wg.Wait()
	if sc.Len() != 0 || c.starts.Load() != c.stops.Load() {
		t.Fatalf("len %d starts %d stops %d", sc.Len(), c.starts.Load(), c.stops.Load())
	}
}
