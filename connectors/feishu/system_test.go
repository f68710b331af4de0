package feishu

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/feishu/feishutest"
)

// TestE2E is the kit's end-to-end against the fake open platform: the
// conformance suite with alice writing over the long connection on the
// suite's request and feishu_message_send as its tool (Feishu gives a bot
// no chat until a person writes: the suite then opens the conversation
// through the hook and sends its final again, so every check applies); an
// in-process host with the echo agent answering the p2p chat exactly once,
// before and after a restart that closes the long connection, and refusing
// a wrong app secret; a SIGKILL in the middle of a streamed answer; the
// assistant side over the wire; the app secret and every tenant token the
// fake issued in no log line, packet or refusal.
func TestE2E(t *testing.T) {
	e2e.Run(t, e2e.Target{
		Fake:     p2pChat,
		New:      build(nil, nil),
		SignIn:   e2e.SignIn{Flow: FlowApp, Input: login},
		MustPass: []string{"imv2.ack-duplicate", "imv2.ack-conflict", "imv2.final-with-file", "imv2.delta-final"},
		// The suite's tool calls come before any person wrote, when there
		// is no chat to send to: they fail, and a repeat shows nothing.
		MaySkip:   []string{"tool.idempotency", "tool.idempotency-request-id"},
		Tool:      ToolSend,
		ToolArgs:  json.RawMessage(`{"text": "` + toolText + `"}`),
		Secrets:   e2e.Secrets{testSecret},
		BadSignIn: &e2e.BadSignIn{Input: map[string]string{"app_id": testApp, "app_secret": "wrongSecretValue-0123456789abcdef"}, Message: "Feishu refused the app credentials"},
	})
}

const toolText = "posted by tool.invoke"

// p2pChat is the fake open platform with alice writing to the bot in
// their p2p chat over the long connection.
func p2pChat(tb testing.TB, _ string) *e2e.Fake {
	f, url := newFake(tb)
	return &e2e.Fake{Addr: url,
		Say: func(ctx context.Context, text string) error {
			_, err := f.SendText(ctx, testApp, testChat, text)
			return err
		},
		Said:      func(context.Context) ([]string, error) { return texts(f.Sent(testChat)), nil },
		Connected: func() bool { return f.Connected(testApp) },
		Secrets:   func() e2e.Secrets { return e2e.Secrets(f.IssuedTokens()) },
		// The answer streamed again after a crash sends its first delta
		// with the same uuid, which Feishu dedupes: the message posted
		// before the crash is the one edited, and no partial stays.
		Streams: true,
		// The suite invokes the tool before its Inbound hook, when there is
		// no default chat yet: the call is answered with an error, and the
		// text is sent at most once.
		Conformance: func(t *testing.T, _ *conformance.Report) {
			if n := e2e.Count(texts(f.Sent(testChat)), toolText); n > 1 {
				t.Errorf("the tool's text was sent %d times", n)
			}
		}}
}

// texts are the texts of the messages sent, as they read now.
func texts(sent []feishutest.Sent) []string {
	out := make([]string, len(sent))
	for i, s := range sent {
		out[i] = s.Text()
	}
	return out
}

// TestConformanceWithoutHook: as xconn check runs it (no inbound hook, no
// user wrote to the bot yet), every MUST that applies passes; the outbound
// chat checks are skipped, saying a conversation is needed.
func TestConformanceWithoutHook(t *testing.T) {
	_, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	rep, err := conformance.Check(t.Context(), cn.URL, conformance.Options{
		APIKey: testKey, AuthFlow: FlowApp, AuthInput: login})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep.Summary())
	if _, failed, _ := rep.Counts(); !rep.OK() || failed != 0 {
		t.Fatalf("failed %v", rep.Failed())
	}
	if r, _ := rep.Result("imv2.ack-accepted"); r.Status != conformance.Skip || !strings.Contains(r.Reason, "target_delivery_failed") {
		t.Fatalf("imv2.ack-accepted: %s %q, want a skip naming the missing conversation", r.Status, r.Reason)
	}
}
