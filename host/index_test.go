package host

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// TestInvokeResolutionFollowsChannelChanges checks that channel resolution
// (served from the in-memory index) follows every write: a pushed
// Descriptor, logout, a connector_channel_id reissued on reopen, a session
// binding and a deleted channel.
func TestInvokeResolutionFollowsChannelChanges(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	ctx := ctxT(t)
	first := th.signinRoom(t, "kim", "im.fake")
	second := th.signinRoom(t, "kim", "im.fake")
	args := json.RawMessage(`{"text":"hi"}`)
	routedTo := func() (string, protocol.Code) {
		res, err := th.Invoke(ctx, "kim", "", "im_fake_send", args, "c")
		if err != nil {
			return "", code(err)
		}
		return res.ChannelID, ""
	}
	if ch, c := routedTo(); ch != first.ChannelID {
		t.Fatalf("routed to %q (%s), want the first channel %s", ch, c, first.ChannelID)
	}

	// A pushed Descriptor marks the tool unavailable on the first channel.
	push := func(channelID string, sendStatus string) {
		f.mu.Lock()
		d := f.descriptor(f.channels[channelID])
		f.mu.Unlock()
		for i := range d.Tools {
			if d.Tools[i].ToolID == "im_fake_send" {
				d.Tools[i].Status = sendStatus
			}
		}
		env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: "fpush_" + sendStatus + time.Now().Format("150405.000000"),
			ConnectorChannelID: channelID, Type: protocol.TypeDescriptorPush}
		if err := env.SetPayload(protocol.DescriptorPayload{ConnectionDescriptor: d}); err != nil {
			t.Fatal(err)
		}
		f.sendOn(channelID, env)
	}
	push(first.ChannelID, protocol.ToolUnavailable)
	eventually(t, "the call routed to the second channel", func() bool {
		ch, _ := routedTo()
		return ch == second.ChannelID
	})

	// Logout of the second: no channel can run the tool.
	if err := th.Logout(ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	if ch, c := routedTo(); c != protocol.CodeConnectorChannelUnavailable {
		t.Fatalf("after logout: routed to %q (%s), want %s", ch, c, protocol.CodeConnectorChannelUnavailable)
	}

	// The tool comes back on the first channel.
	push(first.ChannelID, protocol.ToolAvailable)
	eventually(t, "the call routed to the first channel again", func() bool {
		ch, _ := routedTo()
		return ch == first.ChannelID
	})

	// The connector restarts and answers the reopen with a new id.
	const reissued = "cch_reissued"
	f.set(func(f *fakeConnector) {
		ch := f.channels[first.ChannelID]
		ch.id = reissued
		f.channels[reissued] = ch
	})
	f.dropAll()
	eventually(t, "the call routed to the reissued id", func() bool {
		ch, _ := routedTo()
		return ch == reissued
	})
	if got, err := th.db.GetUserChannel(ctx, first.ID); err != nil || got.ChannelID != reissued {
		t.Fatalf("stored record: %+v %v", got, err)
	}

	// A bound session, then the channel deleted: the binding goes with it.
	if err := th.BindSession(ctx, first.ID, "s1"); err != nil {
		t.Fatal(err)
	}
	if res, err := th.Invoke(ctx, "kim", "s1", "im_fake_send", args, "c"); err != nil || res.ChannelID != reissued {
		t.Fatalf("bound call: %+v %v", res, err)
	}
	if err := th.DeleteChannel(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := th.Invoke(ctx, "kim", "s1", "im_fake_send", args, "c"); code(err) != protocol.CodeConnectorChannelUnavailable {
		t.Fatalf("after delete: %v, want %s (only the logged-out channel is left)", err, protocol.CodeConnectorChannelUnavailable)
	}
	ucs, err := th.Channels(ctx, "kim", "im.fake")
	if err != nil || len(ucs) != 1 || ucs[0].ID != second.ID || ucs[0].Authenticated {
		t.Fatalf("channels after delete: %+v %v", ucs, err)
	}
}

// TestChannelIndexBound checks that the index keeps at most its limit,
// answers evicted lists from the store in store order, and follows writes.
func TestChannelIndexBound(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	t.Cleanup(func() { _ = db.Close() })
	ctx := ctxT(t)
	base := time.Unix(1_800_000_000, 0)
	put := func(id, user string, at time.Time) {
		t.Helper()
		uc := store.UserChannel{ID: id, UserID: user, CardID: "im.fake", ChannelID: "ch_" + id, CreatedAt: at}
		if err := db.PutUserChannel(ctx, uc); err != nil {
			t.Fatal(err)
		}
	}
	put("b", "u1", base)
	put("a", "u1", base) // same CreatedAt: ordered by id
	put("c", "u2", base.Add(-time.Second))
	x := newChannelIndex(db, 2)
	if err := x.preload(ctx, []string{"im.fake"}); err != nil {
		t.Fatal(err)
	}
	ids := func(user string) []string {
		t.Helper()
		l, err := x.list(ctx, user, "im.fake")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range l {
			out = append(out, e.uc.ID)
		}
		return out
	}
	for range 2 {
		if got := ids("u1"); len(got) != 2 || got[0] != "a" || got[1] != "b" {
			t.Fatalf("u1 = %v, want [a b]", got)
		}
		if got := ids("u2"); len(got) != 1 || got[0] != "c" {
			t.Fatalf("u2 = %v, want [c]", got)
		}
		x.mu.RLock()
		n := len(x.byID)
		x.mu.RUnlock()
		if n > 2 {
			t.Fatalf("index holds %d channels, limit 2", n)
		}
	}
	// A write through the index is seen, with the stored CreatedAt kept.
	e, err := x.get(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	uc := e.uc
	uc.Authenticated, uc.CreatedAt = true, base.Add(time.Hour)
	if err := x.put(ctx, uc); err != nil {
		t.Fatal(err)
	}
	if e, err := x.get(ctx, "b"); err != nil || !e.uc.Authenticated || !e.uc.CreatedAt.Equal(base) {
		t.Fatalf("after put: %+v %v", e, err)
	}
	if err := x.delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if got := ids("u1"); len(got) != 1 || got[0] != "b" {
		t.Fatalf("u1 after delete = %v, want [b]", got)
	}
	if _, err := x.get(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted channel: %v, want ErrNotFound", err)
	}
}
