package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/feishu/feishutest"
	"github.com/xconn/xconn/protocol"
)

// TestCard: id, provider, label, target, profile, the form flow with a
// secret app_secret, the tool and the Skill.
func TestCard(t *testing.T) {
	_, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	card, err := connectortest.FetchCard(t.Context(), cn.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	if card.ConnectorCardID != CardID || len(card.Supports.Targets) != 1 || card.Supports.Targets[0].Provider != "feishu" ||
		card.Supports.Targets[0].Label != "Feishu" || card.Supports.TargetTypes[0] != protocol.TargetIM ||
		len(card.Supports.Profiles) != 1 || card.Supports.Profiles[0] != protocol.ProfileIMv2 {
		t.Fatalf("card identity: %+v", card.Supports)
	}
	if len(card.AuthFlows) < 1 || card.AuthFlows[0].ID != FlowApp || card.AuthFlows[0].Type != "form" || len(card.AuthFlows[0].Fields) != 2 {
		t.Fatalf("flows %+v", card.AuthFlows)
	}
	id, sec := card.AuthFlows[0].Fields[0], card.AuthFlows[0].Fields[1]
	if id.Name != "app_id" || id.Secret || sec.Name != "app_secret" || !sec.Secret || sec.InputType != "password" {
		t.Fatalf("fields %+v %+v", id, sec)
	}
	if len(card.Tools) != 1 || card.Tools[0].ToolID != ToolSend || card.Tools[0].RelatedSkillIDs[0] != SkillName {
		t.Fatalf("tools %+v", card.Tools)
	}
	if !strings.Contains(string(card.Tools[0].InputSchema), protocol.FormatUploadRef) {
		t.Fatalf("schema %s", card.Tools[0].InputSchema)
	}
}

// TestSignIn: good credentials are verified with a tenant token and
// authenticate; bad ones fail naming what to fix; no secret in frames.
func TestSignIn(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	_, st := cl.SignIn(FlowApp, login)
	if st.Status != protocol.AuthAuthenticated || st.ConnectionDescriptor == nil ||
		st.ConnectionDescriptor.Target.DisplayName != "Feishu app "+testApp {
		t.Fatalf("state %+v", st)
	}
	if f.Calls("token") == 0 {
		t.Fatal("no tenant token request")
	}
	for _, tc := range []struct{ name, id, secret, want string }{
		{"wrong secret", "cli_a1b2c3d4e5f6a7b9", "nope-nope-nope-nope", "Feishu refused the app credentials"},
		{"malformed id", "a1b2", "whatever-secret", "app_id must be a Feishu App ID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			open, err := cl.Open(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.SignInForm(ctx, open.ConnectorChannelID, FlowApp, map[string]string{"app_id": tc.id, "app_secret": tc.secret})
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			var se *connectortest.SignInError
			if errors.As(err, &se) {
				msg = se.State.Message
			}
			if !strings.Contains(msg, tc.want) || strings.Contains(msg, tc.secret) {
				t.Fatalf("error %q, want %q", msg, tc.want)
			}
		})
	}
	for _, frame := range cl.Transcript() {
		if strings.Contains(frame, testSecret) {
			t.Fatalf("secret in a frame: %s", frame)
		}
	}
}

// TestInboundP2P: a direct message arrives over the long connection, is
// published once even when Feishu pushes it again, and the streamed reply
// is posted in the p2p chat and edited into the final.
func TestInboundP2P(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	ev, id := f.MessageEvent(feishutest.Message{AppID: testApp, ChatID: testChat, Content: map[string]string{"text": "hello bot"}})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if code, err := f.SendEvent(ctx, testApp, ev, 2); err != nil || code != http.StatusOK {
		t.Fatalf("push: %d %v", code, err)
	}
	got := cl.ExpectAccept(ch)
	if got.MessageID != id || got.Text != "hello bot" {
		t.Fatalf("published %+v", got)
	}
	// A re-push of the same message is acked and not published again.
	if code, err := f.SendEvent(ctx, testApp, ev, 1); err != nil || code != http.StatusOK {
		t.Fatalf("re-push: %d %v", code, err)
	}
	// Stream a reply, then the final.
	for i, d := range []string{"You ", "said ", "hello"} {
		cl.Delta(ch, "a1", int64(i+1), d)
		time.Sleep(30 * time.Millisecond)
	}
	ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "a1", Text: "You said hello bot"})
	if ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	sent := waitSent(t, f, testChat, "one edited reply", func(s []feishutest.Sent) bool { return len(s) >= 1 })
	if len(sent) != 1 || sent[0].Text() != "You said hello bot" || sent[0].Edits == 0 || sent[0].ReplyTo != "" {
		t.Fatalf("sent %+v", sent)
	}
	// The next inbound is a new message, not a duplicate.
	say(t, f, "second")
	if got := cl.ExpectAccept(ch); got.Text != "second" {
		t.Fatalf("published %+v", got)
	}
}

// TestInboundGroup: in a group only messages that mention the bot are
// published, placeholders resolved; the final is a Feishu reply.
func TestInboundGroup(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	plain, _ := f.MessageEvent(feishutest.Message{AppID: testApp, ChatID: groupChat, ChatType: "group", Content: map[string]string{"text": "chatter"}})
	if code, err := f.SendEvent(ctx, testApp, plain, 1); err != nil || code != 200 {
		t.Fatal(code, err)
	}
	ev, id := f.MessageEvent(feishutest.Message{AppID: testApp, ChatID: groupChat, ChatType: "group",
		Content:  map[string]string{"text": "@_user_1 summarise, cc @_user_2"},
		Mentions: []feishutest.Mention{{Key: "@_user_1", OpenID: "ou_bot", Name: "xAgent"}, {Key: "@_user_2", OpenID: "ou_bob", Name: "Bob"}}})
	if code, err := f.SendEvent(ctx, testApp, ev, 1); err != nil || code != 200 {
		t.Fatal(code, err)
	}
	got := cl.ExpectAccept(ch)
	if got.MessageID != id || got.Text != "@xAgent summarise, cc @Bob" {
		t.Fatalf("published %+v", got)
	}
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "g1", Text: "summary"}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	sent := f.Sent(groupChat)
	if len(sent) != 1 || sent[0].ReplyTo != id || sent[0].Text() != "summary" || f.Calls("reply") != 1 {
		t.Fatalf("sent %+v", sent)
	}
}

// TestInboundPostAndFiles: rich text is flattened; an image and a file
// are downloaded through the resources endpoint and published with
// download_urls.
func TestInboundPostAndFiles(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	post := map[string]any{"title": "Report", "content": [][]map[string]string{
		{{"tag": "text", "text": "see "}, {"tag": "a", "text": "docs", "href": "https://example.com"}},
		{{"tag": "img", "image_key": "img_in1"}}}}
	ev, id := f.MessageEvent(feishutest.Message{AppID: testApp, ChatID: testChat, Type: "post", Content: post, ID: "om_u_post_1"})
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...)
	f.AddResource(id, "img_in1", "pic.png", png)
	if code, err := f.SendEvent(ctx, testApp, ev, 1); err != nil || code != 200 {
		t.Fatal(code, err)
	}
	got := cl.ExpectAccept(ch)
	if got.Text != "Report\nsee [docs](https://example.com)" || len(got.Files) != 1 || got.Files[0].Type != protocol.FileImage {
		t.Fatalf("post published %+v", got)
	}
	if b := cl.Fetch(got.Files[0].DownloadURL); string(b) != string(png) {
		t.Fatal("image bytes differ")
	}
	fev, fid := f.MessageEvent(feishutest.Message{AppID: testApp, ChatID: testChat, Type: "file",
		Content: map[string]string{"file_key": "file_in1", "file_name": "notes.txt"}, ID: "om_u_file_1"})
	f.AddResource(fid, "file_in1", "notes.txt", []byte("plain notes"))
	if code, err := f.SendEvent(ctx, testApp, fev, 1); err != nil || code != 200 {
		t.Fatal(code, err)
	}
	got = cl.ExpectAccept(ch)
	if len(got.Files) != 1 || got.Files[0].Filename != "notes.txt" || string(cl.Fetch(got.Files[0].DownloadURL)) != "plain notes" {
		t.Fatalf("file published %+v", got)
	}
}

// TestOutboundErrors: a revoked tenant token is refreshed once; a 429
// with x-ogw-ratelimit-reset is waited out; a long reset is a retryable
// rejection; an upload is sent as an image.
func TestOutboundErrors(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	say(t, f, "hi")
	cl.ExpectAccept(ch)

	f.RevokeTokens()
	tokens := f.Calls("token")
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "e1", Text: "after refresh"}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	if f.Calls("token") != tokens+1 {
		t.Fatalf("token calls %d, want %d", f.Calls("token"), tokens+1)
	}

	f.FailNext("/open-apis/im/v1/messages", http.StatusTooManyRequests, 99991400, 1)
	start := time.Now()
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "e2", Text: "after 429"}); ack.Status != protocol.AckAccepted || time.Since(start) < 900*time.Millisecond {
		t.Fatalf("ack %+v after %v", ack, time.Since(start))
	}

	f.FailNext("/open-apis/im/v1/messages", http.StatusTooManyRequests, 99991400, 60)
	ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "e3", Text: "rate limited"})
	if ack.Status != protocol.AckRejected || ack.Retryable == nil || !*ack.Retryable {
		t.Fatalf("ack %+v", ack)
	}

	ref := cl.Put(ch, "chart.png", "image/png", append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 32)...))
	ack = cl.Final(ch, protocol.ChatMessagePayload{MessageID: "e4", Text: "with a chart", Files: []protocol.ChatFile{{FileRef: ref, Type: protocol.FileImage}}})
	if ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	sent := f.Sent(testChat)
	last := sent[len(sent)-1]
	if last.MsgType != "image" || f.Calls("image") != 1 {
		t.Fatalf("last sent %+v", last)
	}
	texts := 0
	for _, s := range sent {
		if s.Text() == "after refresh" || s.Text() == "after 429" {
			texts++
		}
	}
	if texts != 2 {
		t.Fatalf("sent %+v", sent)
	}
}

// TestTool: feishu_message_send posts text and a file to the default
// chat; before any p2p message it fails saying why.
func TestTool(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_, err := cl.InvokeRaw(ctx, ch, ToolSend, map[string]any{"text": "too early"}, "call-0")
	if err == nil || !strings.Contains(err.Error(), "message the bot") {
		t.Fatalf("invoke before a chat: %v", err)
	}
	say(t, f, "hi")
	cl.ExpectAccept(ch)
	ref := cl.Put(ch, "report.pdf", "application/pdf", []byte("%PDF-1.4 test"))
	raw, err := cl.InvokeRaw(ctx, ch, ToolSend, map[string]any{"text": "here it is", "file": ref}, "call-1")
	if err != nil {
		t.Fatal(err)
	}
	var res SendResult
	json.Unmarshal(raw, &res)
	sent := f.Sent(testChat)
	if res.Status != "sent" || len(sent) != 2 || sent[0].Text() != "here it is" || sent[1].MsgType != "file" || f.Calls("file") != 1 {
		t.Fatalf("result %+v sent %+v", res, sent)
	}
}

// TestLogoutStopsLongConnection: the long connection lives while the
// channel is signed in and is closed by logout.
func TestLogoutStopsLongConnection(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	e2e.Eventually(t, "long connection up", func() bool { return f.Connected(testApp) })
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := cl.Request(ctx, protocol.TypeAuthLogout, ch, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	e2e.Eventually(t, "long connection closed", func() bool { return !f.Connected(testApp) })
}
