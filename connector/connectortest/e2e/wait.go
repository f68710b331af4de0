package e2e

import (
	"context"
	"testing"
	"time"
)

// Wait bounds every wait of the kit (a reply to appear, a host to
// reconnect, a connector to stop). Waits end as soon as their condition
// holds, so Wait only matters when something is broken; it is generous
// because test machines are often loaded.
const Wait = 45 * time.Second

// PollInterval is how often [Eventually] looks at its condition.
const PollInterval = 10 * time.Millisecond

// Eventually polls cond every PollInterval until it reports true, and
// fails tb (Fatalf, naming what) when it has not within Wait.
func Eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	waitFor(tb, cond, func() string { return what })
}

// waitFor is Eventually with a description made when it fails.
func waitFor(tb testing.TB, cond func() bool, what func() string) {
	tb.Helper()
	deadline := time.Now().Add(Wait)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("not within %v: %s", Wait, what())
		}
		time.Sleep(PollInterval)
	}
}

// Await calls wait with a context that ends after Wait (a fake's own
// blocking wait, say) and returns its value; an error fails tb (Fatalf),
// naming what and showing the value wait returned with it.
func Await[T any](tb testing.TB, what string, wait func(ctx context.Context) (T, error)) T {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	v, err := wait(ctx)
	if err != nil {
		tb.Fatalf("not within %v: %s (%v); got %+v", Wait, what, err, v)
	}
	return v
}
