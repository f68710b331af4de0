package telegram

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/xconn/xconn/connectors/telegram/telegramtest"
	"github.com/xconn/xconn/protocol"
)

// TestTopicsAnsweredInTheirOwn: in a supergroup with forum topics, a user
// asks in topic 7, then in topic 9; the answer to the second (a plain
// final) goes to topic 9 and the answer to the first (streamed, then
// final, after a restart) to topic 7, each found by the message it
// answers (x-in-reply-to), not by "the latest topic". Proactive output goes
// to the general thread.
func TestTopicsAnsweredInTheirOwn(t *testing.T) {
	const forum = int64(-1001234567890)
	f, api := newFake(t)
	f.AddChat(telegramtest.Chat{ID: forum, Type: "supergroup", Title: "Team"})
	dir := t.TempDir()
	cn := startConn(t, dir, api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowBot, map[string]string{"bot_token": testToken, "chat_id": fmt.Sprint(forum)})
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	time.Sleep(1100 * time.Millisecond) // Telegram dates have one-second resolution

	var asked []string
	for _, q := range []struct {
		topic int64
		text  string
	}{{7, "question in topic 7"}, {9, "question in topic 9"}} {
		f.SendTextInThread(testToken, forum, q.topic, q.text)
		m, err := cl.ExpectMessage(ctx, ch, wait)
		if err != nil || m.Text != q.text {
			t.Fatalf("inbound %+v: %v", m, err)
		}
		if err := cl.Ack(ctx, m, protocol.AckAccepted); err != nil {
			t.Fatal(err)
		}
		asked = append(asked, m.MessageID)
	}
	if a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "ans-9", Text: "answer for topic 9", InReplyTo: asked[1]}); a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", a)
	}
	if err := cl.SendDelta(ctx, ch, protocol.ChatDeltaPayload{MessageID: "ans-7", Sequence: 1, Text: "answer for", InReplyTo: asked[0]}); err != nil {
		t.Fatal(err)
	}
	waitSent(t, f, forum, "the streamed answer", func(s []telegramtest.Sent) bool { return len(s) == 2 })
	cl.Close()
	cn.Stop()
	cn = startConn(t, dir, api, "127.0.0.1:0", nil)
	cl = cn.Dial(t)
	if _, err := cl.Open(ctx, ch); err != nil {
		t.Fatal(err)
	}
	if a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "ans-7", Text: "answer for topic 7", InReplyTo: asked[0]}); a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", a)
	}
	if a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "note", Text: "a note for everyone"}); a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", a)
	}
	var got []string
	for _, s := range f.Sent(forum) {
		got = append(got, fmt.Sprintf("%d: %s", s.ThreadID, s.Text))
	}
	if want := []string{"9: answer for topic 9", "7: answer for topic 7", "0: a note for everyone"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sent %q, want %q", got, want)
	}
}
