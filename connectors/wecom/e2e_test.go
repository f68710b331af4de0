package wecom

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/wecom/wecomtest"
)

// TestE2E is the kit's end-to-end for an application in callback mode,
// against the fake WeCom: the conformance suite with alice writing through
// a signed, encrypted callback on the suite's request and
// wecom_message_send as its tool; an in-process host with the echo agent
// answering alice exactly once, before and after a restart, and refusing a
// wrong secret; a SIGKILL in the middle of an answer (an application
// cannot edit a message: the final is sent once, after the restart); the
// assistant side over the wire; the secret, token, EncodingAESKey and
// every access token the fake issued in no log line, packet or refusal.
func TestE2E(t *testing.T) {
	e2e.Run(t, e2e.Target{
		Fake:     appChat,
		New:      build(nil, nil),
		SignIn:   e2e.SignIn{Flow: FlowApp, Input: login},
		MustPass: []string{"imv2.ack-duplicate", "imv2.ack-conflict", "imv2.final-with-file"},
		// The suite's tool calls come before anyone wrote, when there is
		// no recipient yet: they fail, and a repeat shows nothing.
		MaySkip:  []string{"tool.idempotency", "tool.idempotency-request-id"},
		Tool:     ToolSend,
		ToolArgs: json.RawMessage(`{"text": "` + toolText + `"}`),
		Secrets:  secrets,
		BadSignIn: &e2e.BadSignIn{Input: map[string]string{"corp_id": testCorp, "agent_id": "1000002", "secret": "wrongSecretValue-0123456789abcdef",
			"token": testToken, "encoding_aes_key": testAESKey}, Message: "WeCom refused the application credentials"},
	})
}

const toolText = "posted by tool.invoke"

// appChat is the fake WeCom with alice writing to the application; its
// callbacks go to the connector at connURL.
func appChat(tb testing.TB, connURL string) *e2e.Fake {
	f, url := newFake(tb, connURL)
	return &e2e.Fake{Addr: url,
		Say: func(ctx context.Context, text string) error {
			_, err := f.SendText(ctx, testCorp, testAgent, testUser, text)
			return err
		},
		Said:    func(context.Context) ([]string, error) { return texts(f.Sent(testUser)), nil },
		Secrets: func() e2e.Secrets { return e2e.Secrets(f.IssuedTokens()) },
		Conformance: func(t *testing.T, _ *conformance.Report) {
			if n := e2e.Count(texts(f.Sent(testUser)), toolText); n > 1 {
				t.Errorf("the tool's text was sent %d times", n)
			}
		}}
}

func texts(sent []wecomtest.Sent) []string {
	out := make([]string, len(sent))
	for i, s := range sent {
		out[i] = s.Content
	}
	return out
}
