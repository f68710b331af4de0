package connector_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/xconn/xconn/connector"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 7, 24, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 120 * time.Second, true},
		{" 3 ", 3 * time.Second, true},
		{"0", 0, true},
		{"1.25", 1250 * time.Millisecond, true}, // Discord's fractions
		{"Fri, 24 Jul 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Friday, 24-Jul-26 12:01:00 GMT", time.Minute, true}, // RFC 850, still accepted
		{"Fri, 24 Jul 2026 11:00:00 GMT", 0, true},            // in the past
		{"99999999999999999999", connector.MaxRetryAfter, true},
		{"1e300", connector.MaxRetryAfter, true},
		{"", 0, false},
		{"-1", 0, false},
		{"NaN", 0, false},
		{"soon", 0, false},
	} {
		got, ok := connector.ParseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{"Retry-After": {"2"}}, 2 * time.Second, true},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After-Ms": {"x"}, "Retry-After": {"1"}}, time.Second, true},
		{http.Header{}, 0, false},
	} {
		got, ok := connector.RetryAfterHeader(tc.h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("RetryAfterHeader(%v) = %v, %v; want %v, %v", tc.h, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRetryAfterOf(t *testing.T) {
	base := errors.New("429 Too Many Requests")
	wrapped := fmt.Errorf("send: %w", &connector.RateLimitError{RetryAfter: 3 * time.Second, Err: base})
	if d, ok := connector.RetryAfterOf(wrapped); !ok || d != 3*time.Second {
		t.Fatalf("RetryAfterOf = %v, %v", d, ok)
	}
	if !errors.Is(wrapped, base) || !connector.IsTemporary(wrapped) {
		t.Fatal("a wrapped RateLimitError must unwrap to the target's error and be temporary")
	}
	if _, ok := connector.RetryAfterOf(base); ok {
		t.Fatal("a plain error is no rate limit")
	}
	if s := (&connector.RateLimitError{RetryAfter: time.Second}).Error(); s != "rate limited (retry after 1s)" {
		t.Fatalf("Error() = %q", s)
	}
}

// refuser fails its first n calls with a rate limit of wait, then succeeds.
type refuser struct {
	n     int
	wait  time.Duration
	calls []time.Duration // time of each call since start
	start time.Time
}

func (r *refuser) call(context.Context) error {
	r.calls = append(r.calls, time.Since(r.start))
	if len(r.calls) <= r.n {
		return &connector.RateLimitError{RetryAfter: r.wait, Err: errors.New("slow down")}
	}
	return nil
}

func TestRateLimitDo(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rl      connector.RateLimit
		refuse  int
		wait    time.Duration
		timeout time.Duration // of ctx; 0: none
		wantErr bool
		want    []time.Duration
	}{
		{"waited out", connector.RateLimit{}, 1, 2 * time.Second, 0, false, []time.Duration{0, 2 * time.Second}},
		{"zero hint waits the minimum", connector.RateLimit{}, 2, 0, 0, false,
			[]time.Duration{0, connector.DefaultMinRetryWait, 2 * connector.DefaultMinRetryWait}},
		{"too long a hint fails at once", connector.RateLimit{MaxWait: time.Second}, 1, 5 * time.Second, 0, true, []time.Duration{0}},
		{"attempts bound the calls", connector.RateLimit{Attempts: 2}, 5, time.Second, 0, true, []time.Duration{0, time.Second}},
		{"a wait past the deadline is not started", connector.RateLimit{}, 1, 5 * time.Second, 3 * time.Second, true, []time.Duration{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				if tc.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.timeout)
					defer cancel()
				}
				r := &refuser{n: tc.refuse, wait: tc.wait, start: time.Now()}
				err := tc.rl.Do(ctx, r.call)
				if (err != nil) != tc.wantErr {
					t.Fatalf("Do = %v, want error %v", err, tc.wantErr)
				}
				if err != nil {
					if _, ok := connector.RetryAfterOf(err); !ok {
						t.Fatalf("Do's error %v lost the rate limit", err)
					}
				}
				if fmt.Sprint(r.calls) != fmt.Sprint(tc.want) {
					t.Fatalf("calls at %v, want %v", r.calls, tc.want)
				}
			})
		})
	}
}

func TestRateLimitWaitCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		limited := &connector.RateLimitError{RetryAfter: 5 * time.Second}
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- connector.RateLimit{}.Wait(ctx, limited) }()
		time.Sleep(time.Second)
		cancel()
		err := <-done
		if err != limited || time.Since(start) != time.Second {
			t.Fatalf("Wait = %v after %v, want the rate limit after 1s", err, time.Since(start))
		}
		other := errors.New("not a rate limit")
		if err := (connector.RateLimit{}).Wait(context.Background(), other); err != other {
			t.Fatalf("Wait(plain error) = %v", err)
		}
	})
}

// FuzzParseRetryAfter: any header value parses to a wait in [0,
// MaxRetryAfter] or is refused, never a panic.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "1.5", "Wed, 21 Oct 2015 07:28:00 GMT", "-3", "1e999", "0x10", "NaN", "Inf"} {
		f.Add(s)
	}
	now := time.Date(2026, 7, 24, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := connector.ParseRetryAfter(s, now)
		if d < 0 || d > connector.MaxRetryAfter || (!ok && d != 0) {
			t.Fatalf("ParseRetryAfter(%q) = %v, %v", s, d, ok)
		}
	})
}
