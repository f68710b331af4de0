package telegram

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/connector/connectortest/e2e"
)

// TestE2E is the kit's end-to-end against the fake Bot API: conformance
// with the person in the chat writing on the suite's request and
// telegram_message_send as its tool; an in-process host with the echo agent
// answering in the chat exactly once, before and after a restart (with a
// message written while the connector was down), and refusing a wrong
// token; a SIGKILL in the middle of a streamed answer; the assistant side
// over the wire; the bot token in no log line, packet or refusal.
func TestE2E(t *testing.T) {
	e2e.Run(t, e2e.Target{
		New:       build(nil),
		Fake:      aliceChat,
		SignIn:    e2e.SignIn{Flow: FlowBot, Input: login},
		Secrets:   e2e.Secrets{testToken},
		Tool:      ToolSend,
		ToolArgs:  json.RawMessage(`{"text": "` + toolText + `"}`),
		BadSignIn: &e2e.BadSignIn{Input: map[string]string{"bot_token": "1:wrong-token-abcdefghijkl", "chat_id": "424242"}, Message: "does not accept this bot token"},
	})
}

const toolText = "posted by tool.invoke"

// aliceChat is the fake Bot API with Alice writing in the bound chat.
func aliceChat(tb testing.TB, _ string) *e2e.Fake {
	f, url := newFake(tb)
	return &e2e.Fake{Addr: url,
		Say: func(_ context.Context, text string) error {
			f.SendText(testToken, testChat, text)
			return nil
		},
		Said: func(context.Context) ([]string, error) { return texts(f.Sent(testChat)), nil },
		// getUpdates keeps what Alice writes while the connector is down.
		SayWhileDown: true,
		Streams:      true,
		// Two calls, each repeated once: with a tool_call_id
		// (tool.idempotency) and without context
		// (tool.idempotency-request-id); each posts once.
		Conformance: func(t *testing.T, _ *conformance.Report) {
			if n := e2e.Count(texts(f.Sent(testChat)), toolText); n != 2 {
				t.Errorf("the tool's text posted %d times, want twice, once per distinct call", n)
			}
		}}
}
