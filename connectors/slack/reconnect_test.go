package slack

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/slack/slacktest"
)

// TestReconnectExactlyOnce forces Socket Mode reconnects in the middle of
// traffic, as `xconn host --agent echo` sees them: Alice writes a message
// every 60 ms in #general while Slack twice ends the connection, with its
// disconnect envelope (refresh_requested, the socket closed after a grace)
// or by a dropped socket (no close handshake). Messages written while no
// connection is open are not delivered as events (only the catch-up from
// conversations.history finds them), and envelopes unacked when their
// connection closed are sent again with retry_attempt on the next one.
// Every message is answered exactly once, in one streamed Slack message,
// and at the end no envelope is left unacked.
func TestReconnectExactlyOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		force func(f *slacktest.Server)
		// lost: the message written right after force reaches no
		// connection (only the catch-up can find it).
		lost bool
	}{
		{"disconnect envelope", func(f *slacktest.Server) { f.Disconnect(appToken, 100*time.Millisecond) }, false},
		{"dropped socket", func(f *slacktest.Server) { f.Drop(appToken) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 12
			f, api := newFake(t, &slacktest.Options{AckTimeout: time.Second})
			cn := startConn(t, t.TempDir(), api, nil)
			h := e2e.StartHost(t, e2e.HostOptions{Secrets: append(e2e.Secrets{testKey}, secrets...)})
			uc, err := h.SignIn(t.Context(), "alice", h.AdmitConnector(cn.URL, testKey), e2e.SignIn{Flow: FlowApp, Input: login})
			if err != nil {
				t.Fatalf("sign-in: %+v, %v", uc, err)
			}
			waitStats(t, f, "a Socket Mode connection", func(s slacktest.SocketStats) bool { return s.Connections == 1 })
			before := f.Stats(appToken).Opened

			var want []string
			for i := range n {
				text := fmt.Sprintf("message %02d", i)
				want = append(want, "You said: "+text)
				if i == 3 || i == 8 {
					tc.force(f)
				}
				f.Say(general, alice, text)
				time.Sleep(60 * time.Millisecond)
			}
			waitSent(t, f, general, "every message answered", func(sent []slacktest.Message) bool {
				got := texts(sent)
				for _, w := range want {
					if e2e.Count(got, w) == 0 {
						return false
					}
				}
				return true
			})
			// Let redeliveries of unacked envelopes happen before counting.
			st := waitStats(t, f, "every envelope acked on a connection", func(s slacktest.SocketStats) bool {
				return s.Pending == 0 && s.Connections == 1
			})
			time.Sleep(1500 * time.Millisecond)
			if st.Opened-before < 2 {
				t.Errorf("%d connections opened after the first, want at least 2 (a reconnect after each forced end)", st.Opened-before)
			}
			if tc.lost && st.Dropped == 0 {
				t.Error("no message was written while the connection was down: the catch-up was not exercised")
			}
			sent := f.Sent(general)
			got := texts(sent)
			for _, w := range want {
				if c := e2e.Count(got, w); c != 1 {
					t.Errorf("%q posted %d times, want exactly once", w, c)
				}
			}
			if len(sent) != n {
				t.Errorf("the bot posted %d messages, want %d: %q", len(sent), n, got)
			}
			edited := 0
			for _, m := range sent {
				if len(m.Edits) > 0 {
					edited++
				}
				if !strings.HasPrefix(m.Text, "You said: message ") || m.ThreadTS != "" {
					t.Errorf("posted %+v: want a top-level echo", m)
				}
			}
			if edited == 0 {
				t.Error("no answer was streamed (posted, then edited with chat.update)")
			}
			t.Logf("%s: %d connections opened, %d envelope deliveries, %d acks, %d events dropped while no connection was open",
				tc.name, st.Opened, st.Deliveries, st.Acks, st.Dropped)
		})
	}
}
