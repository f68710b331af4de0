// Package timerpool reuses stopped timers on hot paths that arm one timer
// per request (a tool call's timeout, a request's deadline).
package timerpool

import (
	"sync"
	"time"
)

// Pool keeps stopped timers. The zero value is ready; it is safe for
// concurrent use and must not be copied after first use.
type Pool struct {
	p sync.Pool
}

// Get returns a timer, reused or new, set to fire after d.
func (p *Pool) Get(d time.Duration) *time.Timer {
	if t, ok := p.p.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

// Put stops t and keeps it for Get. Since Go 1.23 a stopped (or reset)
// timer delivers no stale value, so a reused timer never fires early.
// t must not be used after Put.
func (p *Pool) Put(t *time.Timer) {
	t.Stop()
	p.p.Put(t)
}
