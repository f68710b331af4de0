package wecom

import (
	"bytes"
	"strings"
	"testing"

	"github.com/xconn/xconn/connectors/wecom/wecomtest"
	"github.com/xconn/xconn/protocol"
)

var pngBytes = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 200)...)

// TestAppFilesAndLimits: an image message arrives as a file fetched with
// media/get; an answer with an image and a PDF uploads both (media/upload
// type image and file) and sends them after the text; a text longer than
// 2048 bytes is sent in parts that each fit; an expired access token
// (42001) is refreshed once and the call succeeds; the frequency limit
// (45009) fails the final retryable.
func TestAppFilesAndLimits(t *testing.T) {
	f, api := newFake(t, "http://placeholder")
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	f.SetCallbackURL(testCorp, testAgent, cn.URL+callbackPath())
	ctx := ctxT(t)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)

	media := f.AddMedia(wecomtest.Media{Type: "image", Name: "cat.png", Data: pngBytes})
	if _, err := f.SendMessage(ctx, testCorp, testAgent, wecomtest.Message{From: testUser, MsgType: "image", MediaID: media, PicURL: "https://example.invalid/p"}); err != nil {
		t.Fatal(err)
	}
	got := cl.ExpectAccept(ch)
	if len(got.Files) != 1 || got.Files[0].Type != protocol.FileImage || got.Files[0].Filename != "cat.png" {
		t.Fatalf("image message: %+v", got)
	}
	if data := cl.Fetch(got.Files[0].DownloadURL); !bytes.Equal(data, pngBytes) {
		t.Fatalf("image bytes differ: %d", len(data))
	}

	img := cl.Put(ch, "chart.png", "image/png", pngBytes)
	pdf := cl.Put(ch, "report.pdf", "application/pdf", []byte("%PDF-1.4 a small report"))
	f.ExpireTokens()
	long := strings.Repeat("界", 1000) // 3000 bytes
	ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "a1", Text: long, InReplyTo: got.MessageID,
		Files: []protocol.ChatFile{{FileRef: img, Type: protocol.FileImage, Filename: "chart.png"}, {FileRef: pdf, Type: protocol.FileFile, Filename: "report.pdf"}}})
	if ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	sent := f.Sent(testUser)
	if len(sent) != 4 || sent[0].MsgType != "text" || sent[1].MsgType != "text" || sent[2].MsgType != "image" || sent[3].MsgType != "file" {
		t.Fatalf("sent %+v", sent)
	}
	if sent[0].Content+sent[1].Content != long || len(sent[0].Content) > MaxTextBytes || len(sent[1].Content) > MaxTextBytes {
		t.Fatalf("split %d + %d bytes", len(sent[0].Content), len(sent[1].Content))
	}
	if m, ok := f.Media(sent[3].MediaID); !ok || m.Name != "report.pdf" || m.Type != "file" {
		t.Fatalf("uploaded %+v", m)
	}

	for range 3 {
		f.FailNext("/cgi-bin/message/send", 45009, "api freq out of limit")
	}
	ack = cl.Final(ch, protocol.ChatMessagePayload{MessageID: "a2", Text: "limited", InReplyTo: got.MessageID})
	if ack.Status != protocol.AckRejected || ack.Retryable == nil || !*ack.Retryable || !strings.Contains(ack.Message, "45009") {
		t.Fatalf("rate-limited ack %+v", ack)
	}
}

// TestSignInRefusals: each form mistake is named without its value; an
// unreachable server API is retryable and its URL (with the secret in
// the query) is in no log line; a refused IP (60020) says what to do.
func TestSignInRefusals(t *testing.T) {
	f, api := newFake(t, "http://placeholder")
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ctx := ctxT(t)
	bad := func(k, v string) map[string]string {
		in := map[string]string{}
		for a, b := range login {
			in[a] = b
		}
		in[k] = v
		return in
	}
	for _, tc := range []struct {
		in   map[string]string
		want string
	}{
		{bad("corp_id", "!"), "corp_id must be"},
		{bad("agent_id", "0"), "agent_id must be"},
		{bad("encoding_aes_key", "short"), "encoding_aes_key must be"},
		{bad("secret", "wrong-secret-0123456789"), "WeCom refused the application credentials (errcode 40001"},
	} {
		if _, _, err := cl.OpenAndSignIn(ctx, FlowApp, tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want %q", err, tc.want)
		}
	}
	f.FailNext("/cgi-bin/gettoken", 60020, "not allow to access from your ip")
	if _, _, err := cl.OpenAndSignIn(ctx, FlowApp, login); err == nil || !strings.Contains(err.Error(), "trusted IPs") {
		t.Fatalf("60020: %v", err)
	}
	f.Close()
	if _, _, err := cl.OpenAndSignIn(ctx, FlowApp, login); err == nil || !strings.Contains(err.Error(), "cannot be reached") {
		t.Fatalf("unreachable: %v", err)
	}
	cn.Stop()
	if s, ok := secrets.Find(cn.Logs.String()); ok {
		t.Fatalf("a secret in the logs: %s", s)
	}
}

// TestAppMarkdown: with AppMarkdown an application's text goes as
// msgtype markdown.
func TestAppMarkdown(t *testing.T) {
	f, api := newFake(t, "http://placeholder")
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", func(o *Options) { o.AppMarkdown = true })
	f.SetCallbackURL(testCorp, testAgent, cn.URL+callbackPath())
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	id, err := f.SendText(ctxT(t), testCorp, testAgent, testUser, "md please")
	if err != nil {
		t.Fatal(err)
	}
	cl.ExpectAccept(ch)
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "m1", Text: "**bold**", InReplyTo: id}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	if s := f.Sent(testUser); len(s) != 1 || s[0].MsgType != "markdown" || s[0].Content != "**bold**" {
		t.Fatalf("sent %+v", s)
	}
}
