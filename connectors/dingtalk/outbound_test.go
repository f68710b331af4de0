package dingtalk

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connectors/dingtalk/dingtalktest"
	"github.com/xconn/xconn/protocol"
)

var pngBytes = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 200)...)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// TestFiles: a picture and a file message arrive as files fetched with
// messageFiles/download (the bytes DingTalk holds), a richText's picture
// beside its text; an answer with an image and a PDF uploads both
// (media/upload type image and file) and sends them after the text as
// sampleImageMsg and sampleFile; an expired download code becomes a note.
func TestFiles(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)

	say(t, f, dingtalktest.Message{Type: "picture", DownloadCode: f.AddFile("image.png", pngBytes)})
	got := cl.ExpectAccept(ch)
	if len(got.Files) != 1 || got.Files[0].Type != protocol.FileImage || got.Files[0].Filename != "image.png" ||
		!bytes.Equal(cl.Fetch(got.Files[0].DownloadURL), pngBytes) {
		t.Fatalf("picture: %+v", got)
	}
	pdf := []byte("%PDF-1.4 a small report")
	say(t, f, dingtalktest.Message{Type: "file", FileName: "q3.pdf", DownloadCode: f.AddFile("q3.pdf", pdf)})
	got = cl.ExpectAccept(ch)
	if len(got.Files) != 1 || got.Files[0].Type != protocol.FileFile || got.Files[0].Filename != "q3.pdf" ||
		!bytes.Equal(cl.Fetch(got.Files[0].DownloadURL), pdf) {
		t.Fatalf("file: %+v", got)
	}
	say(t, f, dingtalktest.Message{Type: "richText", RichText: []map[string]string{{"text": "look at "},
		{"type": "picture", "downloadCode": f.AddFile("p.png", pngBytes)}, {"text": "this"}}})
	got = cl.ExpectAccept(ch)
	if got.Text != "look at this" || len(got.Files) != 1 || got.Files[0].Type != protocol.FileImage {
		t.Fatalf("richText: %q %+v", got.Text, got.Files)
	}
	say(t, f, dingtalktest.Message{Type: "file", FileName: "gone.zip", DownloadCode: "dc-expired"})
	if got = cl.ExpectAccept(ch); len(got.Files) != 0 || !strings.Contains(got.Text, "gone.zip not forwarded") {
		t.Fatalf("expired code: %q %+v", got.Text, got.Files)
	}
	say(t, f, dingtalktest.Message{Type: "audio", Text: "call me back"})
	if got = cl.ExpectAccept(ch); got.Text != "call me back" {
		t.Fatalf("voice transcript %q", got.Text)
	}

	img := cl.Put(ch, "chart.png", "image/png", pngBytes)
	doc := cl.Put(ch, "report.pdf", "application/pdf", pdf)
	ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "f1", InReplyTo: got.MessageID, Text: "here you go",
		Files: []protocol.ChatFile{{FileRef: img, Type: protocol.FileImage, Filename: "chart.png"}, {FileRef: doc, Type: protocol.FileFile, Filename: "report.pdf"}}})
	if ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	sent := waitSent(t, f, aliceConv, "text, image and file", func(s []dingtalktest.Sent) bool { return len(s) >= 3 })
	if len(sent) != 3 || sent[0].Text != "here you go" || sent[1].Kind != "sampleImageMsg" || sent[2].Kind != "sampleFile" ||
		sent[2].FileName != "report.pdf" || sent[1].Via != "oto" || sent[2].Via != "oto" {
		t.Fatalf("sent %+v", sent)
	}
	if data, name, ok := f.Media(sent[1].MediaID); !ok || name != "chart.png" || !bytes.Equal(data, pngBytes) {
		t.Fatalf("uploaded image %q %d bytes", name, len(data))
	}
	if data, name, ok := f.Media(sent[2].MediaID); !ok || name != "report.pdf" || !bytes.Equal(data, pdf) {
		t.Fatalf("uploaded file %q %d bytes", name, len(data))
	}
}

// TestToolSend: dingtalk_message_send fails, saying why, until someone
// wrote the robot 1:1; then it posts text and a file to that chat with
// oToMessages/batchSend (never the session webhook, which answers one
// message), and a repeated tool_call_id posts nothing more.
func TestToolSend(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	ctx := ctxT(t)
	_, err := connectortest.Invoke[SendResult](ctx, cl.Client, ch, ToolSend, SendInput{Text: "too early"})
	var pe *protocol.Error
	if !errors.As(err, &pe) || !strings.Contains(pe.Message, "message the robot directly once") {
		t.Fatalf("before any 1:1 message: %v", err)
	}
	// A group message does not make a default chat.
	say(t, f, dingtalktest.Message{ConversationType: dingtalktest.ConversationGroup, ConversationID: groupConv, AtBot: true, SenderStaffID: "bob", Text: "hi"})
	cl.ExpectAccept(ch)
	if r, err := connectortest.Invoke[SendResult](ctx, cl.Client, ch, ToolSend, SendInput{Text: "still early"}); err == nil {
		t.Fatalf("a group message made a default chat: %+v %+v", r, f.Sent(""))
	}
	say(t, f, dingtalktest.Message{Text: "hello"})
	cl.ExpectAccept(ch)
	doc := cl.Put(ch, "notes.txt", "text/plain", []byte("some notes"))
	args := map[string]any{"text": "reminder: standup", "file": doc}
	if _, err := cl.InvokeRaw(ctx, ch, ToolSend, args, "call-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.InvokeRaw(ctx, ch, ToolSend, args, "call-1"); err != nil {
		t.Fatal(err)
	}
	sent := f.Sent(aliceConv)
	if len(sent) != 2 || sent[0].Text != "reminder: standup" || sent[0].Via != "oto" || sent[0].UserID != "alice" ||
		sent[1].Kind != "sampleFile" || sent[1].FileName != "notes.txt" {
		t.Fatalf("sent %+v", sent)
	}
	if len(f.Sent(groupConv)) != 0 || f.Calls("session") != 0 {
		t.Fatal("the tool posted to the group or through a session webhook")
	}
}

// TestDeliveryErrors: a revoked access token is refreshed once and the
// reply goes through; a throttled send (HTTP 429) rejects the final
// retryable; a refused one (400) rejects it for good, naming the code; a
// session webhook that refuses falls back to the robot API; an app whose
// secret was reset expires the channel.
func TestDeliveryErrors(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	id := say(t, f, dingtalktest.Message{Text: "hello"})
	cl.ExpectAccept(ch)
	f.ExpireSessions()

	tokens := f.Calls("token")
	f.RevokeTokens()
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "d1", InReplyTo: id, Text: "after refresh"}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	if f.Calls("token") != tokens+1 || len(f.Sent(aliceConv)) != 1 {
		t.Fatalf("token calls %d (before %d), sent %+v", f.Calls("token"), tokens, f.Sent(aliceConv))
	}
	for range 3 {
		f.FailNext(dingtalktest.PathOTO, http.StatusTooManyRequests, "Throttling.Api", 0)
	}
	ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "d2", InReplyTo: id, Text: "throttled"})
	if ack.Status != protocol.AckRejected || ack.Retryable == nil || !*ack.Retryable {
		t.Fatalf("throttled ack %+v", ack)
	}
	f.FailNext(dingtalktest.PathOTO, http.StatusBadRequest, "invalidParameter.robotCode", 0)
	ack = cl.Final(ch, protocol.ChatMessagePayload{MessageID: "d3", InReplyTo: id, Text: "refused"})
	if ack.Status != protocol.AckRejected || (ack.Retryable != nil && *ack.Retryable) || !strings.Contains(ack.Message, "invalidParameter.robotCode") {
		t.Fatalf("refused ack %+v", ack)
	}

	id2 := say(t, f, dingtalktest.Message{Text: "again"})
	cl.ExpectAccept(ch)
	f.FailNext(dingtalktest.PathSession, 0, "", 300001)
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "d4", InReplyTo: id2, Text: "via the robot"}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	if s := f.Sent(aliceConv); s[len(s)-1].Text != "via the robot" || s[len(s)-1].Via != "oto" {
		t.Fatalf("sent %+v", s[len(s)-1])
	}

	// The secret is reset in the developer console.
	f.AddApp(dingtalktest.App{ClientID: testClient, ClientSecret: "aNewSecretAfterTheReset0123456789"})
	f.RevokeTokens()
	f.ExpireSessions()
	ack = cl.Final(ch, protocol.ChatMessagePayload{MessageID: "d5", InReplyTo: id2, Text: "expired"})
	if ack.Status != protocol.AckRejected || ack.Code != string(protocol.CodeConnectionNotAuthenticated) {
		t.Fatalf("ack %+v", ack)
	}
	if _, err := cl.ExpectStatus(ctxT(t), ch, protocol.StatusExpired); err != nil {
		t.Fatal(err)
	}
}

// TestCardFlags: the card's template and content key are the ones
// configured; a card DingTalk refuses to update (it finalized or lost it)
// ends in the final sent once as a message instead.
func TestCardFlags(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", func(o *Options) { o.CardTemplateID, o.CardContentKey = testTemplate, "answer" })
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	id := say(t, f, dingtalktest.Message{ConversationType: dingtalktest.ConversationGroup, ConversationID: groupConv, AtBot: true, SenderStaffID: "bob", Text: "stream"})
	cl.ExpectAccept(ch)
	cl.Delta(ch, "c1", 1, "Part one")
	waitSent(t, f, groupConv, "the card", func(s []dingtalktest.Sent) bool { return len(s) == 1 })
	f.FailNext(dingtalktest.PathCardStream, http.StatusBadRequest, "param.cardNotExist", 0)
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "c1", InReplyTo: id, Text: "Part one, part two"}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	sent := waitSent(t, f, groupConv, "the final", func(s []dingtalktest.Sent) bool { return len(s) >= 2 })
	if len(sent) != 2 || sent[0].Via != "card" || sent[1].Via != "session" || sent[1].Text != "Part one, part two" {
		t.Fatalf("sent %+v", sent)
	}
	// The next answer streams into a card under the configured key.
	id = say(t, f, dingtalktest.Message{ConversationType: dingtalktest.ConversationGroup, ConversationID: groupConv, AtBot: true, SenderStaffID: "bob", Text: "more"})
	cl.ExpectAccept(ch)
	cl.Delta(ch, "c2", 1, "Bit")
	waitSent(t, f, groupConv, "the second card", func(s []dingtalktest.Sent) bool { return len(s) == 3 })
	time.Sleep(30 * time.Millisecond)
	cl.Final(ch, protocol.ChatMessagePayload{MessageID: "c2", InReplyTo: id, Text: "Bit by bit"})
	sent = waitSent(t, f, groupConv, "the finalized card", func(s []dingtalktest.Sent) bool { return len(s) == 3 && s[2].Finalized })
	if sent[2].Text != "Bit by bit" || sent[2].Via != "card" {
		t.Fatalf("card %+v", sent[2])
	}
	// A card DingTalk refuses to create (a missing card permission): the
	// final is sent once as a message.
	id = say(t, f, dingtalktest.Message{ConversationType: dingtalktest.ConversationGroup, ConversationID: groupConv, AtBot: true, SenderStaffID: "bob", Text: "no card"})
	cl.ExpectAccept(ch)
	f.FailNext(dingtalktest.PathCardDeliver, http.StatusForbidden, "Forbidden.AccessDenied.AccessTokenPermissionDenied", 0)
	cl.Delta(ch, "c3", 1, "Start")
	time.Sleep(60 * time.Millisecond)
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "c3", InReplyTo: id, Text: "Start and end"}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	sent = waitSent(t, f, groupConv, "the final without a card", func(s []dingtalktest.Sent) bool { return len(s) >= 4 })
	if len(sent) != 4 || sent[3].Via != "session" || sent[3].Text != "Start and end" {
		t.Fatalf("sent %+v", sent)
	}
}

// TestExclusiveApp: one app, one channel: a second sign-in with the same
// Client ID is refused while the first channel lives.
func TestExclusiveApp(t *testing.T) {
	_, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	cl.SignIn(FlowApp, login)
	if _, _, err := cl.OpenAndSignIn(ctxT(t), FlowApp, login); err == nil || !strings.Contains(err.Error(), "already in use") {
		t.Fatalf("second sign-in: %v", err)
	}
}

// TestAckAfterPublish: a bot message DingTalk got a 200 for is in the
// connector's store: with no host connected, the connector stopped right
// after the ack and started again, it is delivered once.
func TestAckAfterPublish(t *testing.T) {
	f, api := newFake(t)
	dir := t.TempDir()
	cn := startConn(t, dir, api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	cl.Close()
	id := say(t, f, dingtalktest.Message{Text: "kept"}) // acked 200
	cn.Stop()
	cn.Restart()
	cl = cn.Dial(t)
	ctx := ctxT(t)
	if _, err := cl.Open(ctx, ch); err != nil {
		t.Fatal(err)
	}
	got := cl.ExpectAccept(ch)
	if got.MessageID != id || got.Text != "kept" {
		t.Fatalf("after the restart %+v", got)
	}
	if m, err := cl.ExpectMessage(ctx, ch, 500*time.Millisecond); err == nil {
		t.Fatalf("delivered again: %+v", m)
	}
}
