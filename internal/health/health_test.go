package health

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// get probes path on a real loopback server serving r.Handler().
func get(t *testing.T, srv *httptest.Server, path string, accept string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("%s: Cache-Control %q, want no-store", path, cc)
	}
	return resp.StatusCode, string(b)
}

func TestReadiness(t *testing.T) {
	errStandby := errors.New("standby: lease held by host-a/42/x1")
	tests := []struct {
		name       string
		setup      func(r *Registry)
		wantStatus int
		wantFirst  string   // first line of the plain-text answer
		wantLines  []string // further lines that must appear
	}{
		{name: "no checks", setup: func(*Registry) {}, wantStatus: 200, wantFirst: "ready"},
		{name: "all pass", setup: func(r *Registry) {
			r.Set("store", nil)
			r.Add("migrations", func(context.Context) error { return nil })
		}, wantStatus: 200, wantFirst: "ready", wantLines: []string{"[+] store", "[+] migrations"}},
		{name: "standby", setup: func(r *Registry) {
			r.Set("store", nil)
			r.Set("lease", errStandby)
		}, wantStatus: 503, wantFirst: errStandby.Error(), wantLines: []string{"[+] store", "[-] lease: " + errStandby.Error()}},
		{name: "migrating", setup: func(r *Registry) {
			r.Set("store", errors.New("migrating"))
		}, wantStatus: 503, wantFirst: "migrating"},
		{name: "two failing, in order", setup: func(r *Registry) {
			r.Set("store", errors.New("store: unreachable"))
			r.Set("lease", errors.New("standby: lease held by b"))
		}, wantStatus: 503, wantFirst: "store: unreachable; standby: lease held by b"},
		{name: "set back to nil", setup: func(r *Registry) {
			r.Set("store", errors.New("migrating"))
			r.Set("store", nil)
		}, wantStatus: 200, wantFirst: "ready"},
		{name: "removed", setup: func(r *Registry) {
			r.Set("lease", errors.New("standby"))
			r.Remove("lease")
		}, wantStatus: 200, wantFirst: "ready"},
		{name: "multi-line reason on one line", setup: func(r *Registry) {
			r.Set("x", errors.New("a\nb\tc"))
		}, wantStatus: 503, wantFirst: "a b c"},
		{name: "empty reason names the check", setup: func(r *Registry) {
			r.Set("x", errors.New(""))
		}, wantStatus: 503, wantFirst: "x: not ready"},
		{name: "panicking check fails", setup: func(r *Registry) {
			r.Add("boom", func(context.Context) error { panic("bad") })
		}, wantStatus: 503, wantFirst: "check failed: bad"},
		{name: "slow check times out", setup: func(r *Registry) {
			r.Add("slow", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
		}, wantStatus: 503, wantFirst: "timed out"},
		{name: "long reason bounded", setup: func(r *Registry) {
			r.Set("x", errors.New(strings.Repeat("y", 2*MaxReasonBytes)))
		}, wantStatus: 503, wantFirst: strings.Repeat("y", MaxReasonBytes) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New()
			tt.setup(r)
			srv := httptest.NewServer(r.Handler())
			defer srv.Close()
			status, body := get(t, srv, "/readyz", "")
			if status != tt.wantStatus {
				t.Errorf("status %d, want %d\n%s", status, tt.wantStatus, body)
			}
			if first, _, _ := strings.Cut(body, "\n"); first != tt.wantFirst {
				t.Errorf("first line %q, want %q", first, tt.wantFirst)
			}
			for _, l := range tt.wantLines {
				if !strings.Contains(body, "\n"+l+"\n") {
					t.Errorf("no line %q in\n%s", l, body)
				}
			}
			// Liveness does not depend on readiness.
			if status, body := get(t, srv, "/livez", ""); status != 200 || body != "ok\n" {
				t.Errorf("/livez: %d %q", status, body)
			}
		})
	}
}

func TestStandbyJSON(t *testing.T) {
	r := New()
	r.Set("store", nil)
	r.Set("lease", errors.New("standby: lease held by host-a/42/x1"))
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	status, body := get(t, srv, "/readyz", "application/json")
	if status != http.StatusServiceUnavailable {
		t.Fatalf("status %d", status)
	}
	var rep Report
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	want := Report{Ready: false, Checks: []Result{{Name: "store", OK: true}, {Name: "lease", Reason: "standby: lease held by host-a/42/x1"}}}
	if rep.Ready != want.Ready || len(rep.Checks) != 2 || rep.Checks[0] != want.Checks[0] || rep.Checks[1] != want.Checks[1] {
		t.Fatalf("report %+v, want %+v", rep, want)
	}
	if status, body := get(t, srv, "/livez", "application/json"); status != 200 || strings.TrimSpace(body) != `{"live":true}` {
		t.Fatalf("/livez: %d %s", status, body)
	}
}

func TestMethodsAndPaths(t *testing.T) {
	srv := httptest.NewServer(New().Handler())
	defer srv.Close()
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{http.MethodHead, "/readyz", 200},
		{http.MethodHead, "/livez", 200},
		{http.MethodPost, "/readyz", 405},
		{http.MethodGet, "/nope", 404},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), tc.method, srv.URL+tc.path, nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
}

// TestReuse checks that probes within ReuseFor share one round of checks
// and that a later probe, or a change of the checks, runs them again.
func TestReuse(t *testing.T) {
	r := New()
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	calls := 0
	r.Add("count", func(context.Context) error { calls++; return nil })
	ctx := t.Context()
	r.Ready(ctx)
	r.Ready(ctx)
	if calls != 1 {
		t.Fatalf("%d rounds within ReuseFor, want 1", calls)
	}
	now = now.Add(ReuseFor)
	r.Ready(ctx)
	if calls != 2 {
		t.Fatalf("%d rounds after ReuseFor, want 2", calls)
	}
	r.Set("lease", errors.New("standby"))
	if rep := r.Ready(ctx); rep.Ready || calls != 3 {
		t.Fatalf("after Set: ready=%v rounds=%d, want false, 3", rep.Ready, calls)
	}
}
