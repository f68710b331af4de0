package wechat_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connectors/wechat/wechattest"
	"github.com/xconn/xconn/protocol"
)

// TestInboundExactlyOnce: text, an image (raw key and image_item.aeskey),
// a file and a voice message (keys as base64 of hex) arrive once each,
// decrypted; after a restart on the same store the unacknowledged ones are
// redelivered and the acknowledged ones are not, and getupdates does not
// publish anything twice.
func TestInboundExactlyOnce(t *testing.T) {
	r := newRig(t, wechattest.Options{}, nil)
	c := r.Dial(t)
	ch, _ := r.signIn(c)
	img := bytes.Repeat([]byte("\x89PNG\r\n\x1a\n image bytes "), 40)
	doc := []byte("%PDF-1.4 a small pdf body")
	voice := []byte("#!SILK_V3 voice frames")
	hexKeys := wechattest.KeyBase64Hex
	ctx := t.Context()
	inject := func(in wechattest.Inbound) {
		t.Helper()
		if _, err := r.fake.Inject(in); err != nil {
			t.Fatal(err)
		}
	}
	inject(wechattest.Inbound{From: "u_a", Text: "hello"})
	inject(wechattest.Inbound{From: "u_a", Image: img, ImageHexKey: true})
	expect := func() *connectortest.Message {
		t.Helper()
		m, err := c.ExpectMessage(ctx, ch, wait)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// The outbox delivers a channel's messages in order, one at a time:
	// each is acknowledged before the next arrives.
	m1 := expect()
	if m1.Text != "hello" {
		t.Fatalf("text %q", m1.Text)
	}
	if err := c.Ack(ctx, m1, protocol.AckAccepted); err != nil {
		t.Fatal(err)
	}
	m2 := expect()
	if len(m2.Files) != 1 || m2.Files[0].Type != protocol.FileImage || !bytes.Equal(c.Fetch(m2.Files[0].DownloadURL), img) {
		t.Fatalf("image %+v %q: want the decrypted bytes", m2.Files, m2.Text)
	}
	if err := c.Ack(ctx, m2, protocol.AckAccepted); err != nil {
		t.Fatal(err)
	}
	inject(wechattest.Inbound{From: "u_b", File: doc, FileName: "q3.pdf", Keys: &hexKeys})
	inject(wechattest.Inbound{From: "u_b", Voice: voice, Transcript: "call me", Keys: &hexKeys})
	m3 := expect()
	if len(m3.Files) != 1 || m3.Files[0].Filename != "q3.pdf" || !bytes.Equal(c.Fetch(m3.Files[0].DownloadURL), doc) {
		t.Fatalf("file %+v", m3.Files)
	}
	// m3 stays unacknowledged, and the voice message behind it in the
	// outbox, across a restart.
	time.Sleep(300 * time.Millisecond) // the voice message is read and stored meanwhile
	c.Close()
	r.Restart()
	c = r.Dial(t)
	if _, err := c.Open(ctx, ch); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	var voiceMsg *connectortest.Message
	for {
		m, err := c.ExpectMessage(ctx, ch, 2*time.Second)
		if err != nil {
			break
		}
		got[m.MessageID]++
		if m.MessageID != m3.MessageID {
			voiceMsg = m
		}
		c.Ack(ctx, m, protocol.AckAccepted)
	}
	if len(got) != 2 || got[m3.MessageID] != 1 || voiceMsg == nil {
		t.Fatalf("after the restart got %v, want %s and the voice message once each", got, m3.MessageID)
	}
	if voiceMsg.Text != "call me" || len(voiceMsg.Files) != 1 || voiceMsg.Files[0].Type != protocol.FileAudio ||
		!bytes.Equal(c.Fetch(voiceMsg.Files[0].DownloadURL), voice) {
		t.Fatalf("voice %q %+v", voiceMsg.Text, voiceMsg.Files)
	}
	// A new message after the restart arrives once, and nothing else.
	inject(wechattest.Inbound{From: "u_a", Text: "after", QuoteTitle: "q", QuoteText: "hello"})
	m5 := expect()
	if !strings.Contains(m5.Text, "> hello") || !strings.HasSuffix(m5.Text, "after") {
		t.Fatalf("quoted text %q", m5.Text)
	}
	c.Ack(ctx, m5, protocol.AckAccepted)
	if m, err := c.ExpectMessage(ctx, ch, time.Second); err == nil {
		t.Fatalf("unexpected message %s %q", m.MessageID, m.Text)
	}
	acct, _ := r.fake.Account("")
	if acct.NotifyStarts < 2 || acct.NotifyStops < 1 {
		t.Errorf("notifystart %d, notifystop %d; want one per loop", acct.NotifyStarts, acct.NotifyStops)
	}
	r.noViolations()
}
