package host

import (
	"context"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// openStore opens a real SQLite store in dir.
func openStore(t testing.TB, dir string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), "sqlite:"+filepath.Join(dir, "host.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	return db
}

type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) add(ev Event) {
	l.mu.Lock()
	l.events = append(l.events, ev)
	l.mu.Unlock()
}

func (l *eventLog) has(kind EventKind, pred func(Event) bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if e.Kind == kind && (pred == nil || pred(e)) {
			return true
		}
	}
	return false
}

type testHost struct {
	*Host
	db     *store.DB
	dir    string
	events *eventLog
}

// newTestHost starts a host on a fresh (or given) directory; it is closed
// at the end of the test.
func newTestHost(t testing.TB, dir string, mod func(*Options)) *testHost {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	return newTestHostOn(t, openStore(t, dir), dir, mod)
}

// newTestHostOn starts a host on an open store (closed with the host).
func newTestHostOn(t testing.TB, db *store.DB, dir string, mod func(*Options)) *testHost {
	t.Helper()
	ev := &eventLog{}
	opts := Options{Store: db, Delivery: db, Agent: Echo{}, OnEvent: ev.add,
		FilesDir: filepath.Join(dir, "files"), HealthInterval: time.Hour,
		ReconnectMin: 10 * time.Millisecond, ReconnectMax: 50 * time.Millisecond,
		RequestTimeout: 5 * time.Second}
	opts.Outbox.Backoff.Base = 20 * time.Millisecond
	opts.Outbox.Backoff.Max = 100 * time.Millisecond
	opts.Outbox.AttemptTimeout = 2 * time.Second
	if mod != nil {
		mod(&opts)
	}
	h, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	th := &testHost{Host: h, db: db, dir: dir, events: ev}
	t.Cleanup(func() { th.stop(t) })
	return th
}

func (th *testHost) stop(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := th.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	_ = th.db.Close()
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// admitOnline admits f and waits until its data plane is online.
func (th *testHost) admitOnline(t testing.TB, f *fakeConnector) *Connector {
	t.Helper()
	c, err := th.Admit(ctxT(t), f.baseURL(), f.apiKey)
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	eventually(t, "link online", func() bool {
		s, _ := th.Connector(c.CardID)
		return s.Link == LinkOnline
	})
	return c
}

// signinRoom signs userID in with the form flow and returns the channel.
func (th *testHost) signinRoom(t testing.TB, userID, cardID string) store.UserChannel {
	t.Helper()
	ctx := ctxT(t)
	s, err := th.Connect(ctx, userID, cardID, "room", map[string]string{"room": "r1", "access_code": "secret-code-xyz"})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	uc, err := s.Wait(ctx)
	if err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	return uc
}

// cardDefs leaves the built-in channel tools out of a projection.
func cardDefs(defs []FunctionDef) []FunctionDef {
	var out []FunctionDef
	for _, d := range defs {
		if !d.Builtin {
			out = append(out, d)
		}
	}
	return out
}

func code(err error) protocol.Code { return protocol.CodeOf(err, "") }

func stringsContains(s, sub string) bool { return strings.Contains(s, sub) }

func parseURL(s string) (*url.URL, error) { return url.Parse(s) }
