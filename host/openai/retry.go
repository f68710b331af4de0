package openai

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Defaults of [RetryPolicy].
const (
	// DefaultMaxAttempts is the number of tries of one model request.
	DefaultMaxAttempts = 4
	// DefaultMinBackoff is the first pause between two tries; it doubles.
	DefaultMinBackoff = 500 * time.Millisecond
	// DefaultMaxBackoff caps the pause between two tries.
	DefaultMaxBackoff = 8 * time.Second
	// DefaultMaxRetryAfter is the longest Retry-After the agent waits for;
	// a provider asking for more gets no retry (the user gets the apology).
	DefaultMaxRetryAfter = 30 * time.Second
)

// RetryPolicy bounds the retries of one model request: 429 (after its
// Retry-After), 408, 409, 5xx, network errors and timeouts are retried;
// 400, 401, 403, 404 and 422 are not, nor a stream that broke after its
// text reached the user. Zero fields take the defaults.
type RetryPolicy struct {
	MaxAttempts   int           // default DefaultMaxAttempts; 1 disables retries
	MinBackoff    time.Duration // default DefaultMinBackoff
	MaxBackoff    time.Duration // default DefaultMaxBackoff
	MaxRetryAfter time.Duration // default DefaultMaxRetryAfter
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.MinBackoff <= 0 {
		p.MinBackoff = DefaultMinBackoff
	}
	if p.MaxBackoff < p.MinBackoff {
		p.MaxBackoff = max(DefaultMaxBackoff, p.MinBackoff)
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = DefaultMaxRetryAfter
	}
	return p
}

// delay returns the pause before try number attempt+1 after err, and
// whether to try again at all.
func (p RetryPolicy) delay(attempt int, err error) (time.Duration, bool) {
	if attempt >= p.MaxAttempts || !retryable(err) {
		return 0, false
	}
	d := p.MinBackoff << min(attempt-1, 20)
	if d > p.MaxBackoff || d <= 0 {
		d = p.MaxBackoff
	}
	d = d/2 + rand.N(d/2+1) // jitter: half fixed, half random
	var ae *APIError
	if errors.As(err, &ae) && ae.RetryAfter > 0 {
		if ae.RetryAfter > p.MaxRetryAfter {
			return 0, false
		}
		d = ae.RetryAfter
	}
	return d, true
}

// do runs f until it succeeds, fails for good, or the tries are spent;
// onRetry is told about each pause. The last error is returned.
func (p RetryPolicy) do(ctx context.Context, f func() error, onRetry func(attempt int, wait time.Duration, err error)) error {
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil || ctx.Err() != nil {
			return err
		}
		wait, ok := p.delay(attempt, err)
		if !ok {
			return err
		}
		if onRetry != nil {
			onRetry(attempt, wait, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}
