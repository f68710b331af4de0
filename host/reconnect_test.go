package host

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/protocol"
)

func TestReconnectReopensChannelAndDeliversPendingFinalOnce(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	uc := th.signinRoom(t, "pat", "im.fake")
	f.set(func(f *fakeConnector) { f.noAckFinals = 1; f.rejectFinals = 0 })

	r, err := th.Reply(ctxT(t), uc.ID)
	if err != nil {
		t.Fatal(err)
	}
	id, err := r.Final(ctxT(t), "pending across a restart")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "first attempt swallowed", func() bool { return f.count(protocol.TypeChatMessage) >= 1 })
	opens := f.count(protocol.TypeChannelOpen)
	f.dropAll() // the connector restarts
	final := waitFinal(t, f)
	if final.MessageID != id {
		t.Fatalf("final %s, want %s", final.MessageID, id)
	}
	eventually(t, "delivered", func() bool {
		o, ok, _ := th.FinalOutcome(ctxT(t), uc.ID, id)
		return ok && o.Kind == delivery.OutcomeDelivered
	})
	if f.count(protocol.TypeChannelOpen) <= opens {
		t.Fatal("channel not reopened after reconnect")
	}
	for _, e := range f.packets(protocol.TypeChannelOpen)[opens:] {
		if e.ConnectorChannelID != uc.ChannelID {
			t.Fatalf("reopen used channel %q, want the persisted %q", e.ConnectorChannelID, uc.ChannelID)
		}
	}
	// Never replayed once completed: another reconnect sends nothing more.
	n := f.count(protocol.TypeChatMessage)
	f.dropAll()
	eventually(t, "reopened again", func() bool {
		c, _ := th.Connector("im.fake")
		// One read of the session: it may be replaced between two reads.
		s := th.runtime("im.fake").session()
		return c.Link == LinkOnline && s != nil && s.route(uc.ChannelID) != nil
	})
	time.Sleep(50 * time.Millisecond)
	if f.count(protocol.TypeChatMessage) != n {
		t.Fatal("a completed final was sent again")
	}
	// Retryable rejection keeps it pending; it is delivered afterwards.
	f.set(func(f *fakeConnector) { f.rejectFinals = 1 })
	id2, _ := r.Final(ctxT(t), "second")
	if got := waitFinal(t, f); got.MessageID != id2 {
		t.Fatalf("final %s, want %s", got.MessageID, id2)
	}
	f.mu.Lock()
	seen := len(f.seenFinals)
	f.mu.Unlock()
	if seen != 2 {
		t.Fatalf("connector accepted %d finals, want 2", seen)
	}
}

func TestNewConnectorIDReplacesClient(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	uc := th.signinRoom(t, "quin", "im.fake")
	f.forget() // new connector_id, channels lost
	eventually(t, "new connector id", func() bool {
		c, _ := th.Connector("im.fake")
		return c.ConnectorID != "conn_1" && c.Link == LinkOnline
	})
	eventually(t, "channel re-identified", func() bool {
		got, _ := th.db.GetUserChannel(ctxT(t), uc.ID)
		return got.ChannelID != uc.ChannelID && got.ChannelID != ""
	})
	got, _ := th.db.GetUserChannel(ctxT(t), uc.ID)
	if got.Authenticated {
		t.Fatal("a channel the connector forgot is still authenticated")
	}
	all, _ := th.db.ListCatalog(ctxT(t))
	c, _ := th.Connector("im.fake")
	if len(all) != 1 || all[0].ConnectorID != c.ConnectorID {
		t.Fatalf("catalog = %+v, want one record with %s", all, c.ConnectorID)
	}
	ucs, _ := th.Channels(ctxT(t), "quin", "im.fake")
	if len(ucs) != 1 {
		t.Fatalf("user has %d channels, want 1", len(ucs))
	}
	// Sign in again on the same record.
	s, err := th.Reauthenticate(ctxT(t), uc.ID, "room", map[string]string{"room": "r"})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := s.Wait(ctxT(t)); err != nil || again.ID != uc.ID || !again.Authenticated {
		t.Fatalf("reauth: %+v %v", again, err)
	}
}

func TestLinkStopsAfterFailuresUntilRecover(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", func(o *Options) { o.MaxReconnectFailures = 3 })
	th.admitOnline(t, f)
	f.set(func(f *fakeConnector) { f.refuseWS = true })
	f.dropAll()
	eventually(t, "link stopped", func() bool {
		c, _ := th.Connector("im.fake")
		return c.Link == LinkStopped
	})
	f.set(func(f *fakeConnector) { f.refuseWS = false })
	time.Sleep(30 * time.Millisecond)
	if c, _ := th.Connector("im.fake"); c.Link != LinkStopped {
		t.Fatalf("link %s without recover", c.Link)
	}
	if err := th.Recover("im.fake"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "online after recover", func() bool {
		c, _ := th.Connector("im.fake")
		return c.Link == LinkOnline
	})
}

func TestHostRestartOnSameStore(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	dir := t.TempDir()
	th := newTestHost(t, dir, nil)
	th.admitOnline(t, f)
	uc := th.signinRoom(t, "rae", "im.fake")
	// A final the connector does not answer stays pending in SQLite.
	f.set(func(f *fakeConnector) { f.noAckFinals = 1000 })
	r, _ := th.Reply(ctxT(t), uc.ID)
	id, err := r.Final(ctxT(t), "survives the host restart")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "attempted", func() bool { return f.count(protocol.TypeChatMessage) >= 1 })
	th.stop(t)

	f.set(func(f *fakeConnector) { f.noAckFinals = 0 })
	th2 := newTestHost(t, dir, nil)
	eventually(t, "restored link", func() bool {
		c, ok := th2.Connector("im.fake")
		return ok && c.Link == LinkOnline
	})
	if got := waitFinal(t, f); got.MessageID != id {
		t.Fatalf("final %s, want %s", got.MessageID, id)
	}
	res, err := th2.Invoke(ctxT(t), "rae", "", "im_fake_send", json.RawMessage(`{"text":"x"}`), "c1")
	if err != nil || res.ChannelID != uc.ChannelID {
		t.Fatalf("invoke after restart: %+v %v", res, err)
	}
}

func TestRemoveConnector(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	uc := th.signinRoom(t, "sam", "im.fake")
	if err := th.Remove(context.Background(), "im.fake"); err != nil {
		t.Fatal(err)
	}
	if _, ok := th.Connector("im.fake"); ok {
		t.Fatal("connector still present")
	}
	if _, err := th.db.GetUserChannel(ctxT(t), uc.ID); err == nil {
		t.Fatal("user channel kept")
	}
	if all, _ := th.db.ListCatalog(ctxT(t)); len(all) != 0 {
		t.Fatal("catalog entry kept")
	}
}
