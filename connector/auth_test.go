package connector_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

func TestFormSignIn(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	c, _ := f.Connect(t, "")
	ctx := testCtx(t)
	ack, err := c.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	id := ack.ConnectorChannelID
	bad := []struct {
		name  string
		input map[string]any
		code  protocol.Code
		path  string
	}{
		{"missing required", map[string]any{"name": "x"}, protocol.CodeInvalidAuthInput, "input.token"},
		{"unknown field", map[string]any{"token": "t0k3n-value", "shoe_size": "44"}, protocol.CodeInvalidAuthInput, "input.shoe_size"},
		{"wrong type", map[string]any{"token": 12345}, protocol.CodeInvalidAuthInput, "input.token"},
	}
	for _, tc := range bad {
		env, err := c.Request(ctx, protocol.TypeAuthStart, id, map[string]any{"flow_id": sdkfixture.FlowTokenForm, "input": tc.input})
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, env, protocol.TypeAuthStartAck, tc.code)
		if !strings.Contains(env.Error.Message, tc.path) {
			t.Errorf("%s: message %q lacks %q", tc.name, env.Error.Message, tc.path)
		}
	}
	env, err := c.Request(ctx, protocol.TypeAuthStart, id, protocol.AuthStartPayload{FlowID: "nope"})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, env, protocol.TypeAuthStartAck, protocol.CodeAuthFlowNotFound)
	// The target refuses: status failed, the secret input never echoed.
	env, err = c.Request(ctx, protocol.TypeAuthStart, id, protocol.AuthStartPayload{FlowID: sdkfixture.FlowTokenForm,
		Input: map[string]string{"token": sdkfixture.BadToken}})
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, env, protocol.TypeAuthStartAck)
	st := decode[protocol.AuthStatePayload](t, env)
	if st.Status != protocol.AuthFailed || strings.Contains(string(env.Payload), sdkfixture.BadToken) {
		t.Fatalf("failed sign-in: %s", env.Payload)
	}
	ok, err := sdkfixture.SignIn(ctx, c, id, "Ann")
	if err != nil {
		t.Fatal(err)
	}
	d := ok.ConnectionDescriptor
	if ok.Status != protocol.AuthAuthenticated || d == nil || d.Connection.Status != protocol.StatusConnected ||
		d.Target.DisplayName != "Ann" || !d.ToolAvailable(sdkfixture.ToolEcho) {
		t.Fatalf("authenticated ack %+v / %+v", ok, d)
	}
	push, err := c.NextOfType(ctx, protocol.TypeDescriptorPush)
	if err != nil {
		t.Fatal(err)
	}
	if pd := decode[protocol.DescriptorPayload](t, push).ConnectionDescriptor; pd.Connection.Status != protocol.StatusConnected || push.ConnectorChannelID != id {
		t.Fatalf("push %+v", pd)
	}
	binds, _ := f.Target.Hooks()
	if len(binds) != 1 || binds[0] != id {
		t.Fatalf("bind hook calls %v", binds)
	}
	// auth.status of the finished session, then unknown sessions.
	env, err = c.Request(ctx, protocol.TypeAuthStatus, id, protocol.AuthStatusPayload{AuthSessionID: ok.AuthSessionID})
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, env, protocol.TypeAuthStatusAck)
	if s := decode[protocol.AuthStatePayload](t, env); s.Status != protocol.AuthAuthenticated || s.ConnectionDescriptor == nil {
		t.Fatalf("status %+v", s)
	}
	env, err = c.Request(ctx, protocol.TypeAuthStatus, id, protocol.AuthStatusPayload{AuthSessionID: "auth_nope"})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, env, protocol.TypeAuthStatusAck, protocol.CodeAuthSessionNotFound)
	// cancel: not_found, ignored (already authenticated).
	env, err = c.Request(ctx, protocol.TypeAuthCancel, id, protocol.AuthCancelPayload{AuthSessionID: "auth_nope"})
	if err != nil {
		t.Fatal(err)
	}
	if p := decode[protocol.AuthCancelAckPayload](t, env); p.Status != protocol.CancelNotFound {
		t.Fatalf("cancel unknown: %+v", p)
	}
	env, err = c.Request(ctx, protocol.TypeAuthCancel, id, protocol.AuthCancelPayload{AuthSessionID: ok.AuthSessionID})
	if err != nil {
		t.Fatal(err)
	}
	if p := decode[protocol.AuthCancelAckPayload](t, env); p.Status != protocol.CancelIgnored || p.ConnectionDescriptor == nil {
		t.Fatalf("cancel finished: %+v", p)
	}
	// A refreshed binding with new display data is pushed.
	h, _ := f.Server.Channel(id)
	if err := h.UpdateBinding(ctx, connector.Binding{Data: []byte("t2"), DisplayName: "Ann B", AccountHint: "a***"}); err != nil {
		t.Fatal(err)
	}
	push, err = c.NextOfType(ctx, protocol.TypeDescriptorPush)
	if err != nil {
		t.Fatal(err)
	}
	if pd := decode[protocol.DescriptorPayload](t, push).ConnectionDescriptor; pd.Target.DisplayName != "Ann B" || pd.Target.AccountHint != "a***" {
		t.Fatalf("pushed target %+v", pd.Target)
	}
	// logout clears the binding and returns the post-logout descriptor.
	env, err = c.Request(ctx, protocol.TypeAuthLogout, id, protocol.EmptyPayload{})
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, env, protocol.TypeAuthLogoutAck)
	lo := decode[protocol.AuthLogoutAckPayload](t, env)
	if lo.Status != "ok" || lo.ConnectionDescriptor.Connection.Status != protocol.StatusCreated || lo.ConnectionDescriptor.ToolAvailable(sdkfixture.ToolEcho) {
		t.Fatalf("logout ack %+v", lo)
	}
	ch, err := f.Server.Channel(id)
	if err != nil {
		t.Fatal(err)
	}
	if _, bound := ch.Binding(); bound || ch.Authenticated() {
		t.Fatal("binding survived logout")
	}
	if _, unb := f.Target.Hooks(); len(unb) != 1 || unb[0] != connector.UnbindLogout {
		t.Fatalf("unbind hook %v", unb)
	}
}

func qrToken(t *testing.T, text string) string {
	t.Helper()
	u, err := url.Parse(text)
	if err != nil || u.Query().Get("t") == "" {
		t.Fatalf("qr text %q", text)
	}
	return u.Query().Get("t")
}

func TestQRSignIn(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	c, _ := f.Connect(t, "")
	ctx := testCtx(t)
	ack, err := c.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	id := ack.ConnectorChannelID
	env, err := c.Request(ctx, protocol.TypeAuthStart, id, protocol.AuthStartPayload{FlowID: sdkfixture.FlowQR})
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, env, protocol.TypeAuthStartAck)
	st := decode[protocol.AuthStatePayload](t, env)
	if st.Status != protocol.AuthPending || !strings.HasPrefix(st.QRCodeImage, "data:image/png;base64,") ||
		st.ExpiresAt <= time.Now().UnixMilli() || st.PollIntervalMillis <= 0 || st.AuthSessionID == "" {
		t.Fatalf("qr start %+v", st)
	}
	push, err := c.NextOfType(ctx, protocol.TypeDescriptorPush)
	if err != nil {
		t.Fatal(err)
	}
	if s := decode[protocol.DescriptorPayload](t, push).ConnectionDescriptor.Connection.Status; s != protocol.StatusAuthenticating {
		t.Fatalf("status during sign-in %s", s)
	}
	tok := qrToken(t, st.QRCodeText)
	// refresh issues a new code; the old token dies.
	env, err = c.Request(ctx, protocol.TypeAuthStatus, id, protocol.AuthStatusPayload{AuthSessionID: st.AuthSessionID, Refresh: true})
	if err != nil {
		t.Fatal(err)
	}
	re := decode[protocol.AuthStatePayload](t, env)
	tok2 := qrToken(t, re.QRCodeText)
	if re.Status != protocol.AuthPending || tok2 == tok {
		t.Fatalf("refresh %+v", re)
	}
	if err := f.Server.AuthScanned(ctx, tok); !isCode(err, protocol.CodeAuthSessionNotFound) {
		t.Fatalf("old token accepted: %v", err)
	}
	if info, err := f.Server.AuthLookup(tok2); err != nil || info.ChannelID != id || info.Status != protocol.AuthPending {
		t.Fatalf("lookup %+v %v", info, err)
	}
	if err := f.Server.AuthScanned(ctx, tok2); err != nil {
		t.Fatal(err)
	}
	env, err = c.Request(ctx, protocol.TypeAuthStatus, id, protocol.AuthStatusPayload{AuthSessionID: st.AuthSessionID})
	if err != nil {
		t.Fatal(err)
	}
	if s := decode[protocol.AuthStatePayload](t, env); s.Status != protocol.AuthScanned {
		t.Fatalf("after scan %+v", s)
	}
	if err := f.Server.AuthComplete(ctx, tok2, connector.Binding{Data: []byte("tkn"), DisplayName: "Bob", AccountHint: "b***"}); err != nil {
		t.Fatal(err)
	}
	env, err = c.Request(ctx, protocol.TypeAuthStatus, id, protocol.AuthStatusPayload{AuthSessionID: st.AuthSessionID})
	if err != nil {
		t.Fatal(err)
	}
	done := decode[protocol.AuthStatePayload](t, env)
	if done.Status != protocol.AuthAuthenticated || done.ConnectionDescriptor == nil ||
		done.ConnectionDescriptor.Target.DisplayName != "Bob" || done.QRCodeText != "" {
		t.Fatalf("authenticated %+v", done)
	}
	if err := f.Server.AuthFail(ctx, tok2, "late"); !isCode(err, protocol.CodeAuthSessionNotFound) {
		t.Fatalf("finished session changed: %v", err)
	}
	checkWire(t, c)
}

func TestQRCancelFailAndExpiry(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{QRTTL: 150 * time.Millisecond,
		Adjust: func(o *connector.Options) { o.AuthSessionTTL = 600 * time.Millisecond }})
	c, _ := f.Connect(t, "")
	ctx := testCtx(t)
	ack, err := c.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	id := ack.ConnectorChannelID
	start := func() protocol.AuthStatePayload {
		env, err := c.Request(ctx, protocol.TypeAuthStart, id, protocol.AuthStartPayload{FlowID: sdkfixture.FlowQR})
		if err != nil {
			t.Fatal(err)
		}
		return decode[protocol.AuthStatePayload](t, env)
	}
	status := func(sid string) protocol.AuthStatePayload {
		env, err := c.Request(ctx, protocol.TypeAuthStatus, id, protocol.AuthStatusPayload{AuthSessionID: sid})
		if err != nil {
			t.Fatal(err)
		}
		return decode[protocol.AuthStatePayload](t, env)
	}
	// cancel
	s1 := start()
	env, err := c.Request(ctx, protocol.TypeAuthCancel, id, protocol.AuthCancelPayload{AuthSessionID: s1.AuthSessionID})
	if err != nil {
		t.Fatal(err)
	}
	if p := decode[protocol.AuthCancelAckPayload](t, env); p.Status != protocol.CancelCanceled || p.AuthStatus != protocol.AuthUnauthenticated {
		t.Fatalf("cancel %+v", p)
	}
	ch, _ := f.Server.Channel(id)
	if ch.Status() != protocol.StatusCreated {
		t.Fatalf("status after cancel %s", ch.Status())
	}
	// fail
	s2 := start()
	if err := f.Server.AuthFail(ctx, qrToken(t, s2.QRCodeText), "user declined"); err != nil {
		t.Fatal(err)
	}
	if p := status(s2.AuthSessionID); p.Status != protocol.AuthFailed || p.Message != "user declined" {
		t.Fatalf("fail %+v", p)
	}
	// QR code expiry, then session expiry.
	s3 := start()
	eventually(t, "qr_refresh_required", func() bool { return status(s3.AuthSessionID).Status == protocol.AuthQRRefreshRequired })
	if err := f.Server.AuthComplete(ctx, qrToken(t, s3.QRCodeText), connector.Binding{Data: []byte("x")}); err == nil {
		t.Fatal("expired QR code completed a sign-in")
	}
	eventually(t, "expired", func() bool { return status(s3.AuthSessionID).Status == protocol.AuthExpired })
	if ch.Status() != protocol.StatusCreated {
		t.Fatalf("status after expiry %s", ch.Status())
	}
}
