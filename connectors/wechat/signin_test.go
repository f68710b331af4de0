package wechat_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/wechat"
	"github.com/xconn/xconn/connectors/wechat/wechattest"
	"github.com/xconn/xconn/protocol"
)

// TestQRSignIn: opening the QR URL signs the channel in; the Descriptor
// shows a redacted hint of the bot and no token; the fake saw only
// well-formed requests.
func TestQRSignIn(t *testing.T) {
	r := newRig(t, wechattest.Options{}, nil)
	c := r.Dial(t)
	_, st := r.signIn(c)
	acct, err := r.fake.Account("")
	if err != nil {
		t.Fatal(err)
	}
	d := st.ConnectionDescriptor
	if d == nil || d.Connection.Status != protocol.StatusConnected {
		t.Fatalf("descriptor %+v, want connected", d)
	}
	if hint := d.Target.AccountHint; hint == "" || strings.Contains(hint, acct.BotID) {
		t.Errorf("account hint %q, want a redacted hint of %s", hint, acct.BotID)
	}
	if strings.Contains(strings.Join(c.Transcript(), "\n"), acct.Token) {
		t.Error("the bot token reached the wire")
	}
	if got := r.fake.LastLocalTokens(); len(got) != 0 {
		t.Errorf("local_token_list %v for a new channel, want empty", got)
	}
	r.noViolations()
}

// TestQRExpiryRefresh: an expired code is replaced when xAgent refreshes
// (the new code signs in); after MaxQRRefreshes the sign-in fails.
func TestQRExpiryRefresh(t *testing.T) {
	// A long QRTTL: the refresh must come from iLink's expired, not from
	// the SDK's own code lifetime.
	r := newRig(t, wechattest.Options{}, func(o *wechat.Options) { o.QRTTL = time.Minute })
	r.fake.ScriptQR(wechattest.QRExpired)
	c := r.Dial(t)
	ch := r.open(c)
	var opened []string
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	st, err := c.SignInQR(ctx, ch, wechat.FlowQR, func(ctx context.Context, qr string) error {
		opened = append(opened, qr)
		return e2e.OpenURL(ctx, qr)
	})
	if err != nil || st.Status != protocol.AuthAuthenticated {
		t.Fatalf("sign-in after a refresh: %v", err)
	}
	if len(opened) != 2 || opened[0] == opened[1] || r.fake.QRCodes() != 2 {
		t.Fatalf("opened %q, %d codes issued; want two different codes", opened, r.fake.QRCodes())
	}

	for range wechat.MaxQRRefreshes + 1 {
		r.fake.ScriptQR(wechattest.QRExpired)
	}
	ch2 := r.open(c)
	_, err = c.SignInQR(ctx, ch2, wechat.FlowQR, e2e.OpenURL)
	var se *connectortest.SignInError
	if !errors.As(err, &se) || se.State.Status != protocol.AuthFailed || !strings.Contains(se.State.Message, "expired") {
		t.Fatalf("sign-in with codes that always expire: %v, want failed saying so", err)
	}
	if n := r.fake.QRCodes(); n != 2+wechat.MaxQRRefreshes+1 {
		t.Errorf("%d codes issued, want %d", n, 2+wechat.MaxQRRefreshes+1)
	}
	r.noViolations()
}

// TestQRRedirect: scaned_but_redirect moves status polling to the redirect
// host; the main host never confirms a redirected code.
func TestQRRedirect(t *testing.T) {
	r := newRig(t, wechattest.Options{}, nil)
	r.fake.ScriptQR(wechattest.QRScanned, wechattest.QRScannedRedirect)
	c := r.Dial(t)
	_, st := r.signIn(c)
	if st.Status != protocol.AuthAuthenticated {
		t.Fatalf("status %s", st.Status)
	}
	r.noViolations()
}

// TestQRVerifyCode: need_verifycode and verify_code_blocked end the sign-in
// with an actionable message.
func TestQRVerifyCode(t *testing.T) {
	r := newRig(t, wechattest.Options{}, nil)
	c := r.Dial(t)
	for _, tc := range []struct{ status, want string }{
		{wechattest.QRNeedVerifyCode, "verification number"},
		{wechattest.QRVerifyCodeBlocked, "too many wrong verification numbers"},
	} {
		r.fake.ScriptQR(tc.status)
		ch := r.open(c)
		ctx, cancel := context.WithTimeout(t.Context(), wait)
		_, err := c.SignInQR(ctx, ch, wechat.FlowQR, e2e.OpenURL)
		cancel()
		var se *connectortest.SignInError
		if !errors.As(err, &se) || se.State.Status != protocol.AuthFailed || !strings.Contains(se.State.Message, tc.want) ||
			!strings.Contains(se.State.Message, "start the sign-in again") {
			t.Errorf("%s: %v, want failed with %q", tc.status, err, tc.want)
		}
	}
}

// TestQRBindedRedirect: signing an expired channel in again sends its own
// token in local_token_list; binded_redirect reuses its binding.
func TestQRBindedRedirect(t *testing.T) {
	r := newRig(t, wechattest.Options{}, nil)
	c := r.Dial(t)
	ch, _ := r.signIn(c)
	acct, _ := r.fake.Account("")
	r.fake.ScriptQR(wechattest.QRBindedRedirect)
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	st, err := c.SignInQR(ctx, ch, wechat.FlowQR, func(context.Context, string) error { return nil })
	if err != nil || st.Status != protocol.AuthAuthenticated {
		t.Fatalf("binded_redirect: %v", err)
	}
	if got := r.fake.LastLocalTokens(); len(got) != 1 || got[0] != acct.Token {
		t.Errorf("local_token_list has %d tokens, want the channel's own", len(got))
	}
}
