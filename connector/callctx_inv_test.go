package connector

import (
	"context"
	"errors"
	"testing"
	"time"
)

type ctxKey struct{}

// TestCallCtx checks that a callCtx behaves as context.WithDeadline on its
// parent: deadline, parent cancellation, release, values.
func TestCallCtx(t *testing.T) {
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	defer cancel()

	c := newCallCtx(parent, time.Hour)
	if d, ok := c.Deadline(); !ok || time.Until(d) < 59*time.Minute {
		t.Errorf("Deadline() = %v, %v", d, ok)
	}
	if c.Err() != nil || c.Value(ctxKey{}) != "v" {
		t.Errorf("fresh callCtx: Err %v, Value %v", c.Err(), c.Value(ctxKey{}))
	}
	child, stop := context.WithCancel(c)
	defer stop()
	c.release()
	<-child.Done()
	if !errors.Is(c.Err(), context.Canceled) || c.Value(ctxKey{}) != "v" {
		t.Errorf("released callCtx: Err %v, Value %v", c.Err(), c.Value(ctxKey{}))
	}

	// Released before Done was ever asked for.
	c = newCallCtx(parent, time.Hour)
	c.release()
	if !errors.Is(c.Err(), context.Canceled) {
		t.Errorf("released lazy callCtx: Err %v", c.Err())
	}
	<-c.Done()

	// The deadline, with and without a Done channel.
	c = newCallCtx(parent, time.Millisecond)
	<-c.Done()
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Errorf("expired callCtx: Err %v", c.Err())
	}
	c = newCallCtx(parent, -time.Second)
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Errorf("expired lazy callCtx: Err %v", c.Err())
	}

	// The parent ending ends it.
	c = newCallCtx(parent, time.Hour)
	done := c.Done()
	cancel()
	<-done
	if !errors.Is(c.Err(), context.Canceled) {
		t.Errorf("callCtx of a canceled parent: Err %v", c.Err())
	}
	if !errors.Is(newCallCtx(parent, time.Hour).Err(), context.Canceled) {
		t.Error("lazy callCtx of a canceled parent is not canceled")
	}
}
