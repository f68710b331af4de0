package dingtalk

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/dingtalk/dingtalktest"
)

// TestE2E is the kit's end-to-end against the fake DingTalk: the
// conformance suite with alice writing 1:1 to the robot over the app's
// Stream connection and dingtalk_message_send as its tool; an in-process
// host with the echo agent answering alice exactly once, before and after
// a restart (the kit waits for the Stream connection to close when the
// connector stops), and refusing a wrong Client Secret; a SIGKILL in the
// middle of an answer (without a card template nothing streams: the final
// is sent once, after the restart); the assistant side over the wire; the
// Client Secret, the API key and every access token the fake issued in no
// log line, packet, ack or refusal.
//
// Nobody writes while the connector is down (SayWhileDown is false):
// DingTalk pushes a bot message once, over a live Stream connection, and
// keeps nothing for a client that is not connected (README, "Messages
// sent while the connector is down").
func TestE2E(t *testing.T) {
	e2e.Run(t, e2e.Target{
		Fake:     chat,
		New:      build(nil),
		SignIn:   e2e.SignIn{Flow: FlowApp, Input: login},
		MustPass: []string{"imv2.ack-duplicate", "imv2.ack-conflict", "imv2.final-with-file"},
		// The suite's tool calls come before anyone wrote 1:1, when there
		// is no default conversation yet: they fail, and a repeat shows
		// nothing.
		MaySkip:  []string{"tool.idempotency", "tool.idempotency-request-id"},
		Tool:     ToolSend,
		ToolArgs: json.RawMessage(`{"text": "` + toolText + `"}`),
		Secrets:  e2e.Secrets{testSecret},
		BadSignIn: &e2e.BadSignIn{Input: map[string]string{"client_id": testClient, "client_secret": "wrongClientSecret-0123456789abcdef"},
			Message: "DingTalk refused the app credentials"},
	})
}

const toolText = "posted by tool.invoke"

// chat is the fake DingTalk with alice writing to the robot 1:1.
func chat(tb testing.TB, _ string) *e2e.Fake {
	f, url := newFake(tb)
	return chatOn(f, url)
}

// chatOn is the kit's view of the fake f at url.
func chatOn(f *dingtalktest.Server, url string) *e2e.Fake {
	return &e2e.Fake{Addr: url,
		Say: func(ctx context.Context, text string) error {
			if err := f.WaitConnected(ctx, testClient); err != nil {
				return err
			}
			_, resp, err := f.Say(ctx, dingtalktest.Message{ClientID: testClient, Text: text})
			if err == nil && resp.Code != http.StatusOK {
				return &ackError{resp.Code}
			}
			return err
		},
		Said:      func(context.Context) ([]string, error) { return texts(f.Sent(aliceConv)), nil },
		Connected: func() bool { return f.Connected(testClient) },
		Secrets:   func() e2e.Secrets { return e2e.Secrets(f.IssuedTokens()) },
		Conformance: func(t *testing.T, _ *conformance.Report) {
			if n := e2e.Count(texts(f.Sent(aliceConv)), toolText); n > 1 {
				t.Errorf("the tool's text was sent %d times", n)
			}
		}}
}

// ackError is a bot message the connector did not ack 200.
type ackError struct{ code int }

func (e *ackError) Error() string {
	return "the connector acked the bot message " + http.StatusText(e.code)
}
