package slack

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connectors/slack/slacktest"
	"github.com/xconn/xconn/protocol"
)

// TestStreamRetryAfter: a streamed answer is one Slack message edited
// with chat.update. When chat.update answers HTTP 429 with a Retry-After
// within MaxRetryWait (3 s here), the final waits it out and edits once
// more; with a longer one the final is rejected retryable at once, and
// chat.update stays held for the Retry-After: a redelivery inside it is
// rejected again without calling Slack, one after it edits the message.
// No answer is ever posted twice.
func TestStreamRetryAfter(t *testing.T) {
	f, api := newFake(t, nil)
	cn := startConn(t, t.TempDir(), api, nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)

	cl.Delta(ch, "a1", 1, "Hello")
	waitSent(t, f, general, "the streamed message posted", func(s []slacktest.Message) bool { return len(s) == 1 })
	f.FailNext("chat.update", "", 1)
	start := time.Now()
	if a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "a1", Text: "Hello world"}); a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", a)
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Errorf("the final was edited %v after a 429 with Retry-After: 1", d)
	}
	if n := f.Calls("chat.update"); n != 2 {
		t.Errorf("chat.update called %d times, want 2 (the 429, then the edit)", n)
	}
	if s := f.Sent(general); len(s) != 1 || s[0].Text != "Hello world" || len(s[0].Edits) != 1 {
		t.Fatalf("sent %+v, want one message edited once into the final", s)
	}

	cl.Delta(ch, "a2", 1, "Second")
	waitSent(t, f, general, "the second streamed message posted", func(s []slacktest.Message) bool { return len(s) == 2 })
	f.FailNext("chat.update", "", 4)
	calls := f.Calls("chat.update")
	start = time.Now()
	a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "a2", Text: "Second answer"})
	if a.Status != protocol.AckRejected || a.Retryable == nil || !*a.Retryable {
		t.Fatalf("ack %+v, want rejected retryable", a)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a 4 s Retry-After beyond MaxRetryWait was waited on for %v", d)
	}
	a = cl.Final(ch, protocol.ChatMessagePayload{MessageID: "a2", Text: "Second answer"})
	if a.Status != protocol.AckRejected || a.Retryable == nil || !*a.Retryable {
		t.Fatalf("redelivery inside the Retry-After: ack %+v, want rejected retryable", a)
	}
	if n := f.Calls("chat.update") - calls; n != 1 {
		t.Errorf("chat.update called %d times while Slack held it, want 1 (the 429)", n)
	}
	time.Sleep(time.Until(start.Add(4 * time.Second)))
	if a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "a2", Text: "Second answer"}); a.Status != protocol.AckAccepted {
		t.Fatalf("redelivery after the Retry-After: ack %+v", a)
	}
	if s := f.Sent(general); len(s) != 2 || s[1].Text != "Second answer" {
		t.Fatalf("sent %q, want the second streamed message edited into its final", texts(s))
	}
}

// TestLongAndEscaped: a final of 9,000 characters is posted as three
// messages of at most 4,000 characters that add up to it; &, < and > are
// escaped as Slack asks, so "<!channel>" in an answer notifies nobody.
func TestLongAndEscaped(t *testing.T) {
	f, api := newFake(t, nil)
	cn := startConn(t, t.TempDir(), api, nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	long := strings.Repeat("ab cd é ", 1125) // 9,000 runes
	if a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "long", Text: long}); a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", a)
	}
	sent := f.Sent(general)
	if len(sent) != 3 {
		t.Fatalf("%d messages, want 3", len(sent))
	}
	for _, m := range sent {
		if n := len([]rune(m.Text)); n > MaxTextLen || n == 0 {
			t.Errorf("a part of %d characters", n)
		}
	}
	if got := strings.Join(texts(sent), ""); got != long {
		t.Errorf("the parts add up to %d characters, want the %d of the answer", len([]rune(got)), len([]rune(long)))
	}
	if a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "esc", Text: "if a < b && b > c <!channel>"}); a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", a)
	}
	if got, want := f.Sent(general)[3].Text, "if a &lt; b &amp;&amp; b &gt; c &lt;!channel&gt;"; got != want {
		t.Errorf("posted %q, want %q", got, want)
	}
}

// TestSendTool: slack_message_send posts its text and then shares its file
// (an upload) in the bound conversation and returns both references; on
// an unbound channel nobody has written to yet it fails, saying why.
func TestSendTool(t *testing.T) {
	f, api := newFake(t, nil)
	cn := startConn(t, t.TempDir(), api, nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	ref := cl.Put(ch, "report.png", "image/png", pngBytes)
	res, err := connectortest.Invoke[SendResult](t.Context(), cl.Client, ch, ToolSend, map[string]any{"text": "the report", "file": ref})
	if err != nil {
		t.Fatal(err)
	}
	sent := f.Sent(general)
	if len(sent) != 2 || sent[0].Text != "the report" || len(sent[1].Files) != 1 || string(sent[1].Files[0].Data) != string(pngBytes) {
		t.Fatalf("sent %+v", sent)
	}
	if len(res.MessageIDs) != 2 || res.MessageIDs[0] != (msgRef{Channel: general, TS: sent[0].TS}) ||
		res.MessageIDs[1] != (msgRef{Channel: general, File: sent[1].Files[0].ID}) {
		b, _ := json.Marshal(res)
		t.Fatalf("result %s", b)
	}

	un, _ := cl.SignIn(FlowApp, loginUnbound)
	_, err = connectortest.Invoke[SendResult](t.Context(), cl.Client, un, ToolSend, map[string]any{"text": "anyone?"})
	if err == nil || !strings.Contains(err.Error(), "nobody has written to the bot yet") {
		t.Fatalf("unbound, no conversation: %v", err)
	}
}
