// Package health serves the liveness and readiness of an xconn process,
// for load balancers, container runtimes and supervisors:
//
//   - GET /livez answers 200 "ok" whenever the process serves HTTP at all;
//   - GET /readyz answers 200 "ready" only when every named check of a
//     [Registry] passes, and 503 otherwise, with the failing checks'
//     reasons ("standby: lease held by ...", "migrating: ...").
//
// A Registry is created with [New]; checks are added with [Registry.Add]
// (a function run at each probe, such as a store ping) or [Registry.Set]
// (a state the program flips, such as "migrating" until the store is
// open). Its [Registry.Handler] serves both endpoints and can be mounted
// on any mux or served on a listener of its own.
//
// The answers are plain text by default: the first line is "ready" or the
// reasons, joined by "; ", then one line per check ("[+] store" or
// "[-] lease: standby: lease held by ..."). A request that accepts
// application/json gets a [Report] instead. Reasons are shown to
// unauthenticated callers: a check must never put a secret in its error.
//
// Probes are cheap for the caller and bounded for the process: the checks
// of one probe run under [CheckTimeout], and a report is reused for
// [ReuseFor], so a caller probing in a tight loop costs at most one round
// of checks per interval.
package health

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Bounds of a probe.
const (
	// CheckTimeout bounds all the checks of one /readyz probe together; a
	// check still running then fails with "timed out".
	CheckTimeout = 2 * time.Second
	// ReuseFor is how long a report answers further probes before the
	// checks run again.
	ReuseFor = 250 * time.Millisecond
	// MaxReasonBytes bounds one check's reason in a report.
	MaxReasonBytes = 512
)

// Check reports whether one condition of readiness holds: nil when it
// does, else an error whose text says why not (shown to callers of
// /readyz: no secrets). It must return when ctx ends.
type Check func(ctx context.Context) error

// Registry is the set of named readiness checks of one process. The zero
// value is not usable; create one with New. It is safe for concurrent
// use; checks may be added and set while it serves.
type Registry struct {
	mu     sync.Mutex
	checks []namedCheck // in registration order
	probe  sync.Mutex   // one round of checks at a time
	last   Report
	lastAt time.Time
	now    func() time.Time
}

type namedCheck struct {
	name  string
	check Check
}

// New returns a Registry with no checks: ready until one is added.
func New() *Registry {
	return &Registry{now: time.Now}
}

// Add registers check under name; a check already registered under name
// is replaced in place (its position in reports is kept).
func (r *Registry) Add(name string, check Check) {
	if check == nil {
		check = func(context.Context) error { return nil }
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastAt = time.Time{} // the next probe runs the checks
	for i := range r.checks {
		if r.checks[i].name == name {
			r.checks[i].check = check
			return
		}
	}
	r.checks = append(r.checks, namedCheck{name: name, check: check})
}

// Set registers under name a check that returns err (nil: passes) until
// the next Set or Add of that name: for a state the program flips, such as
// Set("store", errors.New("migrating")) before opening the store and
// Set("store", nil) after.
func (r *Registry) Set(name string, err error) {
	r.Add(name, func(context.Context) error { return err })
}

// Remove drops the check registered under name, if any.
func (r *Registry) Remove(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastAt = time.Time{}
	for i := range r.checks {
		if r.checks[i].name == name {
			r.checks = append(r.checks[:i:i], r.checks[i+1:]...)
			return
		}
	}
}

// Report is the outcome of one round of checks.
type Report struct {
	Ready  bool     `json:"ready"`
	Checks []Result `json:"checks"`
}

// Result is one check's outcome; Reason is empty when it passed.
type Result struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
}

// Reason returns "ready", or the failing checks' reasons joined by "; ".
func (rep Report) Reason() string {
	if rep.Ready {
		return "ready"
	}
	var b []string
	for _, c := range rep.Checks {
		if !c.OK {
			b = append(b, c.Reason)
		}
	}
	return strings.Join(b, "; ")
}

// Ready runs the checks (or reuses a report younger than ReuseFor) and
// returns the report. The checks run one after another, in registration
// order, all within CheckTimeout.
func (r *Registry) Ready(ctx context.Context) Report {
	r.probe.Lock()
	defer r.probe.Unlock()
	r.mu.Lock()
	if !r.lastAt.IsZero() && r.now().Sub(r.lastAt) < ReuseFor {
		rep := r.last
		r.mu.Unlock()
		return rep
	}
	checks := append([]namedCheck(nil), r.checks...)
	r.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	rep := Report{Ready: true, Checks: make([]Result, 0, len(checks))}
	for _, c := range checks {
		res := Result{Name: c.name, OK: true}
		if err := runCheck(ctx, c.check); err != nil {
			res.OK, res.Reason = false, reason(c.name, err)
			rep.Ready = false
		}
		rep.Checks = append(rep.Checks, res)
	}
	r.mu.Lock()
	r.last, r.lastAt = rep, r.now()
	r.mu.Unlock()
	return rep
}

// runCheck runs c, turning a panic into an error (a check is the
// program's code, but a probe must never take the process down).
func runCheck(ctx context.Context, c Check) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("check failed: %v", p)
		}
	}()
	err = c(ctx)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		return errors.New("timed out")
	}
	return err
}

// reason is a check error's text on one line, bounded, or name when empty.
func reason(name string, err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if s == "" {
		s = name + ": not ready"
	}
	if len(s) > MaxReasonBytes {
		s = s[:MaxReasonBytes] + "…"
	}
	return s
}

// Handler serves GET /livez and GET /readyz (HEAD too) at the root.
func (r *Registry) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /livez", LiveHandler())
	mux.Handle("GET /readyz", r.ReadyHandler())
	return mux
}

// LiveHandler answers 200 "ok": the process serves HTTP.
func LiveHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if wantsJSON(req) {
			writeJSON(w, http.StatusOK, map[string]bool{"live": true})
			return
		}
		writeText(w, http.StatusOK, "ok\n")
	})
}

// ReadyHandler answers 200 when every check passes and 503 otherwise,
// in plain text or, when the request accepts application/json, as a
// Report.
func (r *Registry) ReadyHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rep := r.Ready(req.Context())
		status := http.StatusOK
		if !rep.Ready {
			status = http.StatusServiceUnavailable
		}
		if wantsJSON(req) {
			writeJSON(w, status, rep)
			return
		}
		var b strings.Builder
		b.WriteString(rep.Reason())
		b.WriteByte('\n')
		for _, c := range rep.Checks {
			if c.OK {
				fmt.Fprintf(&b, "[+] %s\n", c.Name)
			} else {
				fmt.Fprintf(&b, "[-] %s: %s\n", c.Name, c.Reason)
			}
		}
		writeText(w, status, b.String())
	})
}

func wantsJSON(req *http.Request) bool {
	return strings.Contains(req.Header.Get("Accept"), "application/json")
}

func writeText(w http.ResponseWriter, status int, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeText(w, http.StatusInternalServerError, "cannot encode the report\n")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
