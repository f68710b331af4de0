package connector_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// TestConcurrentFirstOpens sends many first channel.open packets at once
// on one socket: they are created concurrently (group-committed writes), so
// every ack must name a distinct, persisted channel that is open on this
// socket, the store's channel bound must hold exactly, and a new socket of
// the same connector_id must reopen each one under its id.
func TestConcurrentFirstOpens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		max      int // store.Options.MaxChannels (0: default)
		opens    int
		wantOpen int
	}{
		{name: "below the bound", opens: 300, wantOpen: 300},
		{name: "beyond the bound", max: 40, opens: 120, wantOpen: 40},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(dir, "xconn.db"),
				store.Options{DataDir: dir, MaxChannels: tc.max})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Store: st})
			c, cid := f.Connect(t, "")
			ctx := testCtx(t)

			ids := make([]string, tc.opens)
			errs := make([]error, tc.opens)
			var wg sync.WaitGroup
			for i := range tc.opens {
				wg.Go(func() {
					ack, err := c.Open(ctx, "")
					if err == nil {
						ids[i] = ack.ConnectorChannelID
						if d := ack.ConnectionDescriptor; d == nil || d.Connection.ConnectorChannelID != ids[i] ||
							d.Connection.Status != protocol.StatusCreated || d.Connection.ConnectorID != cid {
							t.Errorf("ack descriptor %+v for %s", d, ids[i])
						}
					}
					errs[i] = err
				})
			}
			wg.Wait()
			seen := map[string]bool{}
			for i, err := range errs {
				switch {
				case err == nil:
					if seen[ids[i]] {
						t.Fatalf("channel %s acked twice", ids[i])
					}
					seen[ids[i]] = true
				case !isCode(err, protocol.CodeConnectorChannelUnavailable):
					t.Fatalf("open %d: %v", i, err)
				}
			}
			if len(seen) != tc.wantOpen {
				t.Fatalf("%d channels opened, want %d", len(seen), tc.wantOpen)
			}
			stored, err := st.ListChannels(ctx, sdkfixture.FixtureCardID, cid)
			if err != nil || len(stored) != tc.wantOpen {
				t.Fatalf("stored %d channels (%v), want %d", len(stored), err, tc.wantOpen)
			}
			for id := range seen {
				env, err := c.Request(ctx, protocol.TypeDescriptorGet, id, protocol.EmptyPayload{})
				if err != nil {
					t.Fatal(err)
				}
				wantOK(t, env, protocol.TypeDescriptorGetAck)
			}

			// Reconnect: every channel is reused under its id.
			c.Close()
			c2, again := f.Connect(t, cid)
			if again != cid {
				t.Fatalf("connector_id %s after reconnect, want %s", again, cid)
			}
			for id := range seen {
				ack, err := c2.Open(ctx, id)
				if err != nil || ack.ConnectorChannelID != id {
					t.Fatalf("reopen %s: %v %+v", id, err, ack)
				}
			}
		})
	}
}

// TestFirstOpensWhileSocketCloses closes the socket while first opens are
// being created: the server must not leak the creating goroutines (goleak
// checks at the end of the package) and must keep working.
func TestFirstOpensWhileSocketCloses(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	c, cid := f.Connect(t, "")
	ctx := testCtx(t)
	for range 200 {
		env, err := connectortest.Packet(protocol.TypeChannelOpen, "", protocol.EmptyPayload{})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Send(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	c2, _ := f.Connect(t, cid)
	if _, err := c2.Open(ctx, ""); err != nil {
		t.Fatalf("open after the close: %v", err)
	}
}
