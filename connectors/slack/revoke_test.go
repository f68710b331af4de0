package slack

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/xconn/xconn/connectors/slack/slacktest"
	"github.com/xconn/xconn/protocol"
)

// TestRevoked: a token Slack stops accepting moves the channel to revoked
// and pushes its Descriptor (without the token): the bot token refused on
// a delivery (token_revoked, invalid_auth), which is then rejected not
// retryable; the app-level token revoked, which ends Socket Mode
// (apps.connections.open answers token_revoked); the bot token revoked
// while the connector was down, found when the channel is restored.
func TestRevoked(t *testing.T) {
	for _, tc := range []struct {
		name string
		// revoke makes Slack refuse a token; send reports whether a
		// final is sent afterwards (the refusal comes from delivering it).
		revoke func(f *slacktest.Server)
		send   bool
	}{
		{"bot token_revoked on send", func(f *slacktest.Server) { f.Revoke(botToken) }, true},
		{"bot invalid_auth on send", func(f *slacktest.Server) { f.FailNext("chat.postMessage", "invalid_auth", 0) }, true},
		{"app token_revoked", func(f *slacktest.Server) { f.Revoke(appToken) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, api := newFake(t, nil)
			cn := startConn(t, t.TempDir(), api, nil)
			cl := cn.Dial(t)
			ch, _ := cl.SignIn(FlowApp, login)
			waitStats(t, f, "a Socket Mode connection", func(s slacktest.SocketStats) bool { return s.Connections == 1 })
			tc.revoke(f)
			if tc.send {
				a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "after-revoke", Text: "hi"})
				if a.Status != protocol.AckRejected || a.Retryable == nil || *a.Retryable || a.Code != string(protocol.CodeConnectionNotAuthenticated) {
					t.Fatalf("ack %+v, want rejected %s, not retryable", a, protocol.CodeConnectionNotAuthenticated)
				}
			}
			expectRevoked(t, cl, ch)
		})
	}

	t.Run("bot token revoked while stopped", func(t *testing.T) {
		f, api := newFake(t, nil)
		dir := t.TempDir()
		cn := startConn(t, dir, api, nil)
		cl := cn.Dial(t)
		ch, _ := cl.SignIn(FlowApp, login)
		cl.Close()
		cn.Stop()
		f.Revoke(botToken)
		cn = startConn(t, dir, api, nil)
		cl = cn.Dial(t)
		open, err := cl.Open(t.Context(), ch)
		if err != nil {
			t.Fatal(err)
		}
		if st := open.ConnectionDescriptor.Connection.Status; st != protocol.StatusRevoked {
			t.Fatalf("restored channel %s, want revoked", st)
		}
	})
}

// expectRevoked waits for the revoked Descriptor of ch and checks that it
// holds no token.
func expectRevoked(t *testing.T, cl interface {
	ExpectStatus(context.Context, string, protocol.ConnectionStatus) (*protocol.Descriptor, error)
}, ch string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	d, err := cl.ExpectStatus(ctx, ch, protocol.StatusRevoked)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Contains(s, botToken) || strings.Contains(s, appToken) {
		t.Fatal("a token in the Descriptor")
	}
}
