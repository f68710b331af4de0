package wechat_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/wechat"
	"github.com/xconn/xconn/connectors/wechat/wechattest"
	"github.com/xconn/xconn/protocol"
)

// inbound injects a text from peer and waits for (and acks) its message.
func (r *rig) inbound(c *e2e.Client, ch, peer, text string) wechattest.Message {
	r.t.Helper()
	wm, err := r.fake.Inject(wechattest.Inbound{From: peer, Text: text})
	if err != nil {
		r.t.Fatal(err)
	}
	c.ExpectAccept(ch)
	return wm
}

// TestReplyContextToken: a final goes to the sender of the latest inbound
// message with that peer's latest context_token, once; a redelivered
// final is a duplicate; activity shows typing, cancelled before sending.
func TestReplyContextToken(t *testing.T) {
	r := newRig(t, wechattest.Options{}, nil)
	c := r.Dial(t)
	ch, _ := r.signIn(c)
	r.inbound(c, ch, "u_a", "from a")
	r.inbound(c, ch, "u_b", "from b 1")
	b2 := r.inbound(c, ch, "u_b", "from b 2")

	c.Activity(ch, protocol.ActivityThinking, "")
	e2e.Eventually(t, "typing", func() bool { return len(r.fake.TypingEvents("")) > 0 })
	if ack := say(c, ch, "asst-1", "the answer"); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	sent := r.fake.Delivered("")
	if len(sent) != 1 || sent[0].To != "u_b" || sent[0].ContextToken != b2.ContextToken || sent[0].Text != "the answer" {
		t.Fatalf("sent %+v, want one message to u_b with its latest context token", sent)
	}
	ev := r.fake.TypingEvents("")
	if ev[0].Status != 1 || ev[len(ev)-1].Status != 2 || ev[0].User != "u_b" {
		t.Errorf("typing events %+v: want typing for u_b, then cancel", ev)
	}
	if ack := say(c, ch, "asst-1", "the answer"); ack.Status != protocol.AckDuplicate || len(r.fake.Sent("")) != 1 {
		t.Fatalf("redelivery: %+v, %d sent", ack, len(r.fake.Sent("")))
	}
	r.noViolations()
}

// TestMediaUpload: a final with a file, and wechat_message_send with text
// and a file, upload through getuploadurl and the CDN (AES-128-ECB) and
// send one item per sendmessage, the text first.
func TestMediaUpload(t *testing.T) {
	r := newRig(t, wechattest.Options{}, nil)
	c := r.Dial(t)
	ch, _ := r.signIn(c)
	wm := r.inbound(c, ch, "u_a", "send me the report")
	pdf := bytes.Repeat([]byte("report "), 300)
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1, 2, 3}, 100)...)

	ref := c.Put(ch, "report.pdf", "application/pdf", pdf)
	if ack := say(c, ch, "asst-f", "here it is", protocol.ChatFile{Type: protocol.FileFile, FileRef: ref}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	ref2 := c.Put(ch, "chart.png", "image/png", png)
	out, err := connectortest.Invoke[wechat.SendResult](t.Context(), c.Client, ch, wechat.ToolSend,
		map[string]any{"text": "and a chart", "file": ref2})
	if err != nil || out.Sent != 2 {
		t.Fatalf("tool: %+v, %v", out, err)
	}
	sent := r.fake.Delivered("")
	if len(sent) != 4 {
		t.Fatalf("%d messages sent, want 4", len(sent))
	}
	want := []struct {
		typ   int
		text  string
		media []byte
	}{{1, "here it is", nil}, {4, "", pdf}, {1, "and a chart", nil}, {2, "", png}}
	for i, w := range want {
		s := sent[i]
		if s.Item.Type != w.typ || s.Text != w.text || !bytes.Equal(s.Media, w.media) || s.To != "u_a" || s.ContextToken != wm.ContextToken {
			t.Errorf("message %d: type %d text %q to %s (%d media bytes)", i, s.Item.Type, s.Text, s.To, len(s.Media))
		}
	}
	if f := sent[1].Item.FileItem; f == nil || f.FileName != "report.pdf" || f.Len != "2100" {
		t.Errorf("file item %+v", f)
	}
	r.noViolations()
}

// TestSessionExpired: errcode -14 moves the channel to expired with a
// Descriptor push and stops the loop; a reply is rejected, not retryable;
// scanning again brings the channel back.
func TestSessionExpired(t *testing.T) {
	r := newRig(t, wechattest.Options{}, nil)
	c := r.Dial(t)
	ch, _ := r.signIn(c)
	r.inbound(c, ch, "u_a", "hi")
	if err := r.fake.ExpireSession(""); err != nil {
		t.Fatal(err)
	}
	push, err := c.NextMatch(t.Context(), func(env *protocol.Envelope) bool {
		var d protocol.DescriptorPayload
		return env.Type == protocol.TypeDescriptorPush && env.DecodePayload(&d) == nil &&
			d.ConnectionDescriptor != nil && d.ConnectionDescriptor.Connection.Status == protocol.StatusExpired
	})
	if err != nil || push == nil {
		t.Fatalf("no expired Descriptor push: %v", err)
	}
	n := len(r.fake.Requests())
	time.Sleep(300 * time.Millisecond)
	for _, q := range r.fake.Requests()[n:] {
		if strings.HasSuffix(q.Path, "getupdates") {
			t.Fatal("getupdates still polled after -14")
		}
	}
	ack := say(c, ch, "asst-x", "late answer")
	if ack.Status != protocol.AckRejected || ack.Retryable == nil || *ack.Retryable {
		t.Fatalf("ack %+v, want rejected and not retryable", ack)
	}
	// Scanning again signs a new bot in on the same channel.
	st, err := c.SignInQR(t.Context(), ch, wechat.FlowQR, e2e.OpenURL)
	if err != nil || st.ConnectionDescriptor.Connection.Status != protocol.StatusConnected {
		t.Fatalf("sign in again: %v %+v %+v", err, st, st.ConnectionDescriptor)
	}
	r.inbound(c, ch, "u_a", "back")
}

// TestPrepareFailed: ret -2 is retried once without the context token; a
// second -2 rejects the message as retryable, and the redelivery succeeds.
func TestPrepareFailed(t *testing.T) {
	r := newRig(t, wechattest.Options{}, nil)
	c := r.Dial(t)
	ch, _ := r.signIn(c)
	r.inbound(c, ch, "u_a", "hi")
	r.fake.StaleContext("", true)
	if ack := say(c, ch, "asst-1", "one"); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	sent := r.fake.Sent("")
	if len(sent) != 2 || sent[0].Ret != -2 || sent[0].ContextToken == "" || sent[1].Ret != 0 || sent[1].ContextToken != "" {
		t.Fatalf("sent %+v: want a -2 with the token, then a send without it", sent)
	}
	r.fake.StaleContext("", false)
	r.fake.FailSends("", -2, -2)
	ack := say(c, ch, "asst-2", "two")
	if ack.Status != protocol.AckRejected || ack.Retryable == nil || !*ack.Retryable || ack.Code != string(protocol.CodeTargetDeliveryFailed) {
		t.Fatalf("ack %+v, want a retryable rejection", ack)
	}
	if ack := say(c, ch, "asst-2", "two"); ack.Status != protocol.AckAccepted {
		t.Fatalf("redelivery: %+v", ack)
	}
	if d := r.fake.Delivered(""); len(d) != 2 || d[1].Text != "two" {
		t.Fatalf("delivered %+v", d)
	}
}

// TestRedaction: no bot token, context token or CDN parameter appears in
// the logs, on the wire to xAgent, or in tool results.
func TestRedaction(t *testing.T) {
	r := newRig(t, wechattest.Options{}, nil)
	c := r.Dial(t)
	ch, _ := r.signIn(c)
	wm, _ := r.fake.Inject(wechattest.Inbound{From: "u_a", Text: "pic", Image: []byte("image bytes here")})
	m, err := c.ExpectMessage(t.Context(), ch, wait)
	if err != nil {
		t.Fatal(err)
	}
	c.Ack(t.Context(), m, protocol.AckAccepted)
	ref := c.Put(ch, "a.txt", "text/plain", []byte("text file"))
	res, err := c.InvokeRaw(t.Context(), ch, wechat.ToolSend, map[string]any{"text": "x", "file": ref}, "call-1")
	if err != nil {
		t.Fatal(err)
	}
	r.fake.ExpireSession("")
	say(c, ch, "asst-1", "after expiry")
	acct, _ := r.fake.Account("")
	sent := r.fake.Sent("")
	secrets := []string{acct.Token, wm.ContextToken, wm.ItemList[1].ImageItem.Media.EncryptQueryParam}
	for _, s := range sent {
		if s.Item.FileItem != nil {
			secrets = append(secrets, s.Item.FileItem.Media.EncryptQueryParam, s.Item.FileItem.Media.AESKey)
		}
	}
	wire := strings.Join(c.Transcript(), "\n") + string(res)
	logs := r.Logs.String()
	for _, s := range secrets {
		if s == "" {
			t.Fatal("a secret to look for is empty")
		}
		if strings.Contains(wire, s) {
			t.Errorf("%.8s… reached xAgent", s)
		}
		if strings.Contains(logs, s) {
			t.Errorf("%.8s… reached the log", s)
		}
	}
	var out wechat.SendResult
	if json.Unmarshal(res, &out) != nil || out.Sent != 2 {
		t.Errorf("tool result %s", res)
	}
}
