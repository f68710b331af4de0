package xagent_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/conformance/xagent"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testKey = "xagent-check-key-0123456789"

// startHost starts xconn's own host with the echo agent on a fresh store.
// The run is on loopback, so the host may download from private addresses
// (the other origin of M4 is the loopback alias of the Base URL's host).
func startHost(t *testing.T, mod ...func(*host.Options)) *host.Host {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(context.Background(), "sqlite:"+filepath.Join(dir, "host.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	opts := host.Options{Store: db, Delivery: db, Agent: host.Echo{}, FilesDir: filepath.Join(dir, "files"),
		HealthInterval: time.Hour, ReconnectMin: 10 * time.Millisecond, ReconnectMax: 100 * time.Millisecond, RequestTimeout: 10 * time.Second,
		AllowPrivateDownloads: true}
	opts.Outbox.Backoff.Base = 20 * time.Millisecond
	opts.Outbox.Backoff.Max = 200 * time.Millisecond
	for _, m := range mod {
		m(&opts)
	}
	h, err := host.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Close(ctx)
		_ = db.Close()
	})
	return h
}

// run serves a scripted Connector at base (the xAgent under test reaches
// it through front, which may be a proxy), lets drive sign the host in,
// waits for the script, then lets extra act, and returns the report.
func runScript(t *testing.T, srv *xagent.Server, h *host.Host, url string, extra func(ctx context.Context)) *conformance.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := h.Admit(ctx, url, testKey)
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	s, err := h.Connect(ctx, "ann", c.CardID, xagent.FormFlow, map[string]string{"code": "1234"})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	if _, err := s.Wait(ctx); err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	if err := srv.Wait(ctx); err != nil {
		t.Fatalf("script: %v", err)
	}
	if extra != nil {
		extra(ctx)
	}
	return srv.Report()
}

func newServer(t *testing.T) (*xagent.Server, string) {
	t.Helper()
	srv, err := xagent.NewServer(xagent.Options{APIKey: testKey, Timeout: 20 * time.Second, Quiet: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	return srv, hs.URL
}

// TestOwnHostPasses: xconn's host with the echo agent passes every
// requirement, the optional ones exercised through its API: a QR sign-in,
// a canceled sign-in, a tool call and a sign-out.
func TestOwnHostPasses(t *testing.T) {
	srv, url := newServer(t)
	h := startHost(t)
	rep := runScript(t, srv, h, url, func(ctx context.Context) {
		s, err := h.Connect(ctx, "bob", xagent.CardID, xagent.QRFlow, nil)
		if err != nil {
			t.Fatalf("QR Connect: %v", err)
		}
		uc, err := s.Wait(ctx)
		if err != nil {
			t.Fatalf("QR sign-in: %v", err)
		}
		c, err := h.Connect(ctx, "cid", xagent.CardID, xagent.QRFlow, nil)
		if err != nil {
			t.Fatalf("second QR Connect: %v", err)
		}
		if err := c.Cancel(ctx); err != nil {
			t.Errorf("Cancel: %v", err)
		}
		if _, err := h.Invoke(ctx, "bob", "", xagent.ToolID, []byte(`{"connector_channel_id":"cch_not_this_one","text":"hi"}`), "call_1"); err != nil {
			t.Errorf("Invoke: %v", err)
		}
		if err := h.Logout(ctx, uc.ID); err != nil {
			t.Errorf("Logout: %v", err)
		}
	})
	var b bytes.Buffer
	_ = rep.WriteText(&b)
	if f := rep.Failed(); len(f) > 0 {
		t.Fatalf("failed %v\n%s", f, b.String())
	}
	for _, res := range rep.Results {
		if res.Status != conformance.Pass {
			t.Errorf("%s: %s %s", res.ID, res.Status, res.Reason)
		}
	}
	if t.Failed() {
		t.Log(b.String())
	}
}

// TestBrokenHosts: xconn's host behind a proxy that breaks one rule fails
// exactly the requirement of that rule.
func TestBrokenHosts(t *testing.T) {
	tests := []struct {
		brk  breakage
		want []string
	}{
		{deltasFromZero, []string{"xagent.deltas"}},
		{noReplyTo, []string{"xagent.ack-every-message"}},
		{secondReply, []string{"xagent.duplicate"}},
		{noBearer, []string{"xagent.ws-bearer"}},
		{wrongSubprotocol, []string{"xagent.ws-subprotocol"}},
		{resendAccepted, []string{"xagent.no-resend-accepted"}},
		{v1URLIgnored, []string{"xagent.imv1-file-url"}},
		{otherOriginRefused, []string{"xagent.download-other-origin"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.brk), func(t *testing.T) {
			srv, url := newServer(t)
			proxy := newManglingProxy(t, url, tt.brk)
			h := startHost(t, func(o *host.Options) {
				if tt.brk == otherOriginRefused {
					o.DownloadOrigins = []string{proxy.srv.URL}
				}
			})
			rep := runScript(t, srv, h, proxy.srv.URL, nil)
			if got := rep.Failed(); !slices.Equal(got, tt.want) {
				var b bytes.Buffer
				_ = rep.WriteText(&b)
				t.Errorf("failed %v, want %v\n%s", got, tt.want, b.String())
			}
			for _, id := range tt.want {
				if res, _ := rep.Result(id); res.Expected == "" || res.Actual == "" {
					t.Errorf("%s: failure without expected/actual: %+v", id, res)
				}
			}
			if rep.OK() {
				t.Error("OK() for a broken host")
			}
		})
	}
}
