package wecom

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connectors/wecom/wecomtest"
	"github.com/xconn/xconn/protocol"
)

// TestCallback: the URL verification echoes the decrypted echostr; a
// message is published once although WeCom retries it; the answer is
// sent to its sender with message/send; forged callbacks of each kind are
// refused with 4xx, publish nothing and are logged once per kind however
// many arrive; no secret reaches the logs.
func TestCallback(t *testing.T) {
	f, api := newFake(t, "http://placeholder")
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	f.SetCallbackURL(testCorp, testAgent, cn.URL+callbackPath())
	ctx := ctxT(t)
	app := wecomtest.Callback{CorpID: testCorp, AgentID: testAgent}

	// Before any sign-in, nothing is bound to the path.
	if a, err := f.VerifyURL(ctx, app, "early"); err != nil || a.Status != http.StatusNotFound {
		t.Fatalf("unbound verification: %v %d", err, a.Status)
	}
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)

	a, err := f.VerifyURL(ctx, app, "echo-1616140317555161061")
	if err != nil || a.Status != http.StatusOK || string(a.Body) != "echo-1616140317555161061" {
		t.Fatalf("verification: %v %d %q", err, a.Status, a.Body)
	}

	plain, msgID := f.MessageXML(testCorp, testAgent, wecomtest.Message{From: testUser, Content: "hello over the callback"})
	forged := map[string]wecomtest.Callback{
		"bad signature": {CorpID: testCorp, AgentID: testAgent, BadSignature: true},
		"other token":   {CorpID: testCorp, AgentID: testAgent, Token: "another-token"},
		"wrong AES key": {CorpID: testCorp, AgentID: testAgent, Key: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
		"other corp":    {CorpID: testCorp, AgentID: testAgent, ReceiveID: "wwanothercorp0000"},
		"old timestamp": {CorpID: testCorp, AgentID: testAgent, Time: time.Now().Add(-10 * time.Minute)},
		"future":        {CorpID: testCorp, AgentID: testAgent, Time: time.Now().Add(10 * time.Minute)},
	}
	for round := 0; round < 3; round++ {
		for name, cb := range forged {
			a, err := f.PostCallback(ctx, cb, plain)
			if err != nil || a.Status/100 != 4 {
				t.Fatalf("%s: %v HTTP %d %q, want refused", name, err, a.Status, a.Body)
			}
		}
	}
	if a, _ := f.VerifyURL(ctx, wecomtest.Callback{CorpID: testCorp, AgentID: testAgent, BadSignature: true}, "x"); a.Status != http.StatusUnauthorized {
		t.Fatalf("forged verification: %d", a.Status)
	}

	// The genuine one, then WeCom's retry of it (fresh nonce): one message.
	good := wecomtest.Callback{CorpID: testCorp, AgentID: testAgent, Nonce: "1372623149"}
	if a, err := f.PostCallback(ctx, good, plain); err != nil || a.Status != http.StatusOK {
		t.Fatalf("callback: %v %d %q", err, a.Status, a.Body)
	}
	if a, err := f.PostCallback(ctx, app, plain); err != nil || a.Status != http.StatusOK {
		t.Fatalf("retry: %v %d %q", err, a.Status, a.Body)
	}
	// The same request again (its nonce used): a replay.
	if a, _ := f.PostCallback(ctx, good, plain); a.Status != http.StatusForbidden {
		t.Fatalf("replayed nonce: %d", a.Status)
	}
	got := cl.ExpectAccept(ch)
	if got.Text != "hello over the callback" || got.MessageID != strconv.FormatInt(msgID, 10) {
		t.Fatalf("published %+v", got)
	}
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "a1", Text: "answered", InReplyTo: got.MessageID}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	sent := f.Sent(testUser)
	if len(sent) != 1 || sent[0].Content != "answered" || sent[0].MsgType != "text" || sent[0].AgentID != testAgent {
		t.Fatalf("sent %+v", sent)
	}
	// The next message is the next one published: the retry was not.
	id2, err := f.SendText(ctx, testCorp, testAgent, testUser, "second")
	if err != nil {
		t.Fatal(err)
	}
	if got := cl.ExpectAccept(ch); got.MessageID != id2 {
		t.Fatalf("published %+v, want only %s", got, id2)
	}

	cn.Stop()
	logs := cn.Logs.String()
	for _, kind := range []string{refuseSignature, refuseDecrypt, refuseReceiver, refuseReplay, refuseUnbound} {
		if n := strings.Count(logs, kind); n != 1 {
			t.Errorf("refusal %q logged %d times, want once:\n%s", kind, n, logs)
		}
	}
	if s, ok := secrets.Find(logs); ok {
		t.Errorf("a secret in the logs: %s", s)
	}
}
