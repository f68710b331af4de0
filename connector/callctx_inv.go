package connector

import (
	"context"
	"sync"
	"time"
)

// callCtx is the context a tool handler gets: it ends at the call's
// deadline, when the session ends, or when the call is over (release), as
// context.WithDeadline(sess.ctx, deadline) would. What such a context costs
// on every call (a cancelCtx registered with the session's context under
// its lock, and a timer) is paid only when the handler asks for Done: most
// quick handlers never do.
type callCtx struct {
	parent   context.Context
	deadline time.Time

	mu       sync.Mutex
	inner    context.Context // built by the first Done; nil until then
	cancel   context.CancelFunc
	released bool
}

func newCallCtx(parent context.Context, timeout time.Duration) *callCtx {
	return &callCtx{parent: parent, deadline: time.Now().Add(timeout)}
}

// Deadline returns the earlier of the call's and the parent's deadlines.
func (c *callCtx) Deadline() (time.Time, bool) {
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Done builds the underlying context on first use.
func (c *callCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inner == nil {
		c.inner, c.cancel = context.WithDeadline(c.parent, c.deadline)
		if c.released {
			c.cancel()
		}
	}
	return c.inner.Done()
}

// Err reports why the context ended, as the underlying context would.
func (c *callCtx) Err() error {
	c.mu.Lock()
	inner, released := c.inner, c.released
	c.mu.Unlock()
	switch {
	case inner != nil:
		return inner.Err()
	case c.parent.Err() != nil:
		return c.parent.Err()
	case !time.Now().Before(c.deadline):
		return context.DeadlineExceeded
	case released:
		return context.Canceled
	}
	return nil
}

// Value looks key up in the underlying context once built (so that
// contexts derived from this one attach to it directly), else in the
// parent.
func (c *callCtx) Value(key any) any {
	c.mu.Lock()
	inner := c.inner
	c.mu.Unlock()
	if inner != nil {
		return inner.Value(key)
	}
	return c.parent.Value(key)
}

// release ends the context: the call is over.
func (c *callCtx) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.released = true
	if c.cancel != nil {
		c.cancel()
	}
}
