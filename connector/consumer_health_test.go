package connector_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// healthBinding is the binding of the consumer-health tests: a token.
type healthBinding struct {
	Token string `json:"token" secret:"true"`
}

// healthTarget scripts the consumer of the tests: every Run call takes
// the next step, reports how it went, and returns what the step says.
type healthTarget struct {
	mu    sync.Mutex
	runs  int
	steps chan func(ctx context.Context, m *connector.Members[healthBinding]) error
}

func (h *healthTarget) runCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runs
}

const healthCard = "im.health"

// startHealth starts, inside a synctest bubble, a connector whose store
// holds the signed-in channels ids (token tok each), restored at Start:
// no socket is needed to get a consumer running.
func startHealth(t *testing.T, dir string, h *healthTarget, ids ...string) (*connector.Server, *store.DB) {
	return startHealthWith(t, dir, h, nil, ids...)
}

// startHealthWith is startHealth with mod adjusting the Options.
func startHealthWith(t *testing.T, dir string, h *healthTarget, mod func(*connector.Options), ids ...string) (*connector.Server, *store.DB) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "x.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	now := time.Now()
	const cid = "conn_health_instance_0000000"
	if err := db.PutInstance(ctx, store.Instance{CardID: healthCard, ConnectorID: cid, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(healthBinding{Token: "tok-health-1"})
	for _, id := range ids {
		if err := db.PutChannel(ctx, store.Channel{CardID: healthCard, ChannelID: id, ConnectorID: cid, Status: string(protocol.StatusConnected),
			Binding: connector.StoredBinding(data, "tok-health-1"), CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	opts := connector.Options{Store: db, DataDir: dir, LeaseGrace: 24 * time.Hour,
		Identity: connector.Identity{CardID: healthCard, Name: "Health", Provider: "health", TargetType: protocol.TargetIM}}
	if mod != nil {
		mod(&opts)
	}
	srv, err := connector.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connector.SetClient(srv, func(context.Context, *connector.Channel, healthBinding, connector.ClientReason) (*struct{}, error) {
		return &struct{}{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := connector.AddConsumer(srv, connector.Consumer[string, healthBinding]{
		Key:          func(b healthBinding) string { return b.Token },
		RestartDelay: time.Second,
		Run: func(ctx context.Context, _ string, m *connector.Members[healthBinding]) error {
			h.mu.Lock()
			h.runs++
			h.mu.Unlock()
			select {
			case step := <-h.steps:
				return step(ctx, m)
			case <-ctx.Done():
				return nil
			}
		}}); err != nil {
		t.Fatal(err)
	}
	srv.OnAssistantMessage(func(context.Context, *connector.Channel, *connector.AssistantMessage) error { return nil })
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	return srv, db
}

func statusOf(t *testing.T, srv *connector.Server, id string) protocol.ConnectionStatus {
	t.Helper()
	ch, err := srv.Channel(id)
	if err != nil {
		t.Fatal(err)
	}
	return ch.Status()
}

// TestConsumerRevokedParks is issue 33 item 3: a Run that returns an error
// wrapping connector.ErrRevoked (a revoked token) marks every channel of
// its key revoked, stored, and parks the consumer: an hour later Run has
// not been called again (before, it restarted every 1 s…5 min forever).
func TestConsumerRevokedParks(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		h := &healthTarget{steps: make(chan func(context.Context, *connector.Members[healthBinding]) error, 4)}
		const a, b = "cch_health_a_000000000000000", "cch_health_b_000000000000000"
		for range cap(h.steps) {
			h.steps <- func(ctx context.Context, m *connector.Members[healthBinding]) error {
				m.Connected(ctx)
				return fmt.Errorf("target: auth.test: token_revoked: %w", connector.ErrRevoked)
			}
		}
		srv, db := startHealth(t, dir, h, a, b)
		synctest.Wait()
		// Each channel's restore that commits after a Run began wakes the
		// consumer once more, so that the channel is marked too: at most
		// one Run per restore, plus the first.
		runs := h.runCount()
		if runs < 1 || runs > 3 {
			t.Fatalf("Run called %d times for two restored channels, want 1 to 3", runs)
		}
		for _, id := range []string{a, b} {
			if st := statusOf(t, srv, id); st != protocol.StatusRevoked {
				t.Errorf("channel %s is %s, want revoked", id, st)
			}
			rec, err := db.GetChannel(context.Background(), healthCard, id)
			if err != nil || rec.Status != string(protocol.StatusRevoked) || len(rec.Binding) == 0 {
				t.Errorf("stored channel %s: %s (binding kept: %v), %v; want revoked with its binding", id, rec.Status, len(rec.Binding) > 0, err)
			}
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := h.runCount(); n != runs {
			t.Fatalf("Run called %d times within an hour of the revocation, want still %d (parked)", n, runs)
		}
		ch, _ := srv.Channel(a)
		if ch.Authenticated() {
			t.Error("a revoked channel reports Authenticated")
		}
	})
}

// TestConsumerHealthIsChannelStatus is issue 33 item 3: a Run that loses
// its target (returns an error) leaves its channels degraded while the
// SDK waits to restart it, and the restarted Run's Connected brings them
// back to connected; Degraded does the same from inside a Run that
// reconnects by itself.
func TestConsumerHealthIsChannelStatus(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		h := &healthTarget{steps: make(chan func(context.Context, *connector.Members[healthBinding]) error)}
		const a = "cch_health_a_000000000000000"
		srv, _ := startHealth(t, dir, h, a)
		dropped := errors.New("events socket closed: EOF")
		step := func(f func(ctx context.Context, m *connector.Members[healthBinding]) error) {
			h.steps <- f
			synctest.Wait()
		}
		step(func(ctx context.Context, m *connector.Members[healthBinding]) error {
			m.Connected(ctx)
			return dropped
		})
		if st := statusOf(t, srv, a); st != protocol.StatusDegraded {
			t.Fatalf("after the socket dropped: %s, want degraded", st)
		}
		time.Sleep(time.Second) // RestartDelay
		synctest.Wait()
		if n := h.runCount(); n != 2 {
			t.Fatalf("Run called %d times, want 2 (restarted once)", n)
		}
		if st := statusOf(t, srv, a); st != protocol.StatusDegraded {
			t.Fatalf("restarted, not yet connected: %s, want degraded", st)
		}
		next := make(chan struct{})
		step(func(ctx context.Context, m *connector.Members[healthBinding]) error {
			m.Connected(ctx)
			<-next
			m.Degraded(ctx) // a reconnect inside Run
			<-next
			m.Connected(ctx)
			<-ctx.Done()
			return nil
		})
		if st := statusOf(t, srv, a); st != protocol.StatusConnected {
			t.Fatalf("after the restarted Run reached the target: %s, want connected", st)
		}
		next <- struct{}{}
		synctest.Wait()
		if st := statusOf(t, srv, a); st != protocol.StatusDegraded {
			t.Fatalf("after Degraded: %s, want degraded", st)
		}
		next <- struct{}{}
		synctest.Wait()
		if st := statusOf(t, srv, a); st != protocol.StatusConnected {
			t.Fatalf("after Connected again: %s, want connected", st)
		}
	})
}

// lockedBuf is a bytes.Buffer safe for the consumer goroutines' writes.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestNilLoggerIsTheProcessLogger is issue 33 item 8: without
// Options.Logger the SDK logs to slog.Default() (through its redacting
// handler), so a consumer's failure is not lost; before, a nil Logger
// discarded it. Not parallel: it swaps the process logger.
func TestNilLoggerIsTheProcessLogger(t *testing.T) {
	var buf lockedBuf
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		h := &healthTarget{steps: make(chan func(context.Context, *connector.Members[healthBinding]) error, 1)}
		h.steps <- func(context.Context, *connector.Members[healthBinding]) error {
			return errors.New("events socket closed: EOF tok-health-1")
		}
		startHealth(t, dir, h, "cch_health_a_000000000000000")
		synctest.Wait()
		out := buf.String()
		if !strings.Contains(out, "target consumer stopped; restarting") || !strings.Contains(out, "events socket closed") {
			t.Fatalf("the consumer's failure is not in the process log:\n%s", out)
		}
		if strings.Contains(out, "tok-health-1") {
			t.Fatalf("the binding's secret reached the process log:\n%s", out)
		}
	})
}
