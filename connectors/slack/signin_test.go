package slack

import (
	"maps"
	"net"
	"strings"
	"testing"
)

// TestSignInRefused: every refusal of slack_app_binding says what to fix,
// in a message without either token: malformed tokens and channel ids
// before Slack is asked, then Slack's answers to auth.test,
// apps.connections.open and conversations.history, a rate limit and an
// unreachable Web API. Slack's ratelimited is retryable, a bad token not.
func TestSignInRefused(t *testing.T) {
	f, api := newFake(t, nil)
	cn := startConn(t, t.TempDir(), api, nil)
	cl := cn.Dial(t)
	with := func(kv ...string) map[string]string {
		in := maps.Clone(login)
		for i := 0; i+1 < len(kv); i += 2 {
			in[kv[i]] = kv[i+1]
		}
		return in
	}
	for _, tc := range []struct {
		name  string
		input map[string]string
		fail  func()
		want  string
	}{
		{"bot token of a user", with("bot_token", "xoxp-1234-5678-abcdefgh"), nil, "bot_token is not a bot token"},
		{"app token swapped", with("app_token", botToken, "bot_token", appToken), nil, "bot_token is not a bot token"},
		{"app token malformed", with("app_token", "xapp-1"), nil, "app_token is not an app-level token"},
		{"channel malformed", with("channel", "#general"), nil, "channel must be a Slack channel id"},
		{"bot token unknown", with("bot_token", "xoxb-9999-wrong-token-abcdef"), nil, "does not accept this bot token"},
		{"bot token revoked", login, func() { f.FailNext("auth.test", "token_revoked", 0) }, "this bot token was revoked"},
		{"app token unknown", with("app_token", "xapp-1-A0OTHER-1-0123456789abcdef"), nil, "does not accept this app-level token"},
		{"app token without connections:write", login, func() { f.FailNext("apps.connections.open", "missing_scope", 0) }, "connections:write"},
		{"channel unknown", with("channel", "C0NOSUCH01"), nil, "the bot cannot see channel C0NOSUCH01"},
		{"bot not in channel", with("channel", "C0PRIVATE1"), nil, "invite it (/invite @xconn)"},
		{"history scope missing", login, func() { f.FailNext("conversations.history", "missing_scope", 0) }, "channels:history"},
		{"Slack internal error", login, func() { f.FailNext("auth.test", "internal_error", 0) }, "cannot be reached or is busy"},
		{"rate limited", login, func() { f.FailNext("auth.test", "", 30) }, "cannot be reached or is busy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fail != nil {
				tc.fail()
			}
			open, err := cl.Open(t.Context(), "")
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.SignInForm(t.Context(), open.ConnectorChannelID, FlowApp, tc.input)
			msg := signInMessage(err)
			if err != nil {
				msg += " " + err.Error()
			}
			if err == nil || !strings.Contains(msg, tc.want) {
				t.Fatalf("sign-in: %v, message %q; want %q", err, msg, tc.want)
			}
			if strings.Contains(msg, botToken) || strings.Contains(msg, appToken) {
				t.Fatal("a token in the message")
			}
		})
	}
	if st := f.Stats(appToken); st.Opened != 0 {
		t.Errorf("%d Socket Mode connections opened by refused sign-ins", st.Opened)
	}
	for _, frame := range cl.Transcript() {
		if strings.Contains(frame, botToken) || strings.Contains(frame, appToken) {
			t.Fatalf("a token in a packet: %s", frame)
		}
	}

	t.Run("unreachable", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := "http://" + ln.Addr().String() + "/api/"
		ln.Close()
		cn := startConn(t, t.TempDir(), dead, nil)
		cl := cn.Dial(t)
		open, err := cl.Open(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.SignInForm(t.Context(), open.ConnectorChannelID, FlowApp, login)
		if msg := signInMessage(err) + " " + errText(err); !strings.Contains(msg, "cannot be reached") || strings.Contains(msg, botToken) {
			t.Fatalf("sign-in: %v, message %q", err, msg)
		}
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
