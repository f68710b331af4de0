package connector

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Defaults of [RateLimit].
const (
	// DefaultMaxRetryWait is the longest rate-limit hint a call waits
	// out; a longer one is returned at once, for the caller to report the
	// failure retryable (xAgent redelivers the message later).
	DefaultMaxRetryWait = 10 * time.Second
	// DefaultRateLimitAttempts bounds the calls of one [RateLimit.Do].
	DefaultRateLimitAttempts = 3
	// DefaultMinRetryWait is the wait for a hint of zero (a 429 without
	// Retry-After) or shorter than it.
	DefaultMinRetryWait = 100 * time.Millisecond
	// MaxRetryAfter caps a parsed hint (one day): a huge value would
	// overflow into a negative wait, and a loop would then call again at
	// once.
	MaxRetryAfter = 24 * time.Hour
)

// RateLimitError is a target's "slow down": the client of a target API
// returns it (itself or wrapped) when the target refused a call for its
// rate limits (HTTP 429 with Retry-After, Telegram's flood control and its
// parameters.retry_after, Feishu's 99991400 and x-ogw-ratelimit-reset,
// Slack's ratelimited, Discord's per-route buckets). RetryAfter is how long
// the target asked to wait (0: it did not say); Err is the target's own
// error, secret-free.
//
// The SDK understands it by type, never by text: [RateLimit.Do] waits it
// out and calls again, [EditStream] pauses a stream's edits until it
// passes, and [IsTemporary] reports it as worth a retry, so a
// MessageHandler returning it rejects the message retryable.
type RateLimitError struct {
	RetryAfter time.Duration
	Err        error
}

// Error says what was refused and for how long.
func (e *RateLimitError) Error() string {
	msg := "rate limited"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %v)", e.RetryAfter)
	}
	return msg
}

// Unwrap returns the target's error.
func (e *RateLimitError) Unwrap() error { return e.Err }

// RetryAfterOf returns the wait that err asks for: the RetryAfter of the
// first *RateLimitError in its chain, and whether there is one.
func RetryAfterOf(err error) (time.Duration, bool) {
	var rl *RateLimitError
	if !errors.As(err, &rl) {
		return 0, false
	}
	return max(rl.RetryAfter, 0), true
}

// ParseRetryAfter reads a Retry-After value as targets send it: a number
// of seconds ("120", and fractions such as Discord's "1.25"), or an
// HTTP-date (RFC 9110 section 10.2.3, "Wed, 21 Oct 2015 07:28:00 GMT")
// taken relative to now. A date in the past is 0; a value above
// MaxRetryAfter is MaxRetryAfter; anything else (empty, negative, not a
// number or a date) reports false.
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(value, 64); err == nil {
		if secs < 0 || math.IsNaN(secs) {
			return 0, false
		}
		return capRetry(secs * float64(time.Second)), true
	}
	t, err := http.ParseTime(value)
	if err != nil {
		return 0, false
	}
	return capRetry(float64(t.Sub(now))), true
}

// RetryAfterHeader reads the wait of an HTTP answer: Retry-After-Ms (a
// number of milliseconds, as some APIs add for precision) when present and
// valid, else Retry-After (seconds or an HTTP-date, see ParseRetryAfter).
func RetryAfterHeader(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return capRetry(ms * float64(time.Millisecond)), true
		}
	}
	return ParseRetryAfter(h.Get("Retry-After"), now)
}

// capRetry turns a float of nanoseconds into a duration in [0, MaxRetryAfter].
func capRetry(ns float64) time.Duration {
	switch {
	case ns <= 0:
		return 0
	case ns >= float64(MaxRetryAfter):
		return MaxRetryAfter
	}
	return time.Duration(ns)
}

// RateLimit is how much of a target's rate limiting one call waits out.
// The zero value waits hints of at most DefaultMaxRetryWait, makes at most
// DefaultRateLimitAttempts calls and waits at least DefaultMinRetryWait. A
// RateLimit is a value: copy it freely; its methods are safe for
// concurrent use.
type RateLimit struct {
	// MaxWait is the longest hint waited out (default
	// DefaultMaxRetryWait); a call refused for longer fails at once with
	// its *RateLimitError, which the caller reports retryable.
	MaxWait time.Duration
	// Attempts bounds the calls of one Do (default
	// DefaultRateLimitAttempts).
	Attempts int
	// MinWait is the wait for a shorter hint, or none (default
	// DefaultMinRetryWait).
	MinWait time.Duration
}

// Do calls call and, while it fails with a *RateLimitError (see
// RetryAfterOf) whose wait is at most MaxWait and ends before ctx's
// deadline, waits it out and calls again, Attempts calls at most. It
// returns call's last error (nil on success), unchanged: a hint that is too
// long, the last attempt's refusal, or the refusal a cancelled ctx
// interrupted the wait of.
func (r RateLimit) Do(ctx context.Context, call func(ctx context.Context) error) error {
	attempts := r.Attempts
	if attempts <= 0 {
		attempts = DefaultRateLimitAttempts
	}
	for n := 1; ; n++ {
		err := call(ctx)
		if err == nil || n >= attempts {
			return err
		}
		if r.Wait(ctx, err) != nil {
			return err
		}
	}
}

// Wait waits out err's rate-limit hint and returns nil, meaning "call
// again", when err carries one of at most MaxWait that ends before ctx's
// deadline. Otherwise it returns at once: err itself when it is no rate
// limit or asks for too long, and err too when ctx ends during the wait
// (check ctx.Err to tell).
func (r RateLimit) Wait(ctx context.Context, err error) error {
	d, ok := RetryAfterOf(err)
	if !ok {
		return err
	}
	maxWait := r.MaxWait
	if maxWait <= 0 {
		maxWait = DefaultMaxRetryWait
	}
	if d > maxWait {
		return err
	}
	minWait := r.MinWait
	if minWait <= 0 {
		minWait = DefaultMinRetryWait
	}
	d = max(d, minWait)
	if dl, has := ctx.Deadline(); has && time.Until(dl) < d {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return err
	case <-t.C:
		return nil
	}
}
