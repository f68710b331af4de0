package discord

import (
	"fmt"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/discord/discordtest"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
)

// TestHostAcrossGatewayReconnects runs the echo agent behind a real host
// while the Gateway goes away in each way Discord makes it go: RECONNECT
// (op 7), a close frame, a dropped socket, a session Discord ends
// (INVALID_SESSION op 9 on a live connection) and a RESUME refused after a
// drop. Alice writes while the connection is gone; after the resume (or
// the new IDENTIFY and the history fetch) every message is answered
// exactly once, in order. A resumable loss must RESUME with the sequence
// number (no new IDENTIFY); the time from the loss to RESUMED is logged.
func TestHostAcrossGatewayReconnects(t *testing.T) {
	f := newFake(t, false)
	cn := startConn(t, f, "", nil)
	h := e2e.StartHost(t, e2e.HostOptions{Secrets: secrets.With(testKey)})
	if _, err := h.SignIn(t.Context(), "alice", h.AdmitConnector(cn.URL, testKey), e2e.SignIn{Flow: FlowBot, Input: login}); err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	e2e.Eventually(t, "the Gateway connection", func() bool { return f.Connected(botToken) == 1 })
	var want []string
	say := func(text string) {
		f.Say(general, alice, text)
		want = append(want, host.EchoText(&host.UserMessage{Text: text}))
	}
	answered := func(what string) {
		t.Helper()
		waitSent(t, f, general, what, func(s []discordtest.Sent) bool { return len(s) >= len(want) })
		e2e.Eventually(t, "the connector accepted every reply", func() bool {
			return h.Acks(protocol.ToHost, protocol.AckAccepted) >= len(want)
		})
	}
	say("before any reconnect")
	answered("the first reply")

	for _, tc := range []struct {
		name   string
		force  func()
		resume bool // the session survives: RESUME, no IDENTIFY
	}{
		{"op 7 RECONNECT", func() { f.Reconnect(botToken) }, true},
		{"close 4000", func() { f.Drop(botToken, discordtest.CloseUnknownError) }, true},
		{"dropped socket", func() { f.Drop(botToken, 0) }, true},
		{"op 9 INVALID_SESSION", func() { f.InvalidSession(botToken) }, false},
		{"RESUME refused", func() { f.InvalidateSessions(botToken); f.Drop(botToken, 0) }, false},
	} {
		resumes, identifies := f.Resumes(botToken), f.Identifies(botToken)
		start := time.Now()
		tc.force()
		say(tc.name + ": during")
		say(tc.name + ": right after")
		e2e.Eventually(t, tc.name+": connected again", func() bool {
			if tc.resume {
				return f.Resumes(botToken) > resumes && f.Connected(botToken) == 1
			}
			return f.Identifies(botToken) > identifies && f.Connected(botToken) == 1
		})
		took := time.Since(start)
		say(tc.name + ": after")
		answered(tc.name)
		if tc.resume && f.Identifies(botToken) != identifies {
			t.Errorf("%s: %d new IDENTIFY, want a RESUME only", tc.name, f.Identifies(botToken)-identifies)
		}
		t.Logf("%s: Gateway lost → %s in %v", tc.name, map[bool]string{true: "RESUMED", false: "READY (new session)"}[tc.resume],
			took.Round(time.Millisecond))
	}
	// Every reply once, in the order the messages were written, and
	// nothing else.
	got := texts(f.Sent(general))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the bot posted\n%q\nwant\n%q", got, want)
	}
	for _, s := range f.Sent(general) {
		if s.ReplyTo == "" {
			t.Errorf("%q is not a message reply", s.Text)
		}
	}
}
