package discord

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/connector/connectortest/e2e"
)

// TestE2E is the kit's end-to-end against the fake Discord: conformance
// with alice writing in #general on the suite's request and
// discord_message_send as its tool; an in-process host with the echo
// agent answering in the channel exactly once, before and after a restart
// (with a message written while the connector was down: no Gateway session
// delivers it, only the history fetch after the last published id finds
// it), and refusing a wrong token; a SIGKILL in the middle of a streamed
// answer; the assistant side over the wire; the token in no log line,
// packet, Descriptor or refusal.
func TestE2E(t *testing.T) {
	e2e.Run(t, e2e.Target{
		New:      build(nil),
		Fake:     aliceInGeneral,
		SignIn:   e2e.SignIn{Flow: FlowBot, Input: login},
		Secrets:  secrets,
		Tool:     ToolSend,
		ToolArgs: json.RawMessage(`{"text": "` + toolText + `"}`),
		MustPass: []string{"imv2.ack-duplicate", "imv2.final-with-file"},
		BadSignIn: &e2e.BadSignIn{Input: map[string]string{"bot_token": "MTIzNDU2Nzg5MDEyMzQ1Njc4.Gx9999.wrong-bot-token-0000000000000000000", "channel_id": general},
			Message: "does not accept this bot token"},
	})
}

const toolText = "posted by tool.invoke"

// aliceInGeneral is the fake Discord with alice writing in #general.
func aliceInGeneral(tb testing.TB, _ string) *e2e.Fake {
	f := newFake(tb, false)
	return &e2e.Fake{Addr: strings.TrimSuffix(f.APIURL(), "/api"),
		Say: func(_ context.Context, text string) error {
			f.Say(general, alice, text)
			return nil
		},
		Said:         func(context.Context) ([]string, error) { return texts(f.Sent(general)), nil },
		SayWhileDown: true,
		Streams:      true,
		Connected:    func() bool { return f.Connected(botToken) > 0 },
		Conformance: func(t *testing.T, rep *conformance.Report) {
			if n := e2e.Count(texts(f.Sent(general)), toolText); n != 2 {
				t.Errorf("the tool's text posted %d times, want twice, once per distinct call", n)
			}
		}}
}
