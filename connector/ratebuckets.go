package connector

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// DefaultMaxRateBuckets bounds the keys a RateBuckets remembers.
const DefaultMaxRateBuckets = 4096

// RateBuckets remembers, per key, until when a target asked to wait, so
// that the next call with that key waits before it is made instead of
// being refused: Discord's per-route buckets (X-RateLimit-Remaining 0 with
// X-RateLimit-Reset-After, or a 429's retry_after), Slack's method tiers
// after a 429, a per-chat send limit. RateLimit waits out a refusal;
// RateBuckets keeps the next call from earning one.
//
// Make one with NewRateBuckets and keep it for the connector's life, one
// per target API; it holds no goroutine. At most max keys are kept (a
// key whose wait has passed goes first, then the one free soonest), so
// hostile input cannot grow it. Safe for concurrent use.
type RateBuckets struct {
	mu    sync.Mutex
	max   int
	until map[string]time.Time
}

// NewRateBuckets returns an empty RateBuckets of at most max keys (<= 0:
// DefaultMaxRateBuckets).
func NewRateBuckets(max int) *RateBuckets {
	if max <= 0 {
		max = DefaultMaxRateBuckets
	}
	return &RateBuckets{max: max, until: map[string]time.Time{}}
}

// Hold makes calls with key wait d from now (a later hold already set
// stays). d <= 0 does nothing.
func (b *RateBuckets) Hold(key string, d time.Duration) {
	if d <= 0 {
		return
	}
	now := time.Now()
	t := now.Add(min(d, MaxRetryAfter))
	b.mu.Lock()
	defer b.mu.Unlock()
	if cur, ok := b.until[key]; ok && !cur.Before(t) {
		return
	}
	if _, ok := b.until[key]; !ok && len(b.until) >= b.max {
		b.evict(now)
	}
	b.until[key] = t
}

// HoldFor holds key for the wait err asks for (RetryAfterOf), and reports
// whether err was a rate limit.
func (b *RateBuckets) HoldFor(key string, err error) bool {
	d, ok := RetryAfterOf(err)
	if ok {
		b.Hold(key, max(d, DefaultMinRetryWait))
	}
	return ok
}

// Wait returns when key is free: at once when it is not held, after the
// hold when that is at most maxWait (<= 0: DefaultMaxRetryWait) and ends
// before ctx's deadline. Otherwise it returns a *RateLimitError with the
// wait left (report it retryable), or ctx's error when ctx ends first.
func (b *RateBuckets) Wait(ctx context.Context, key string, maxWait time.Duration) error {
	if maxWait <= 0 {
		maxWait = DefaultMaxRetryWait
	}
	b.mu.Lock()
	t, ok := b.until[key]
	b.mu.Unlock()
	if !ok {
		return nil
	}
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	if dl, has := ctx.Deadline(); d > maxWait || (has && time.Until(dl) < d) {
		return &RateLimitError{RetryAfter: d, Err: fmt.Errorf("rate limit of %q", key)}
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// evict makes room for one key: the passed ones go, else the one free
// soonest. The caller holds b.mu.
func (b *RateBuckets) evict(now time.Time) {
	var first string
	var firstT time.Time
	for k, t := range b.until {
		if !t.After(now) {
			delete(b.until, k)
			continue
		}
		if first == "" || t.Before(firstT) {
			first, firstT = k, t
		}
	}
	if len(b.until) >= b.max && first != "" {
		delete(b.until, first)
	}
}

// len returns the keys held (for tests).
func (b *RateBuckets) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.until)
}
