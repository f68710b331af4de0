package slack

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/slack/slacktest"
)

// TestE2E is the kit's end-to-end against the fake Slack: conformance with
// a person in the bound channel writing on the suite's request and
// slack_message_send as its tool; an in-process host with the echo agent
// answering in the channel exactly once, before and after a restart (with
// a message written while the connector was down, which the fake does not
// deliver as an event: only the conversations.history catch-up finds it),
// and refusing a wrong token; a SIGKILL in the middle of a streamed answer;
// the assistant side over the wire; neither token in any log line, packet
// or refusal.
func TestE2E(t *testing.T) {
	e2e.Run(t, e2e.Target{
		New:       build(nil),
		Fake:      aliceInGeneral,
		SignIn:    e2e.SignIn{Flow: FlowApp, Input: login},
		Secrets:   secrets,
		Tool:      ToolSend,
		ToolArgs:  json.RawMessage(`{"text": "` + toolText + `"}`),
		BadSignIn: &e2e.BadSignIn{Input: map[string]string{"app_token": appToken, "bot_token": "xoxb-0000-wrong-token-abcdefgh", "channel": general}, Message: "does not accept this bot token"},
	})
}

const toolText = "posted by tool.invoke"

// aliceInGeneral is the fake Slack with Alice writing in #general.
func aliceInGeneral(tb testing.TB, _ string) *e2e.Fake {
	f, url := newFake(tb, nil)
	return &e2e.Fake{Addr: url,
		Say: func(_ context.Context, text string) error {
			f.Say(general, alice, text)
			return nil
		},
		Said:         func(context.Context) ([]string, error) { return texts(f.Sent(general)), nil },
		SayWhileDown: true,
		Streams:      true,
		Connected:    func() bool { return f.Stats(appToken).Connections > 0 },
		Conformance: func(t *testing.T, _ *conformance.Report) {
			if n := e2e.Count(texts(f.Sent(general)), toolText); n != 2 {
				t.Errorf("the tool's text posted %d times, want twice, once per distinct call", n)
			}
		}}
}

var _ = slacktest.Options{}
