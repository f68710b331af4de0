package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

func TestSigninFormPersistsAfterAuthentication(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	uc := th.signinRoom(t, "alice", "im.fake")
	if !uc.Authenticated || uc.UserID != "alice" || uc.CardID != "im.fake" || uc.ChannelID == "" {
		t.Fatalf("user channel = %+v", uc)
	}
	got, err := th.db.FindUserChannel(ctxT(t), "alice", "im.fake", uc.ChannelID)
	if err != nil || got.ID != uc.ID {
		t.Fatalf("ownership index: %+v, %v", got, err)
	}
	d, err := protocol.ParseDescriptor(got.Descriptor)
	if err != nil || d.Connection.Status != protocol.StatusConnected {
		t.Fatalf("stored descriptor: %v %v", d, err)
	}
	start := f.packets(protocol.TypeAuthStart)
	var p protocol.AuthStartPayload
	_ = start[0].DecodePayload(&p)
	if p.FlowID != "room" || p.Input["room"] != "r1" {
		t.Fatalf("auth.start payload = %+v", p)
	}
}

func TestSigninFormFailureCreatesNoRecord(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	ctx := ctxT(t)
	s, err := th.Connect(ctx, "bob", "im.fake", "room", map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Wait(ctx)
	if err == nil || s.State().Status != protocol.AuthFailed {
		t.Fatalf("wait = %v, state %+v", err, s.State())
	}
	if ucs, _ := th.Channels(ctx, "bob", "im.fake"); len(ucs) != 0 {
		t.Fatalf("records after a failed sign-in: %v", ucs)
	}
	eventually(t, "temporary channel closed", func() bool { return f.count(protocol.TypeChannelClose) == 1 })
}

func TestSigninQRPollsUntilAuthenticated(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	ctx := ctxT(t)
	s, err := th.Connect(ctx, "carol", "im.fake", "qr", nil)
	if err != nil {
		t.Fatal(err)
	}
	st := s.State()
	if st.QRCodeText == "" || st.Status != protocol.AuthPending || st.AuthSessionID == "" {
		t.Fatalf("state after start = %+v", st)
	}
	if ucs, _ := th.Channels(ctx, "carol", "im.fake"); len(ucs) != 0 {
		t.Fatal("channel persisted before authentication")
	}
	var seen []protocol.AuthStatus
	for u := range s.Updates() {
		seen = append(seen, u.Status)
	}
	uc, err := s.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !uc.Authenticated {
		t.Fatal("not authenticated")
	}
	if len(seen) == 0 || seen[len(seen)-1] != protocol.AuthAuthenticated {
		t.Fatalf("updates = %v", seen)
	}
	if !containsStatus(seen, protocol.AuthScanned) {
		t.Fatalf("scanned never observed: %v", seen)
	}
	if f.count(protocol.TypeAuthStatus) < 3 {
		t.Fatalf("auth.status sent %d times", f.count(protocol.TypeAuthStatus))
	}
}

// TestSigninAckDescriptorBeatsEarlierPush: a Descriptor pushed before the
// authenticated ack (the SDK pushes "authenticating" when a QR sign-in
// starts) is older than the ack's: the stored channel is authenticated,
// also after the push was dispatched.
func TestSigninAckDescriptorBeatsEarlierPush(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	f.set(func(f *fakeConnector) { f.qrStartPush = true })
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	ctx := ctxT(t)
	s, err := th.Connect(ctx, "erin", "im.fake", "qr", nil)
	if err != nil {
		t.Fatal(err)
	}
	uc, err := s.Wait(ctx)
	if err != nil || !uc.Authenticated {
		t.Fatalf("sign-in = %+v, %v", uc, err)
	}
	ucs, err := th.Channels(ctx, "erin", "im.fake")
	if err != nil || len(ucs) != 1 || !ucs[0].Authenticated {
		t.Fatalf("stored channels = %+v, %v", ucs, err)
	}
}

func TestSigninCancel(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	f.set(func(f *fakeConnector) { f.qrHold = true })
	ctx := ctxT(t)
	s, err := th.Connect(ctx, "dave", "im.fake", "qr", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "auth.status refresh=true", func() bool {
		for _, e := range f.packets(protocol.TypeAuthStatus) {
			var p protocol.AuthStatusPayload
			if e.DecodePayload(&p) == nil && p.Refresh && p.AuthSessionID != "" {
				return true
			}
		}
		return false
	})
	if err := s.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	st := s.State()
	if !st.Done || st.Status != SigninCanceled {
		t.Fatalf("state = %+v", st)
	}
	if f.count(protocol.TypeAuthCancel) != 1 || f.count(protocol.TypeChannelClose) != 1 {
		t.Fatalf("auth.cancel sent %d times, channel.close %d", f.count(protocol.TypeAuthCancel), f.count(protocol.TypeChannelClose))
	}
	if ucs, _ := th.Channels(ctx, "dave", "im.fake"); len(ucs) != 0 {
		t.Fatal("record created by a canceled sign-in")
	}
}

func TestSigninSingleModeAndLogoutReauth(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	f.set(func(f *fakeConnector) { f.card.Supports.UserChannelMode = protocol.UserChannelSingle })
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	ctx := ctxT(t)
	uc := th.signinRoom(t, "erin", "im.fake")
	_, err := th.Connect(ctx, "erin", "im.fake", "room", map[string]string{"room": "r2"})
	if code(err) != CodeChannelLimit {
		t.Fatalf("second channel in single mode: %v", err)
	}
	if err := th.Logout(ctx, uc.ID); err != nil {
		t.Fatal(err)
	}
	got, err := th.db.GetUserChannel(ctx, uc.ID)
	if err != nil || got.Authenticated {
		t.Fatalf("after logout: %+v %v", got, err)
	}
	if f.count(protocol.TypeAuthLogout) != 1 {
		t.Fatal("auth.logout not sent")
	}
	s, err := th.Reauthenticate(ctx, uc.ID, "room", map[string]string{"room": "r1"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Wait(ctx)
	if err != nil || again.ID != uc.ID || !again.Authenticated {
		t.Fatalf("reauth: %+v %v", again, err)
	}
}

func TestSigninUnknownFlowAndConnector(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	ctx := ctxT(t)
	if _, err := th.Connect(ctx, "u", "im.fake", "nope", nil); code(err) != protocol.CodeAuthFlowNotFound {
		t.Fatalf("unknown flow: %v", err)
	}
	if _, err := th.Connect(ctx, "u", "im.none", "", nil); !errors.Is(err, ErrUnknownConnector) {
		t.Fatalf("unknown connector: %v", err)
	}
}

func TestDescriptorPushMismatchIgnored(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	uc := th.signinRoom(t, "fay", "im.fake")
	f.mu.Lock()
	bad := f.descriptor(f.channels[uc.ChannelID])
	good := f.descriptor(f.channels[uc.ChannelID])
	f.mu.Unlock()
	bad.Connection.ConnectorCardID = "im.other"
	bad.Connection.Status = protocol.StatusRevoked
	push := func(d *protocol.Descriptor) {
		env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: "fpush_" + d.Connection.Status, ConnectorChannelID: uc.ChannelID, Type: protocol.TypeDescriptorPush}
		_ = env.SetPayload(protocol.DescriptorPayload{ConnectionDescriptor: d})
		f.sendOn(uc.ChannelID, env)
	}
	push(bad)
	eventually(t, "ignored event", func() bool { return th.events.has(EventDescriptorIgnored, nil) })
	got, _ := th.db.GetUserChannel(ctxT(t), uc.ID)
	if !got.Authenticated {
		t.Fatal("a mismatching descriptor was applied")
	}
	good.Connection.Status = protocol.StatusExpired
	push(good)
	eventually(t, "expired descriptor applied", func() bool {
		got, _ := th.db.GetUserChannel(ctxT(t), uc.ID)
		var d protocol.Descriptor
		_ = json.Unmarshal(got.Descriptor, &d)
		return !got.Authenticated && d.Connection.Status == protocol.StatusExpired
	})
}

func containsStatus(list []protocol.AuthStatus, s protocol.AuthStatus) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestDescriptorPushV1IsNormalised(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	uc := th.signinRoom(t, "gil", "im.fake")
	raw := `{"connection_descriptor":{"schema":"xagent.connection/v1","connection":{"connector_card_id":"im.fake",` +
		`"connector_id":"conn_1","connector_channel_id":"` + uc.ChannelID + `","target_type":"im","profile":"xagent.im.v2","status":"degraded"},` +
		`"target":{"provider":"im_fake","display_name":"Fake room"},"tools":[{"tool_id":"im_fake_send","status":"available"}]}}`
	env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: "fv1", ConnectorChannelID: uc.ChannelID,
		Type: protocol.TypeDescriptorPush, Payload: json.RawMessage(raw)}
	f.sendOn(uc.ChannelID, env)
	eventually(t, "v1 descriptor applied", func() bool {
		got, _ := th.db.GetUserChannel(ctxT(t), uc.ID)
		d, err := protocol.ParseDescriptor(got.Descriptor)
		return err == nil && d.Connection.Status == protocol.StatusDegraded && d.Schema == protocol.DescriptorSchema &&
			len(d.Connection.Profiles) == 1 && d.Connection.Profiles[0] == protocol.ProfileIMv2
	})
	defs, _ := th.Tools(ctxT(t), "gil", "")
	defs = cardDefs(defs)
	if len(defs) != 1 || defs[0].Name != "im_fake_send" {
		t.Fatalf("tools from the normalised descriptor: %v", defs)
	}
}

// TestReopenPassSkipsChannelsOpenOnTheSession: the host announces a link
// online before its reopen pass lists the stored channels, so a sign-in can
// finish first. The pass must leave that channel alone: a second
// channel.open raced the Descriptor pushed after the sign-in with the
// ack's (TestDescriptorPushV1IsNormalised failed 1 run in 50 that way).
func TestReopenPassSkipsChannelsOpenOnTheSession(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	uc := th.signinRoom(t, "ivy", "im.fake")
	opens := f.count(protocol.TypeChannelOpen)
	rt := th.runtime("im.fake")
	s := rt.session()
	if s == nil || s.route(uc.ChannelID) == nil {
		t.Fatal("the signed-in channel has no route on the session")
	}
	rt.reopenAll(ctxT(t), s)
	if n := f.count(protocol.TypeChannelOpen); n != opens {
		t.Fatalf("channel.open sent %d times after the reopen pass, want %d (no reopen of an open channel)", n, opens)
	}
}

func TestCloseAndDeleteChannel(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	uc := th.signinRoom(t, "hugo", "im.fake")
	ctx := ctxT(t)
	if err := th.CloseChannel(ctx, uc.ID); err != nil {
		t.Fatal(err)
	}
	if f.count(protocol.TypeChannelClose) != 1 {
		t.Fatal("channel.close not sent")
	}
	if got, err := th.db.GetUserChannel(ctx, uc.ID); err != nil || !got.Authenticated {
		t.Fatalf("record after close: %+v %v", got, err)
	}
	// A tool call reopens the route.
	if _, err := th.Invoke(ctx, "hugo", "", "im_fake_send", json.RawMessage(`{}`), "c1"); err != nil {
		t.Fatalf("invoke after close: %v", err)
	}
	if err := th.DeleteChannel(ctx, uc.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := th.db.GetUserChannel(ctx, uc.ID); err == nil {
		t.Fatal("record kept after delete")
	}
	if ucs, _ := th.Channels(ctx, "hugo", ""); len(ucs) != 0 {
		t.Fatalf("channels after delete: %v", ucs)
	}
	if err := th.Logout(ctx, uc.ID); !errors.Is(err, ErrUnknownChannel) {
		t.Fatalf("logout of a deleted channel: %v", err)
	}
}

// A connector may send a chat.message as soon as it has acknowledged the
// sign-in: the channel is open and signed in on its side. The host binds
// the route to the new record on the sign-in goroutine, while the message
// is already on its way to the channel's worker: the worker waits for the
// binding instead of rejecting the message channel_not_open.
func TestChatRightAfterSigninAckIsAccepted(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	f.set(func(f *fakeConnector) { f.msgAfterAuth = true })
	agent := &countingAgent{}
	th := newTestHost(t, "", func(o *Options) { o.Agent = agent })
	th.admitOnline(t, f)
	const runs = 20
	for i := range runs {
		uc := th.signinRoom(t, fmt.Sprintf("user%d", i), "im.fake")
		ack := waitAck(t, f)
		if ack.Status != protocol.AckAccepted || ack.MessageID != "first-"+uc.ChannelID {
			t.Fatalf("run %d: ack %+v, want accepted for first-%s", i, ack, uc.ChannelID)
		}
	}
	if n := agent.n.Load(); n != runs {
		t.Fatalf("agent saw %d messages, want %d", n, runs)
	}
}

// Section 6.3: an authenticated channel gets its dedicated session, without
// the embedder calling BindSession; tool calls of that session run on it,
// and the user's messages carry it.
func TestSigninBindsDedicatedSession(t *testing.T) {
	t.Parallel()
	f1 := newFakeConnector(t, "im.one", "")
	f2 := newFakeConnector(t, "im.two", "")
	msgs := make(chan *UserMessage, 4)
	th := newTestHost(t, "", func(o *Options) {
		o.Agent = AgentFunc(func(_ context.Context, m *UserMessage, _ ReplyStream) error { msgs <- m; return nil })
	})
	th.admitOnline(t, f1)
	th.admitOnline(t, f2)
	ctx := ctxT(t)
	first := th.signinRoom(t, "lu", "im.one")
	second := th.signinRoom(t, "lu", "im.one")
	other := th.signinRoom(t, "lu", "im.two")
	for _, uc := range []store.UserChannel{first, second, other} {
		if uc.SessionID != uc.ID {
			t.Fatalf("session of %s = %q, want its dedicated session %q", uc.ID, uc.SessionID, uc.ID)
		}
	}
	// The second channel's session routes there, not to the first channel.
	res, err := th.Invoke(ctx, "lu", second.SessionID, "im_one_send", json.RawMessage(`{"text":"x"}`), "c1")
	if err != nil || res.ChannelID != second.ChannelID {
		t.Fatalf("call in the dedicated session: %+v %v", res, err)
	}
	// Its tools are those of its connector only.
	defs, err := th.Tools(ctx, "lu", other.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range defs {
		if d.CardID != "" && d.CardID != "im.two" {
			t.Fatalf("session of im.two sees tool %s of %s", d.Name, d.CardID)
		}
	}
	f1.publish(second.ChannelID, protocol.ChatMessagePayload{MessageID: "m1", Text: "hi"})
	select {
	case m := <-msgs:
		if m.SessionID != second.ID {
			t.Fatalf("message session %q, want %q", m.SessionID, second.ID)
		}
	case <-ctx.Done():
		t.Fatal("no message")
	}
	// A session the embedder chose survives signing in again.
	if err := th.BindSession(ctx, first.ID, "platform-session"); err != nil {
		t.Fatal(err)
	}
	if err := th.Logout(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	s, err := th.Reauthenticate(ctx, first.ID, "room", map[string]string{"room": "r1"})
	if err != nil {
		t.Fatal(err)
	}
	uc, err := s.Wait(ctx)
	if err != nil || uc.SessionID != "platform-session" {
		t.Fatalf("after reauthentication: session %q, %v", uc.SessionID, err)
	}
}
