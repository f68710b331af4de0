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

func TestRateBuckets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := connector.NewRateBuckets(0)
		ctx := context.Background()
		start := time.Now()
		if err := b.Wait(ctx, "POST /channels/1/messages", 0); err != nil || time.Since(start) != 0 {
			t.Fatalf("a free key waited: %v", err)
		}
		b.Hold("PATCH /channels/1/messages", 2*time.Second)
		b.Hold("PATCH /channels/1/messages", time.Second) // a shorter hold does not shorten it
		if err := b.Wait(ctx, "PATCH /channels/1/messages", 0); err != nil || time.Since(start) != 2*time.Second {
			t.Fatalf("Wait = %v after %v, want nil after 2s", err, time.Since(start))
		}
		if err := b.Wait(ctx, "PATCH /channels/1/messages", 0); err != nil || time.Since(start) != 2*time.Second {
			t.Fatal("a passed hold still waits")
		}
		// Longer than maxWait: a rate limit with the wait left, at once.
		b.Hold("route", time.Minute)
		err := b.Wait(ctx, "route", 10*time.Second)
		if d, ok := connector.RetryAfterOf(err); !ok || d != time.Minute || time.Since(start) != 2*time.Second {
			t.Fatalf("Wait = %v (%v)", err, d)
		}
		// A 429 turned into a hold; ctx ends the wait.
		if !b.HoldFor("other", &connector.RateLimitError{RetryAfter: 5 * time.Second}) || b.HoldFor("x", errors.New("plain")) {
			t.Fatal("HoldFor misread the errors")
		}
		cctx, cancel := context.WithTimeout(ctx, time.Hour)
		go func() { time.Sleep(time.Second); cancel() }()
		if err := b.Wait(cctx, "other", 0); !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait = %v, want cancelled", err)
		}
	})
}

func TestRateBucketsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := connector.NewRateBuckets(3)
		for i := range 10 {
			b.Hold(fmt.Sprintf("route-%d", i), time.Duration(i+1)*time.Second)
		}
		if n := b.Held(); n != 3 {
			t.Fatalf("%d keys held, want 3", n)
		}
		// The keys free soonest went first: the latest are kept.
		start := time.Now()
		if err := b.Wait(context.Background(), "route-9", time.Minute); err != nil || time.Since(start) != 10*time.Second {
			t.Fatalf("route-9: %v after %v", err, time.Since(start))
		}
	})
}

// A client of a target with per-route buckets (Discord) holds a route when
// its answer says the bucket is empty, and waits on it before the next call.
func ExampleRateBuckets() {
	buckets := connector.NewRateBuckets(0)
	route := "PATCH /channels/{id}/messages/{id}"
	// An answer: the bucket is spent for 0.25 s.
	h := http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset-After": {"0.25"}}
	if h.Get("X-RateLimit-Remaining") == "0" {
		d, _ := connector.ParseRetryAfter(h.Get("X-RateLimit-Reset-After"), time.Now())
		buckets.Hold(route, d)
	}
	start := time.Now()
	err := buckets.Wait(context.Background(), route, 10*time.Second) // before the next edit
	fmt.Println(err, time.Since(start) >= 250*time.Millisecond)
	// Output: <nil> true
}
