package wecom

import (
	"log/slog"
	"sync"
	"time"
)

// guard keeps the callbacks' replay defences and the log of refusals:
// the nonces seen within the replay window (bounded by maxNonces, the
// oldest dropped first), and when each kind of refusal was last logged,
// so that a flood of forged callbacks writes one line per kind per
// window, with the count of those not logged.
type guard struct {
	window time.Duration
	log    *slog.Logger

	mu      sync.Mutex
	nonces  map[string]time.Time
	order   []string // nonces in the order seen (a ring through head)
	head    int
	logged  map[string]time.Time
	dropped map[string]int
}

// maxNonces bounds the remembered nonces (a nonce is up to a few dozen
// bytes: about 1 MB in all).
const maxNonces = 16384

func newGuard(window time.Duration, log *slog.Logger) *guard {
	return &guard{window: window, log: log, nonces: map[string]time.Time{}, logged: map[string]time.Time{}, dropped: map[string]int{}}
}

// fresh reports whether timestamp t lies within the window around now.
func (g *guard) fresh(t, now time.Time) bool {
	d := now.Sub(t)
	return d <= g.window && d >= -g.window
}

// seen reports whether nonce (scoped by the application key) was
// recorded within the window.
func (g *guard) seen(nonce string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	t, ok := g.nonces[nonce]
	return ok && now.Sub(t) <= g.window
}

// record remembers nonce as used (after its callback was handled).
func (g *guard) record(nonce string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.nonces[nonce]; ok {
		g.nonces[nonce] = now
		return
	}
	if len(g.order) < maxNonces {
		g.order = append(g.order, nonce)
	} else {
		delete(g.nonces, g.order[g.head])
		g.order[g.head] = nonce
		g.head = (g.head + 1) % maxNonces
	}
	g.nonces[nonce] = now
}

// refused logs a refused callback of kind, once per kind per window; the
// attrs must be secret-free.
func (g *guard) refused(kind string, now time.Time, attrs ...any) {
	g.mu.Lock()
	last, ok := g.logged[kind]
	if ok && now.Sub(last) < g.window {
		g.dropped[kind]++
		g.mu.Unlock()
		return
	}
	n := g.dropped[kind]
	g.logged[kind], g.dropped[kind] = now, 0
	g.mu.Unlock()
	args := append([]any{"kind", kind, "not_logged_since", n, "next_log_after", g.window.String()}, attrs...)
	g.log.Warn("wecom: forged or replayed callback refused", args...)
}
