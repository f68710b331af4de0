package connector_test

import (
	"testing"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// waitReleased waits until the connector has registered that the last
// socket of connector_id cid is gone (the lease's grace deadline is
// persisted only then).
func waitReleased(t *testing.T, f *sdkfixture.Fixture, cid string) {
	t.Helper()
	ctx := testCtx(t)
	eventually(t, "the grace period of "+cid, func() bool {
		in, err := f.Store.GetInstance(ctx, sdkfixture.FixtureCardID, cid)
		return err == nil && !in.GraceUntil.IsZero()
	})
}

// TestChannelReadoptedByNewConnectorID: when xAgent replaces its instance
// (a hello that gets a new connector_id) it restores routing with the
// original connector_channel_id (architecture section 5). channel.open of a
// channel of the replaced instance answers with that same channel, signed
// in, now owned by the new connector_id (persisted), with its pending
// messages; the old connector_id's expiry no longer takes it along.
func TestChannelReadoptedByNewConnectorID(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	ctx := testCtx(t)
	a, oldID := f.Connect(t, "")
	ch := openSigned(t, a)
	h, err := f.Server.Channel(ch)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.SetToolAvailability(ctx, sdkfixture.ToolSend, connector.ToolAvailability{Status: protocol.ToolDeniedByTarget,
		Permission: protocol.PermissionDenied, Reason: "no send rights"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	waitReleased(t, f, oldID)
	// A target message arrives while no instance is connected.
	if _, err := h.Publish(ctx, connector.UserMessage{MessageID: "while-replaced", Text: "still there?"}); err != nil {
		t.Fatal(err)
	}

	b, newID := f.Connect(t, "") // the replacing instance
	if newID == oldID {
		t.Fatal("a hello without connector_id got the old one")
	}
	ack, err := b.Open(ctx, ch)
	if err != nil {
		t.Fatalf("reopen of the replaced instance's channel: %v", err)
	}
	if ack.ConnectorChannelID != ch {
		t.Fatalf("channel.open of %s answered with another channel %s", ch, ack.ConnectorChannelID)
	}
	d := ack.ConnectionDescriptor
	if d.Connection.ConnectorID != newID || d.Connection.ConnectorChannelID != ch || d.Connection.Status != protocol.StatusConnected ||
		d.Target.DisplayName != "Ann" {
		t.Fatalf("descriptor after re-adoption %+v / %+v", d.Connection, d.Target)
	}
	if vs := protocol.ValidateDescriptorAgainstCard(d, f.Server.Card(), ch); len(vs) > 0 {
		t.Fatalf("descriptor invalid: %v", vs)
	}
	if st, _ := d.ToolState(sdkfixture.ToolSend); st == nil || st.Status != protocol.ToolDeniedByTarget {
		t.Fatalf("tool override lost: %+v", st)
	}
	rec, err := f.Store.GetChannel(ctx, sdkfixture.FixtureCardID, ch)
	if err != nil || rec.ConnectorID != newID || rec.Status != protocol.StatusConnected || len(rec.Binding) == 0 {
		t.Fatalf("stored channel %+v %v, want connector_id %s, connected, bound", rec, err, newID)
	}
	if bd, ok := h.Binding(); !ok || string(bd.Data) != f.Opts.Canary {
		t.Fatalf("binding lost: %+v %v", bd, ok)
	}
	// Signed-in work runs on the new socket.
	wantOK(t, invoke(t, b, ch, sdkfixture.ToolEcho, `{"connector_channel_id":"`+ch+`","text":"hi"}`, ""), protocol.TypeToolInvokeAck)
	msg, err := b.NextOfType(ctx, protocol.TypeChatMessage)
	if err != nil {
		t.Fatal(err)
	}
	if p := decode[protocol.ChatMessagePayload](t, msg); p.MessageID != "while-replaced" {
		t.Fatalf("pending message %+v", p)
	}
	ackMessage(t, b, msg, protocol.AckAccepted, nil)

	// The replaced instance expires: the re-adopted channel stays.
	f.Server.ExpireLease(oldID)
	if _, err := f.Store.GetInstance(ctx, sdkfixture.FixtureCardID, oldID); err == nil {
		t.Fatal("the replaced instance did not expire")
	}
	if h, err := f.Server.Channel(ch); err != nil || !h.Authenticated() {
		t.Fatalf("re-adopted channel lost with the old connector_id: %v", err)
	}
	if _, err := f.Store.GetChannel(ctx, sdkfixture.FixtureCardID, ch); err != nil {
		t.Fatalf("re-adopted channel deleted from the store: %v", err)
	}
	if _, unbinds := f.Target.Hooks(); len(unbinds) != 0 {
		t.Fatalf("unbind hooks ran: %v", unbinds)
	}
	env, err := b.Request(ctx, protocol.TypeDescriptorGet, ch, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, env, protocol.TypeDescriptorGetAck)
	checkWire(t, b)
}

// TestChannelAdoptionRefusedWhileOwnerLive: a channel whose connector_id
// still has a connected socket belongs to that live instance; another
// connector_id gets connector_channel_connector_mismatch for it, also for
// channel.open, and nothing changes.
func TestChannelAdoptionRefusedWhileOwnerLive(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	ctx := testCtx(t)
	a, oldID := f.Connect(t, "")
	ch := openSigned(t, a)
	b, newID := f.Connect(t, "")
	refused := func(c *connectortest.Client, typ string) {
		t.Helper()
		env, err := c.Request(ctx, typ, ch, protocol.EmptyPayload{})
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, env, protocol.TypeError, protocol.CodeConnectorChannelConnectorMismatch)
		if env.RequestID == "" || env.ReplyTo == "" {
			t.Errorf("error packet lacks request_id/reply_to: %+v", env)
		}
	}
	refused(b, protocol.TypeChannelOpen) // open on a
	env, err := a.Request(ctx, protocol.TypeChannelClose, ch, protocol.EmptyPayload{})
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, env, protocol.TypeChannelCloseAck)
	refused(b, protocol.TypeChannelOpen)   // closed, but its instance is live
	refused(b, protocol.TypeDescriptorGet) // only channel.open ever re-adopts
	if rec, err := f.Store.GetChannel(ctx, sdkfixture.FixtureCardID, ch); err != nil || rec.ConnectorID != oldID {
		t.Fatalf("refused open changed the channel: %+v %v", rec, err)
	}
	if again, err := a.Open(ctx, ch); err != nil || again.ConnectorChannelID != ch ||
		again.ConnectionDescriptor.Connection.ConnectorID != oldID || again.ConnectionDescriptor.Connection.Status != protocol.StatusConnected {
		t.Fatalf("owner's reopen: %v %+v", err, again)
	}

	// Once a is gone, b's instance takes the channel over; the old
	// connector_id coming back (still in its grace period) is now the
	// other instance and is refused in turn.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	waitReleased(t, f, oldID)
	if ack, err := b.Open(ctx, ch); err != nil || ack.ConnectorChannelID != ch || ack.ConnectionDescriptor.Connection.ConnectorID != newID {
		t.Fatalf("re-adoption after the owner left: %v %+v", err, ack)
	}
	a2, back := f.Connect(t, oldID)
	if back != oldID {
		t.Fatalf("connector_id %s not restored within its grace period (got %s)", oldID, back)
	}
	refused(a2, protocol.TypeChannelOpen)
	checkWire(t, a)
	checkWire(t, b)
	checkWire(t, a2)
}

// TestChannelOfExpiredInstanceNotAdopted: once the old connector_id's lease
// expired, its channels are unregistered (section 8.2) and an open naming
// one gets a new channel (section 8.3), never the old binding.
func TestChannelOfExpiredInstanceNotAdopted(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	ctx := testCtx(t)
	a, oldID := f.Connect(t, "")
	ch := openSigned(t, a)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	waitReleased(t, f, oldID)
	f.Server.ExpireLease(oldID)
	b, _ := f.Connect(t, "")
	ack, err := b.Open(ctx, ch)
	if err != nil {
		t.Fatal(err)
	}
	if ack.ConnectorChannelID == ch || ack.ConnectionDescriptor.Connection.Status != protocol.StatusCreated {
		t.Fatalf("channel of an expired instance reused: %+v", ack)
	}
}
