package host

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestHealthTransitions(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	rt := th.runtime("im.fake")
	ctx := ctxT(t)
	health := func() HealthState { c, _ := th.Connector("im.fake"); return c.Health }

	steps := []struct {
		name  string
		setup func(f *fakeConnector)
		want  HealthState
	}{
		{"first failure", func(f *fakeConnector) { f.healthStatus = http.StatusInternalServerError }, HealthDegraded},
		{"second failure", nil, HealthDegraded},
		{"third failure", nil, HealthOffline},
		{"fourth failure", nil, HealthOffline},
		{"recovered", func(f *fakeConnector) { f.healthStatus = 0 }, HealthOK},
		{"one failure again", func(f *fakeConnector) { f.healthStatus = http.StatusBadGateway }, HealthDegraded},
		{"401", func(f *fakeConnector) { f.healthStatus = http.StatusUnauthorized }, HealthAuthFailed},
		{"403", func(f *fakeConnector) { f.healthStatus = http.StatusForbidden }, HealthAuthFailed},
		{"ok", func(f *fakeConnector) { f.healthStatus = 0 }, HealthOK},
		{"card id mismatch", func(f *fakeConnector) { f.healthCardID = "im.other" }, HealthIncompatible},
		{"match again", func(f *fakeConnector) { f.healthCardID = "" }, HealthOK},
	}
	for _, s := range steps {
		if s.setup != nil {
			f.set(s.setup)
		}
		rt.checkHealth(ctx)
		if got := health(); got != s.want {
			t.Fatalf("%s: health = %s, want %s", s.name, got, s.want)
		}
	}
	if !th.events.has(EventHealth, func(e Event) bool { return e.Health == HealthIncompatible }) {
		t.Fatal("no incompatible health event")
	}
	e, _ := th.db.GetCatalog(ctx, "im.fake")
	if e.Health != string(HealthOK) {
		t.Fatalf("persisted health = %s", e.Health)
	}
	// The link comes back once compatible again.
	eventually(t, "link online after incompatibility", func() bool {
		c, _ := th.Connector("im.fake")
		return c.Link == LinkOnline
	})
}

func TestHealthIncompatibleDropsLink(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	rt := th.runtime("im.fake")
	f.set(func(f *fakeConnector) { f.healthCardID = "im.other" })
	rt.checkHealth(ctxT(t))
	eventually(t, "link not online", func() bool {
		c, _ := th.Connector("im.fake")
		return c.Link != LinkOnline && c.Health == HealthIncompatible
	})
}

func TestHealthVersionChangeRefetchesCard(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	rt := th.runtime("im.fake")
	f.set(func(f *fakeConnector) {
		f.card.Connector.Version = "1.1.0"
		f.card.Tools = f.card.Tools[:1]
	})
	rt.checkHealth(ctxT(t))
	c, _ := th.Connector("im.fake")
	if c.Health != HealthOK || c.Card.Connector.Version != "1.1.0" || len(c.Card.Tools) != 1 {
		t.Fatalf("after refetch: health %s, version %s, %d tools", c.Health, c.Card.Connector.Version, len(c.Card.Tools))
	}
	if !th.events.has(EventCardRefresh, nil) {
		t.Fatal("no card_refresh event")
	}
	e, _ := th.db.GetCatalog(ctxT(t), "im.fake")
	if !containsBytes(e.Card, `"1.1.0"`) {
		t.Fatal("refetched card not persisted")
	}
}

func TestHealthRefetchOfIncompatibleVersion(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	f.set(func(f *fakeConnector) { f.card.ProtocolVersion = "2.0" })
	th.runtime("im.fake").checkHealth(ctxT(t))
	c, _ := th.Connector("im.fake")
	if c.Health != HealthIncompatible {
		t.Fatalf("health = %s, want incompatible", c.Health)
	}
}

func TestHealthLoopRuns(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	f.set(func(f *fakeConnector) {})
	th := newTestHost(t, "", func(o *Options) { o.HealthInterval = 10 * time.Millisecond })
	th.admitOnline(t, f)
	f.set(func(f *fakeConnector) { f.healthStatus = http.StatusInternalServerError })
	eventually(t, "offline from the periodic probe", func() bool {
		c, _ := th.Connector("im.fake")
		return c.Health == HealthOffline
	})
}

func containsBytes(b []byte, s string) bool { return len(s) > 0 && stringsContains(string(b), s) }

// A 2xx /health is "available" (section 4.3) whatever its body: a body that
// is not a health object is logged, not counted as a failure.
func TestHealth2xxWithoutHealthObject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		warn bool
	}{
		{"plain text", "OK", true},
		{"html", "<html><body>up</body></html>", true},
		{"json string", `"ok"`, true},
		{"json array", `[]`, true},
		{"empty", "", false},
		{"partial object", `{"status":"ok"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeConnector(t, "im.fake", "")
			body := tt.body
			f.set(func(f *fakeConnector) { f.healthBody = &body })
			logs := &syncBuf{}
			th := newTestHost(t, "", func(o *Options) {
				o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			})
			c := th.admitOnline(t, f) // admission probes /health too
			rt := th.runtime(c.CardID)
			for range 3 {
				rt.checkHealth(ctxT(t))
			}
			if got, _ := th.Connector(c.CardID); got.Health != HealthOK {
				t.Fatalf("health = %s (%s), want ok", got.Health, got.LastError)
			}
			if warned := strings.Contains(logs.String(), "not a health object"); warned != tt.warn {
				t.Fatalf("warning logged = %v, want %v: %s", warned, tt.warn, logs.String())
			}
		})
	}
}
