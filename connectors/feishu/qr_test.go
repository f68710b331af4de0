package feishu

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/protocol"
)

const (
	qrApp    = "cli_qrcreated0123456789"
	qrSecret = "qrCreatedAppSecret-0123456789abcdef"
)

// qrSignIn runs feishu_qr_create_app with confirm playing the user.
func qrSignIn(t *testing.T, cl *e2e.Client, confirm func(context.Context, string) error) (string, *protocol.AuthStatePayload, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	open, err := cl.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := cl.SignInQR(ctx, open.ConnectorChannelID, FlowQR, confirm)
	return open.ConnectorChannelID, st, err
}

// TestQRCreateApp: the QR text is the registration's verification URL
// with the SDK's parameters, the app's name and addons asking for the
// connector's scopes and message event; pending and slow_down answers
// keep the code pending (slow_down adding 5 s to the interval); the created app's credentials are verified,
// bound, and its long connection delivers messages.
func TestQRCreateApp(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	card, err := connectortest.FetchCard(t.Context(), cn.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(card.AuthFlows) != 2 || card.AuthFlows[1].ID != FlowQR || card.AuthFlows[1].Type != "qr_login" {
		t.Fatalf("flows %+v", card.AuthFlows)
	}
	cl := cn.Dial(t)
	f.PollAnswer("authorization_pending")
	f.PollAnswer("slow_down")
	start := time.Now()
	ch, st, err := qrSignIn(t, cl, func(_ context.Context, text string) error {
		reg, err := f.ScanRegistration(text)
		if err != nil {
			return err
		}
		if reg.Name != DefaultRegistrationName || !reg.CreateOnly || reg.From != "sdk" || reg.TP != "sdk" ||
			reg.Source != "go-sdk/"+registrationSource || reg.Preset {
			return errors.New("registration parameters: " + strings.Join([]string{reg.Name, reg.Source, reg.From, reg.TP}, ","))
		}
		for _, s := range []string{"im:message.p2p_msg:readonly", "im:message.group_at_msg:readonly", "im:message:send_as_bot", "im:resource"} {
			if !slices.Contains(reg.TenantScopes, s) {
				return errors.New("scope missing: " + s)
			}
		}
		if !slices.Equal(reg.TenantEvents, []string{"im.message.receive_v1"}) {
			return errors.New("events " + strings.Join(reg.TenantEvents, ","))
		}
		// The user confirms after a while.
		go func() { time.Sleep(300 * time.Millisecond); f.ApproveRegistration(qrApp, qrSecret) }()
		return nil
	})
	if err != nil {
		t.Fatalf("QR sign-in: %v", err)
	}
	if st.Status != protocol.AuthAuthenticated || st.ConnectionDescriptor == nil ||
		!strings.Contains(st.ConnectionDescriptor.Target.DisplayName, qrApp) {
		t.Fatalf("state %+v", st)
	}
	if f.Polls() < 3 {
		t.Fatalf("polls %d: the slow_down and pending answers were not polled through", f.Polls())
	}
	// slow_down adds 5 s to the interval (§2.1).
	if took := time.Since(start); took < slowDownStep {
		t.Fatalf("signed in after %v: slow_down was not honoured", took)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := f.SendText(ctx, qrApp, testChat, "hi new app"); err != nil {
		t.Fatal(err)
	}
	if got := cl.ExpectAccept(ch); got.Text != "hi new app" {
		t.Fatalf("published %+v", got)
	}
	for _, frame := range cl.Transcript() {
		if strings.Contains(frame, qrSecret) {
			t.Fatalf("the created app's secret is in a frame: %s", frame)
		}
	}
	if strings.Contains(cn.Logs.String(), qrSecret) {
		t.Fatal("the created app's secret is in the logs")
	}
}

// TestQRCreateAppEnds: access_denied fails the sign-in, expired_token
// expires it, and an unknown error fails it; the channel stays signed out.
func TestQRCreateAppEnds(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	for _, tc := range []struct {
		answer string
		want   protocol.AuthStatus
		msg    string
	}{
		{"access_denied", protocol.AuthFailed, "refused in Feishu"},
		{"expired_token", protocol.AuthExpired, "expired"},
		{"invalid_client", protocol.AuthFailed, "invalid_client"},
	} {
		t.Run(tc.answer, func(t *testing.T) {
			_, _, err := qrSignIn(t, cl, func(_ context.Context, text string) error {
				if _, err := f.ScanRegistration(text); err != nil {
					return err
				}
				f.PollAnswer(tc.answer)
				return nil
			})
			var se *connectortest.SignInError
			if !errors.As(err, &se) || se.State.Status != tc.want || !strings.Contains(se.State.Message, tc.msg) {
				t.Fatalf("sign-in ended with %v, want %s %q", err, tc.want, tc.msg)
			}
		})
	}
}

// TestQRCreateAppRefused: credentials that Feishu then refuses for a
// tenant token fail the sign-in without showing the secret.
func TestQRCreateAppRefused(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	_, _, err := qrSignIn(t, cl, func(_ context.Context, text string) error {
		if _, err := f.ScanRegistration(text); err != nil {
			return err
		}
		f.ApproveRegistration(qrApp, qrSecret)
		f.AddApp(qrApp, "another-secret-than-the-registered-one")
		return nil
	})
	var se *connectortest.SignInError
	if !errors.As(err, &se) || se.State.Status != protocol.AuthFailed || !strings.Contains(se.State.Message, "refused its credentials") ||
		strings.Contains(se.State.Message, qrSecret) {
		t.Fatalf("sign-in ended with %v", err)
	}
}
