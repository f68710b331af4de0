package dingtalk

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connectors/dingtalk/dingtalktest"
	"github.com/xconn/xconn/protocol"
)

// TestCard: id, provider, label, target, profile, the form flow with a
// secret client_secret and an optional robot_code, the tool and the
// Skill.
func TestCard(t *testing.T) {
	_, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	card, err := connectortest.FetchCard(t.Context(), cn.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	if card.ConnectorCardID != CardID || len(card.Supports.Targets) != 1 || card.Supports.Targets[0].Provider != "dingtalk" ||
		card.Supports.TargetTypes[0] != protocol.TargetIM || card.Supports.Profiles[0] != protocol.ProfileIMv2 {
		t.Fatalf("card identity: %+v", card.Supports)
	}
	if len(card.AuthFlows) != 1 || card.AuthFlows[0].ID != FlowApp || card.AuthFlows[0].Type != "form" || len(card.AuthFlows[0].Fields) != 3 {
		t.Fatalf("flows %+v", card.AuthFlows)
	}
	fs := card.AuthFlows[0].Fields
	if fs[0].Name != "client_id" || fs[0].Secret || fs[1].Name != "client_secret" || !fs[1].Secret || fs[1].InputType != "password" ||
		fs[2].Name != "robot_code" || fs[2].Required {
		t.Fatalf("fields %+v", fs)
	}
	if len(card.Tools) != 1 || card.Tools[0].ToolID != ToolSend || !strings.Contains(string(card.Tools[0].InputSchema), protocol.FormatUploadRef) {
		t.Fatalf("tools %+v", card.Tools)
	}
}

// TestSignIn: good credentials are verified with an access token and
// authenticate; bad ones fail naming what to fix; no secret in frames.
func TestSignIn(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	_, st := cl.SignIn(FlowApp, login)
	if st.Status != protocol.AuthAuthenticated || st.ConnectionDescriptor == nil ||
		st.ConnectionDescriptor.Target.DisplayName != "DingTalk app "+testClient {
		t.Fatalf("state %+v", st)
	}
	if f.Calls("token") == 0 {
		t.Fatal("no access token request")
	}
	for _, tc := range []struct {
		name string
		in   map[string]string
		want string
	}{
		{"wrong secret", map[string]string{"client_id": "dingotherapp00001", "client_secret": "nope-nope-nope-nope"}, "DingTalk refused the app credentials"},
		{"malformed id", map[string]string{"client_id": "a b", "client_secret": "whatever-secret"}, "client_id must be a DingTalk Client ID"},
		{"malformed robot code", map[string]string{"client_id": testClient, "client_secret": "whatever-secret", "robot_code": "a/b"}, "robot_code must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			open, err := cl.Open(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.SignInForm(ctx, open.ConnectorChannelID, FlowApp, tc.in)
			msg := ""
			var se *connectortest.SignInError
			if errors.As(err, &se) {
				msg = se.State.Message
			} else if err != nil {
				msg = err.Error()
			}
			if !strings.Contains(msg, tc.want) || strings.Contains(msg, tc.in["client_secret"]) {
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

// TestInbound1to1: a direct message arrives over the Stream connection
// and is acked only once published; the final goes back through the
// message's session webhook, and once the session expired through
// oToMessages/batchSend.
func TestInbound1to1(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	id := say(t, f, dingtalktest.Message{Text: "hello bot"})
	got := cl.ExpectAccept(ch)
	if got.MessageID != id || got.Text != "hello bot" {
		t.Fatalf("published %+v", got)
	}
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "a1", InReplyTo: id, Text: "You said hello bot"}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	sent := waitSent(t, f, aliceConv, "the reply", func(s []dingtalktest.Sent) bool { return len(s) >= 1 })
	if len(sent) != 1 || sent[0].Text != "You said hello bot" || sent[0].Via != "session" || sent[0].Kind != "markdown" {
		t.Fatalf("sent %+v", sent)
	}
	id2 := say(t, f, dingtalktest.Message{Text: "again"})
	cl.ExpectAccept(ch)
	f.ExpireSessions()
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "a2", InReplyTo: id2, Text: "later answer"}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	sent = waitSent(t, f, aliceConv, "the second reply", func(s []dingtalktest.Sent) bool { return len(s) >= 2 })
	if sent[1].Text != "later answer" || sent[1].Via != "oto" || sent[1].UserID != "alice" || sent[1].Kind != "sampleMarkdown" {
		t.Fatalf("sent %+v", sent[1])
	}
}

// TestInboundGroup: a group @-mention is published; its answer goes to
// the group through groupMessages/send when the session is gone.
func TestInboundGroup(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	id := say(t, f, dingtalktest.Message{ConversationType: dingtalktest.ConversationGroup, ConversationID: groupConv, AtBot: true,
		SenderStaffID: "bob", Text: " what time is it"})
	if got := cl.ExpectAccept(ch); got.MessageID != id || got.Text != "what time is it" {
		t.Fatalf("published %+v", got)
	}
	f.ExpireSessions()
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "g1", InReplyTo: id, Text: "noon"}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	sent := waitSent(t, f, groupConv, "the group reply", func(s []dingtalktest.Sent) bool { return len(s) >= 1 })
	if sent[0].Via != "group" || sent[0].Text != "noon" {
		t.Fatalf("sent %+v", sent)
	}
	// The tool posts to the default 1:1 chat, which a group message does
	// not set.
	if len(f.Sent(aliceConv)) != 0 {
		t.Fatal("posted to alice")
	}
}

// TestStreamedCard: with a card template, deltas create an AI card and
// update it; the final finalizes it with the complete text.
func TestStreamedCard(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", withCards)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	id := say(t, f, dingtalktest.Message{Text: "stream please"})
	cl.ExpectAccept(ch)
	for i, d := range []string{"You ", "said ", "stream"} {
		cl.Delta(ch, "s1", int64(i+1), d)
		time.Sleep(40 * time.Millisecond)
	}
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "s1", InReplyTo: id, Text: "You said stream please"}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	sent := waitSent(t, f, aliceConv, "a finalized card", func(s []dingtalktest.Sent) bool { return len(s) >= 1 && s[0].Finalized })
	if len(sent) != 1 || sent[0].Via != "card" || sent[0].Text != "You said stream please" || sent[0].Streams == 0 {
		t.Fatalf("sent %+v", sent)
	}
	// Without deltas, the answer is one markdown message, not a card.
	id2 := say(t, f, dingtalktest.Message{Text: "short"})
	cl.ExpectAccept(ch)
	cl.Final(ch, protocol.ChatMessagePayload{MessageID: "s2", InReplyTo: id2, Text: "ok"})
	sent = waitSent(t, f, aliceConv, "the short answer", func(s []dingtalktest.Sent) bool { return len(s) >= 2 })
	if sent[1].Via != "session" || sent[1].Text != "ok" {
		t.Fatalf("sent %+v", sent[1])
	}
}

// TestStreamReconnects: a dropped Stream connection and an announced
// SYSTEM disconnect are both followed by a new connection (new ticket),
// and messages flow again; SYSTEM pings are answered with their opaque.
func TestStreamReconnects(t *testing.T) {
	f, api := newFake(t)
	f.SetPing(50 * time.Millisecond)
	f.SetDisconnectGrace(200 * time.Millisecond)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	say(t, f, dingtalktest.Message{Text: "one"})
	cl.ExpectAccept(ch)
	waitPongs(t, f)
	opens := f.Calls("open")
	f.Drop(testClient)
	if got := say(t, f, dingtalktest.Message{Text: "two"}); got == "" || cl.ExpectAccept(ch).Text != "two" {
		t.Fatal("no message after the drop")
	}
	f.Disconnect(testClient)
	deadline := time.Now().Add(wait)
	for f.Calls("open") < opens+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if f.Calls("open") < opens+2 {
		t.Fatalf("registrations %d, want %d", f.Calls("open"), opens+2)
	}
	say(t, f, dingtalktest.Message{Text: "three"})
	if got := cl.ExpectAccept(ch); got.Text != "three" {
		t.Fatalf("published %+v", got)
	}
}

func waitPongs(t *testing.T, f *dingtalktest.Server) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for f.Pongs(testClient) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no SYSTEM ping answered")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
