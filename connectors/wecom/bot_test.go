package wecom

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/wecom/wecomtest"
	"github.com/xconn/xconn/protocol"
)

const (
	testBot       = "aibBOT0123456789"
	testBotSecret = "botSecretValue-fedcba9876543210"
)

var botLogin = map[string]string{"bot_id": testBot, "secret": testBotSecret}

func newBotFake(tb testing.TB) (*wecomtest.Server, string) {
	tb.Helper()
	f := wecomtest.New()
	f.AddBot(testBot, testBotSecret)
	u := f.Start()
	tb.Cleanup(f.Close)
	return f, u
}

func botSay(t *testing.T, f *wecomtest.Server, m wecomtest.BotMessage) string {
	t.Helper()
	id, _, err := f.SendBot(ctxT(t), testBot, m)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestBot: a robot signs in over its long connection (a wrong secret is
// refused); a user's message is published; the answer streams as one
// aibot_respond_msg stream under the message's req_id, updated and
// finished with finish true, also when the last delta already showed the
// final text; an image arrives decrypted; the send tool and a file go
// proactively (aibot_send_msg, the file uploaded in chunks).
func TestBot(t *testing.T) {
	f, api := newBotFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ctx := ctxT(t)
	if _, _, err := cl.OpenAndSignIn(ctx, FlowBot, map[string]string{"bot_id": testBot, "secret": "wrong-secret-000"}); err == nil || !strings.Contains(err.Error(), "refused the robot's credentials") {
		t.Fatalf("wrong secret: %v", err)
	}
	ch, _ := cl.SignIn(FlowBot, botLogin)
	e2e.Eventually(t, "the robot is connected", func() bool { return f.BotConnected(testBot) })

	id := botSay(t, f, wecomtest.BotMessage{From: testUser, Content: "stream please"})
	got := cl.ExpectAccept(ch)
	if got.MessageID != id || got.Text != "stream please" {
		t.Fatalf("published %+v", got)
	}
	cl.Delta(ch, "s1", 1, "Hello")
	waitSent(t, f, testUser, "the stream shows", func(s []wecomtest.Sent) bool { return len(s) == 1 && s[0].Content == "Hello" })
	cl.Delta(ch, "s1", 2, " world")
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "s1", Text: "Hello world!", InReplyTo: id}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	s := f.Sent(testUser)
	if len(s) != 1 || s[0].MsgType != "stream" || s[0].Content != "Hello world!" || !s[0].Finished {
		t.Fatalf("stream %+v", s)
	}

	// The last delta shows the whole final: finish is still sent.
	id2 := botSay(t, f, wecomtest.BotMessage{From: testUser, Content: "again"})
	cl.ExpectAccept(ch)
	cl.Delta(ch, "s2", 1, "Same text")
	waitSent(t, f, testUser, "the second stream shows", func(s []wecomtest.Sent) bool { return len(s) == 2 && s[1].Content == "Same text" })
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "s2", Text: "Same text", InReplyTo: id2}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	if s := f.Sent(testUser); len(s) != 2 || !s[1].Finished || s[1].Content != "Same text" {
		t.Fatalf("second stream %+v", s)
	}

	botSay(t, f, wecomtest.BotMessage{From: testUser, Image: pngBytes})
	img := cl.ExpectAccept(ch)
	if len(img.Files) != 1 || img.Files[0].Type != protocol.FileImage || string(cl.Fetch(img.Files[0].DownloadURL)) != string(pngBytes) {
		t.Fatalf("image %+v", img)
	}

	ref := cl.Put(ch, "report.pdf", "application/pdf", []byte(strings.Repeat("%PDF", 200000))) // 800 kB: two chunks
	if res, err := cl.InvokeRaw(ctx, ch, ToolSend, json.RawMessage(`{"text":"from the tool","file":"`+ref+`"}`), "call-1"); err != nil {
		t.Fatalf("tool: %s %v", res, err)
	}
	s = f.Sent(testUser)
	if len(s) != 4 || s[2].MsgType != "markdown" || s[2].Content != "from the tool" || s[3].MsgType != "file" {
		t.Fatalf("tool sent %+v", s)
	}
	if m, ok := f.Media(s[3].MediaID); !ok || len(m.Data) != 800000 || m.Name != "report.pdf" {
		t.Fatalf("uploaded %d bytes %q", len(m.Data), m.Name)
	}
	cn.Stop()
	botSecrets := e2e.Secrets{testBotSecret}
	if sec, ok := botSecrets.Find(cn.Logs.String()); ok {
		t.Fatalf("a secret in the logs: %s", sec)
	}
}

// TestE2EBot is the kit's end-to-end for a robot over its long connection:
// conformance, the host's echo exactly once across a restart that closes
// the connection, a SIGKILL mid-stream (the stream picked up after the
// restart under the same req_id and stream id), the wire, secret scans.
func TestE2EBot(t *testing.T) {
	e2e.Run(t, e2e.Target{
		Fake:      botChat,
		New:       build(nil, nil),
		SignIn:    e2e.SignIn{Flow: FlowBot, Input: botLogin},
		MustPass:  []string{"imv2.ack-duplicate", "imv2.ack-conflict", "imv2.final-with-file", "imv2.delta-final"},
		MaySkip:   []string{"tool.idempotency", "tool.idempotency-request-id"},
		Tool:      ToolSend,
		ToolArgs:  json.RawMessage(`{"text": "` + toolText + `"}`),
		Secrets:   e2e.Secrets{testBotSecret},
		BadSignIn: &e2e.BadSignIn{Input: map[string]string{"bot_id": testBot, "secret": "wrongBotSecret-0123456789"}, Message: "refused the robot's credentials"},
	})
}

func botChat(tb testing.TB, _ string) *e2e.Fake {
	f, url := newBotFake(tb)
	return &e2e.Fake{Addr: url,
		Say: func(ctx context.Context, text string) error {
			_, _, err := f.SendBot(ctx, testBot, wecomtest.BotMessage{From: testUser, Content: text})
			return err
		},
		Said:      func(context.Context) ([]string, error) { return texts(f.Sent(testUser)), nil },
		Connected: func() bool { return f.BotConnected(testBot) },
		Streams:   true,
		Conformance: func(t *testing.T, _ *conformance.Report) {
			if n := e2e.Count(texts(f.Sent(testUser)), toolText); n > 1 {
				t.Errorf("the tool's text was sent %d times", n)
			}
		}}
}

// TestBotDropped: a connection cut in the middle of a streamed answer is
// dialed again (the channel degraded meanwhile), and the answer's final
// finishes the same stream under the same req_id over the new connection;
// a connection WeCom ends for a newer one of the same robot is not dialed
// again (the channel goes to error), so two connectors never kick each
// other forever.
func TestBotDropped(t *testing.T) {
	f, api := newBotFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", func(o *Options) {})
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowBot, botLogin)
	e2e.Eventually(t, "the robot is connected", func() bool { return f.BotConnected(testBot) })
	id := botSay(t, f, wecomtest.BotMessage{From: testUser, Content: "long answer"})
	cl.ExpectAccept(ch)
	cl.Delta(ch, "d1", 1, "Part one")
	waitSent(t, f, testUser, "the stream shows", func(s []wecomtest.Sent) bool { return len(s) == 1 })
	f.DropBot(testBot)
	e2e.Eventually(t, "the robot is connected again", func() bool { return f.BotConnected(testBot) })
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "d1", Text: "Part one, part two.", InReplyTo: id}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	if s := f.Sent(testUser); len(s) != 1 || !s[0].Finished || s[0].Content != "Part one, part two." {
		t.Fatalf("sent %+v", s)
	}

	f.KickBot(ctxT(t), testBot)
	e2e.Eventually(t, "the channel is in error", func() bool {
		c, err := cn.c.Server().Channel(ch)
		return err == nil && c.Status() == protocol.StatusError
	})
	if f.BotConnected(testBot) {
		t.Fatal("the connector dialed again after being replaced")
	}
}

// TestBotLateAnswer: an answer whose req_id WeCom no longer takes shows
// no partial text: the deltas are not pushed, the final is pushed once.
func TestBotLateAnswer(t *testing.T) {
	f, api := newBotFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowBot, botLogin)
	e2e.Eventually(t, "the robot is connected", func() bool { return f.BotConnected(testBot) })
	id := botSay(t, f, wecomtest.BotMessage{From: testUser, Content: "first"})
	cl.ExpectAccept(ch)
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "f1", Text: "one", InReplyTo: id}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	// A second answer to the same message: its req_id is answered already.
	cl.Delta(ch, "f2", 1, "partial")
	cl.Delta(ch, "f2", 2, " text")
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "f2", Text: "partial text, complete", InReplyTo: id}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	s := f.Sent(testUser)
	if len(s) != 2 || s[1].MsgType != "markdown" || s[1].Content != "partial text, complete" {
		t.Fatalf("sent %+v", s)
	}
}
