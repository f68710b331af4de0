package feishu

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connectors/feishu/feishutest"
	"github.com/xconn/xconn/protocol"
)

// TestGroupAnswersReplyToTheirMessage: in a group, alice asks A, then B
// before A is answered; the answer to A (streamed) replies to A and the
// answer to B replies to B, each found by the message it answers
// (x-in-reply-to and the reply context Publish recorded), not by "the
// latest message". Proactive output replies to the latest.
func TestGroupAnswersReplyToTheirMessage(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var asked []string
	for _, q := range []string{"@_user_1 question A", "@_user_1 question B"} {
		ev, id := f.MessageEvent(feishutest.Message{AppID: testApp, ChatID: groupChat, ChatType: "group",
			Content: map[string]string{"text": q}, Mentions: []feishutest.Mention{{Key: "@_user_1", OpenID: "ou_bot", Name: "xAgent"}}})
		if code, err := f.SendEvent(ctx, testApp, ev, 1); err != nil || code != 200 {
			t.Fatal(code, err)
		}
		if got := cl.ExpectAccept(ch); got.MessageID != id {
			t.Fatalf("published %+v, want %s", got, id)
		}
		asked = append(asked, id)
	}
	for i, d := range []string{"Answer ", "to A"} {
		if err := cl.SendDelta(ctx, ch, protocol.ChatDeltaPayload{MessageID: "ans-A", Sequence: int64(i + 1), Text: d, InReplyTo: asked[0]}); err != nil {
			t.Fatal(err)
		}
	}
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "ans-A", Text: "Answer to A.", InReplyTo: asked[0]}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "ans-B", Text: "Answer to B.", InReplyTo: asked[1]}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "note", Text: "A note."}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	var got []string
	for _, s := range f.Sent(groupChat) {
		switch s.ReplyTo {
		case asked[0]:
			got = append(got, "A: "+s.Text())
		case asked[1]:
			got = append(got, "B: "+s.Text())
		default:
			got = append(got, s.ReplyTo+": "+s.Text())
		}
	}
	if want := "A: Answer to A.|B: Answer to B.|B: A note."; strings.Join(got, "|") != want {
		t.Fatalf("sent %q, want %q", got, want)
	}
}

// TestStreamEditBudget: Feishu allows 20 edits of a message; a long
// stream's deltas use at most 19, and the final lands with the 20th.
func TestStreamEditBudget(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", func(o *Options) { o.EditInterval = time.Millisecond })
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	say(t, f, "hi")
	cl.ExpectAccept(ch)
	for i := range 30 {
		cl.Delta(ch, "long", int64(i+1), fmt.Sprintf("w%d ", i))
		if i == 0 {
			waitSent(t, f, testChat, "the stream's message", func(s []feishutest.Sent) bool { return len(s) == 1 })
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "long", Text: "the complete answer"}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	sent := f.Sent(testChat)
	if len(sent) != 1 || sent[0].Text() != "the complete answer" || sent[0].Edits > feishutest.MaxEdits || sent[0].Edits < 2 {
		t.Fatalf("sent %+v", sent)
	}
	if n := f.Calls("update"); n != sent[0].Edits {
		t.Fatalf("%d edit calls for %d edits: edits past the cap of %d were tried", n, sent[0].Edits, feishutest.MaxEdits)
	}
}
