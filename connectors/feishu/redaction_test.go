package feishu

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/xconn/xconn/protocol"
)

// TestSecretRedaction: the app secret and every tenant token the fake
// issued never appear in the connector's logs (at debug level), in the
// Descriptors and auth states, in tool results or errors, or in acks —
// through a sign-in, a refused sign-in, an inbound message, a token
// revoked and refreshed (99991663), a refused delivery, a rate limit and
// a tool call.
func TestSecretRedaction(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	// A refused sign-in whose input carries a secret-looking value.
	open, err := cl.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	const wrong = "wrongSecretValue-0123456789abcdef"
	if _, err := cl.SignInForm(ctx, open.ConnectorChannelID, FlowApp, map[string]string{"app_id": testApp, "app_secret": wrong}); err == nil {
		t.Fatal("a wrong secret signed in")
	}

	ch, _ := cl.SignIn(FlowApp, login)
	say(t, f, "hello")
	cl.ExpectAccept(ch)

	// Tokens revoked: the next call gets 99991663 and retries with a fresh one.
	f.RevokeTokens()
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "r1", Text: "after a refresh"}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	// A refusal and a rate limit beyond MaxRetryWait: rejected acks.
	f.FailNext("/open-apis/im/v1/messages", http.StatusBadRequest, 230027, 0)
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "r2", Text: "refused"}); ack.Status != protocol.AckRejected {
		t.Fatalf("ack %+v", ack)
	}
	f.FailNext("/open-apis/im/v1/messages", http.StatusTooManyRequests, 99991400, 60)
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "r3", Text: "limited"}); ack.Status != protocol.AckRejected || ack.Retryable == nil || !*ack.Retryable {
		t.Fatalf("ack %+v", ack)
	}
	// A tool call that succeeds and one that fails.
	if _, err := cl.InvokeRaw(ctx, ch, ToolSend, map[string]any{"text": "by the tool"}, "call-ok"); err != nil {
		t.Fatal(err)
	}
	f.FailNext("/open-apis/im/v1/messages", http.StatusBadRequest, 230027, 0)
	if _, err := cl.InvokeRaw(ctx, ch, ToolSend, map[string]any{"text": "refused"}, "call-refused"); err == nil {
		t.Fatal("the refused tool call succeeded")
	}

	tokens := f.IssuedTokens()
	if len(tokens) < 2 {
		t.Fatalf("the fake issued %d tokens, want a refresh", len(tokens))
	}
	secrets := append([]string{testSecret, wrong}, tokens...)
	check := func(where, text string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s contains a secret or token (%.6s…)", where, s)
			}
		}
	}
	frames := cl.Transcript()
	for _, fr := range frames {
		check("a frame", fr)
	}
	joined := strings.Join(frames, "\n")
	for _, want := range []string{`"connection_descriptor"`, `"type":"chat.message.ack"`, `"type":"tool.invoke.ack"`} {
		if !strings.Contains(strings.ReplaceAll(joined, `": "`, `":"`), want) {
			t.Errorf("the transcript has no %s to check", want)
		}
	}
	check("the logs", cn.Logs.String())
	if !strings.Contains(cn.Logs.String(), "feishu") {
		t.Error("no connector log lines to check")
	}
}
