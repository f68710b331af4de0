package wecom

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestGuard: the replay window is symmetric; a nonce is a replay only
// within the window; the nonce set never holds more than maxNonces (the
// oldest go first); a refusal kind is logged once per window, and the
// next line counts the ones not logged.
func TestGuard(t *testing.T) {
	var buf bytes.Buffer
	g := newGuard(time.Minute, slog.New(slog.NewTextHandler(&buf, nil)))
	now := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		at   time.Duration
		want bool
	}{{0, true}, {59 * time.Second, true}, {-59 * time.Second, true}, {61 * time.Second, false}, {-61 * time.Second, false}} {
		if got := g.fresh(now.Add(tc.at), now); got != tc.want {
			t.Errorf("fresh(%v) = %v", tc.at, got)
		}
	}
	g.record("n1", now)
	if !g.seen("n1", now.Add(30*time.Second)) || g.seen("n1", now.Add(2*time.Minute)) || g.seen("n2", now) {
		t.Fatal("seen")
	}
	for i := range maxNonces + 10 {
		g.record(fmt.Sprint("k", i), now)
	}
	if len(g.nonces) != maxNonces || g.seen("k0", now) || !g.seen(fmt.Sprint("k", maxNonces+9), now) {
		t.Fatalf("nonces %d", len(g.nonces))
	}

	for range 5 {
		g.refused(refuseSignature, now)
	}
	g.refused(refuseDecrypt, now)
	g.refused(refuseSignature, now.Add(61*time.Second))
	logs := buf.String()
	if n := strings.Count(logs, refuseSignature); n != 2 {
		t.Fatalf("signature logged %d times:\n%s", n, logs)
	}
	if !strings.Contains(logs, "not_logged_since=4") || strings.Count(logs, refuseDecrypt) != 1 {
		t.Fatalf("logs:\n%s", logs)
	}
}
