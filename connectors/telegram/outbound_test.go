package telegram

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/telegram/telegramtest"
	"github.com/xconn/xconn/protocol"
)

// longText is about n characters of words, each with a multi-byte
// character, and a line break every 40 words.
func longText(n int) string {
	var b strings.Builder
	for i := 0; i*5 < n; i++ {
		b.WriteString("wörd ")
		if i%40 == 39 {
			b.WriteString("\n")
		}
	}
	return strings.TrimSpace(b.String())
}

func texts(sent []telegramtest.Sent) []string {
	var out []string
	for _, s := range sent {
		out = append(out, s.Text)
	}
	return out
}

// TestOutboundFinal: a final of 9,000 characters is posted as parts of at
// most 4,096 that add up to it, then acked accepted; the same message
// again is a duplicate that posts nothing.
func TestOutboundFinal(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowBot, login)
	text := longText(9000)
	if a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "asst-1", Text: text}); a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", a)
	}
	sent := f.Sent(testChat)
	if len(sent) != 3 {
		t.Fatalf("%d messages, want 3", len(sent))
	}
	for _, s := range sent {
		if n := len(utf16.Encode([]rune(s.Text))); n > MaxTextLen || n == 0 {
			t.Fatalf("part of %d units", n)
		}
	}
	if got := strings.Join(texts(sent), ""); got != text {
		t.Fatalf("parts do not add up to the text (%d vs %d runes)", len([]rune(got)), len([]rune(text)))
	}
	if a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "asst-1", Text: text}); a.Status != protocol.AckDuplicate {
		t.Fatalf("second ack %+v, want duplicate", a)
	}
	if n := len(f.Sent(testChat)); n != 3 {
		t.Fatalf("%d messages after the duplicate", n)
	}
}

// TestOutboundPartsIdempotent: when the second of three parts fails with
// a server error, the message is rejected retryable; its redelivery posts
// only the parts not yet posted.
func TestOutboundPartsIdempotent(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowBot, login)
	text := longText(9000)
	f.FailCall(testToken, "sendMessage", 2, 502, "Bad Gateway", 0)
	a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "asst-2", Text: text})
	if a.Status != protocol.AckRejected || a.Retryable == nil || !*a.Retryable || a.Code != string(protocol.CodeTargetDeliveryFailed) {
		t.Fatalf("ack %+v, want rejected retryable target_delivery_failed", a)
	}
	if n := len(f.Sent(testChat)); n != 1 {
		t.Fatalf("%d messages after the failure, want 1", n)
	}
	if a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "asst-2", Text: text}); a.Status != protocol.AckAccepted {
		t.Fatalf("retry ack %+v", a)
	}
	sent := f.Sent(testChat)
	if len(sent) != 3 || strings.Join(texts(sent), "") != text {
		t.Fatalf("after the retry: %d messages", len(sent))
	}
}

// TestOutboundRefused: a refusal that a resend cannot fix is rejected
// with retryable=false and a secret-free message.
func TestOutboundRefused(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowBot, login)
	f.FailNext(testToken, "sendMessage", 403, "Forbidden: bot was blocked by the user "+testToken, 0)
	a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "asst-3", Text: "hi"})
	if a.Status != protocol.AckRejected || a.Retryable == nil || *a.Retryable || !strings.Contains(a.Message, "bot was blocked") {
		t.Fatalf("ack %+v, want rejected, not retryable, naming the refusal", a)
	}
	if strings.Contains(a.Message, testToken) {
		t.Fatalf("token in the ack: %q", a.Message)
	}
}

// TestOutboundFiles: a final with text and an image and a PDF posts the
// text, then sendPhoto and sendDocument with the uploaded bytes.
func TestOutboundFiles(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowBot, login)
	pic, pdf := testPNG(t), []byte("%PDF-1.4 fake")
	img := cl.Put(ch, "chart.png", "image/png", pic)
	doc := cl.Put(ch, "report.pdf", "application/pdf", pdf)
	a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "asst-4", Text: "here you are",
		Files: []protocol.ChatFile{{Type: protocol.FileImage, FileRef: img}, {Type: protocol.FileFile, FileRef: doc}}})
	if a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", a)
	}
	sent := f.Sent(testChat)
	if len(sent) != 3 || sent[0].Text != "here you are" || sent[1].Method != "sendPhoto" || sent[2].Method != "sendDocument" {
		t.Fatalf("sent %+v", sent)
	}
	if !bytes.Equal(sent[1].File.Data, pic) || !bytes.Equal(sent[2].File.Data, pdf) || sent[2].File.Name != "report.pdf" {
		t.Fatalf("files %+v %+v", sent[1].File.Name, sent[2].File.Name)
	}
}

// TestOutboundDelta: deltas post one message and edit it, at most once
// per EditInterval; the final edits it into the complete text and posts
// nothing else. With a long interval only the final edits.
func TestOutboundDelta(t *testing.T) {
	for _, tc := range []struct {
		name      string
		interval  time.Duration
		wantEdits func(int) bool
	}{
		{"fast edits", time.Millisecond, func(n int) bool { return n >= 2 }},
		{"rate limited", time.Hour, func(n int) bool { return n == 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, api := newFake(t)
			cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", func(o *Options) { o.EditInterval = tc.interval })
			cl := cn.Dial(t)
			ch, _ := cl.SignIn(FlowBot, login)
			for i, part := range []string{"Hel", "lo, ", "wor"} {
				cl.Delta(ch, "asst-5", int64(i+1), part)
				if i == 0 {
					waitSent(t, f, testChat, "the first delta posted", func(s []telegramtest.Sent) bool { return len(s) == 1 })
				}
				time.Sleep(20 * time.Millisecond)
			}
			if a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "asst-5", Text: "Hello, world!"}); a.Status != protocol.AckAccepted {
				t.Fatalf("ack %+v", a)
			}
			sent := f.Sent(testChat)
			if len(sent) != 1 || sent[0].Text != "Hello, world!" || sent[0].Edits[0] != "Hel" || !tc.wantEdits(len(sent[0].Edits)) {
				t.Fatalf("sent %+v", sent)
			}
		})
	}
}

// TestOutboundDeltaEditFails: when an edit fails the stream stops and
// the final still edits the message into the complete text; when the
// message cannot be edited any more, the final is posted instead.
func TestOutboundDeltaEditFails(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", func(o *Options) { o.EditInterval = time.Millisecond })
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowBot, login)
	f.FailNext(testToken, "editMessageText", 429, "Too Many Requests: retry after 30", 30)
	cl.Delta(ch, "a6", 1, "one ")
	waitSent(t, f, testChat, "first delta", func(s []telegramtest.Sent) bool { return len(s) == 1 })
	for i, p := range []string{"two ", "three "} {
		cl.Delta(ch, "a6", int64(i+2), p)
		time.Sleep(30 * time.Millisecond)
	}
	if a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "a6", Text: "one two three four"}); a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", a)
	}
	if sent := f.Sent(testChat); len(sent) != 1 || sent[0].Text != "one two three four" || len(sent[0].Edits) != 1 {
		t.Fatalf("after a failed edit: %+v", sent)
	}

	cl.Delta(ch, "a7", 1, "gone")
	waitSent(t, f, testChat, "second stream", func(s []telegramtest.Sent) bool { return len(s) == 2 })
	f.FailNext(testToken, "editMessageText", 400, "Bad Request: message to edit not found", 0)
	if a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "a7", Text: "gone, then back"}); a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", a)
	}
	if sent := f.Sent(testChat); len(sent) != 3 || sent[2].Text != "gone, then back" {
		t.Fatalf("after a lost message: %+v", texts(sent))
	}
}

// TestOutboundStreamAcrossRestart: a message streamed before a restart is
// edited by its final after the restart, not posted twice.
func TestOutboundStreamAcrossRestart(t *testing.T) {
	f, api := newFake(t)
	dir := t.TempDir()
	cn := startConn(t, dir, api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowBot, login)
	cl.Delta(ch, "a8", 1, "partial")
	waitSent(t, f, testChat, "the delta", func(s []telegramtest.Sent) bool { return len(s) == 1 })
	cl.Close()
	cn.Stop()
	cn = startConn(t, dir, api, "127.0.0.1:0", nil)
	cl = cn.Dial(t)
	if _, err := cl.Open(t.Context(), ch); err != nil {
		t.Fatal(err)
	}
	if a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "a8", Text: "partial, then complete"}); a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", a)
	}
	if sent := f.Sent(testChat); len(sent) != 1 || sent[0].Text != "partial, then complete" {
		t.Fatalf("sent %+v", texts(sent))
	}
}

// TestFloodControl: a 429 whose retry_after fits MaxRetryWait is waited
// out and the message posted once; a longer one rejects the message as
// retryable, and its redelivery posts it once.
func TestFloodControl(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowBot, login)
	f.FailNext(testToken, "sendMessage", 429, "Too Many Requests: retry after 1", 1)
	start := time.Now()
	if a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "a9", Text: "after a pause"}); a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", a)
	}
	if d := time.Since(start); d < time.Second {
		t.Fatalf("accepted after %v: retry_after 1 s not honoured", d)
	}
	f.FailNext(testToken, "sendMessage", 429, "Too Many Requests: retry after 30", 30)
	a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "a10", Text: "later"})
	if a.Status != protocol.AckRejected || a.Retryable == nil || !*a.Retryable {
		t.Fatalf("ack %+v, want rejected retryable", a)
	}
	if a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "a10", Text: "later"}); a.Status != protocol.AckAccepted {
		t.Fatalf("redelivery ack %+v", a)
	}
	if got := texts(f.Sent(testChat)); strings.Join(got, "|") != "after a pause|later" {
		t.Fatalf("sent %q", got)
	}
	if n := f.Calls(testToken, "sendMessage"); n != 4 {
		t.Fatalf("%d sendMessage calls, want 4 (two refused by flood control)", n)
	}
}

// TestActivity: thinking and tool send "typing" (at most every few
// seconds); idle sends nothing.
func TestActivity(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowBot, login)
	cl.Activity(ch, protocol.ActivityThinking, "")
	cl.Activity(ch, protocol.ActivityTool, "search")
	cl.Activity(ch, protocol.ActivityIdle, "")
	e2e.Eventually(t, "typing", func() bool { return len(f.Actions(testChat)) > 0 })
	time.Sleep(200 * time.Millisecond)
	if got := f.Actions(testChat); len(got) != 1 || got[0] != "typing" {
		t.Fatalf("actions %q, want one typing", got)
	}
	if n := len(f.Sent(testChat)); n != 0 {
		t.Fatalf("activity posted %d messages", n)
	}
}

// TestTool: telegram_message_send posts its text and its uploaded file
// in the bound chat and answers the Telegram message ids.
func TestTool(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowBot, login)
	ref := cl.Put(ch, "notes.txt", "text/plain", []byte("some notes"))
	res, err := connectortest.Invoke[SendResult](t.Context(), cl.Client, ch, ToolSend, map[string]any{"text": "a reminder", "file": ref})
	if err != nil {
		t.Fatal(err)
	}
	sent := f.Sent(testChat)
	if res.Status != "sent" || len(res.MessageIDs) != 2 || len(sent) != 2 || sent[0].Text != "a reminder" ||
		sent[1].Method != "sendDocument" || string(sent[1].File.Data) != "some notes" || res.MessageIDs[1] != sent[1].MessageID {
		t.Fatalf("result %+v, sent %+v", res, sent)
	}
	if _, err := connectortest.Invoke[SendResult](t.Context(), cl.Client, ch, ToolSend, map[string]any{"text": "x", "file": "file_unknown"}); err == nil {
		t.Fatal("an unknown upload reference was accepted")
	}
}
