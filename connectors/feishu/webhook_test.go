package feishu

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/feishu/feishutest"
	"github.com/xconn/xconn/protocol"
)

const (
	hookToken = "v-token-9f8e7d6c5b4a"
	hookKey   = "encrypt-key-1a2b3c4d5e6f7a8b"
)

func webhookMode(token, key string) func(*Options) {
	return func(o *Options) { o.Events, o.VerificationToken, o.EncryptKey = EventsWebhook, token, key }
}

func post(t *testing.T, f *feishutest.Server, wh feishutest.Webhook, ev []byte) feishutest.WebhookAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	a, err := f.PostWebhook(ctx, wh, ev)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestWebhook: with an Encrypt Key and a Verification Token, the URL
// verification (encrypted, unsigned) is answered with its challenge;
// encrypted, signed events are published once (a re-push is acked, not
// published again, also after a restart); bad signatures, missing ones
// and other tokens are refused; no long connection is opened; the reply
// goes to the p2p chat.
func TestWebhook(t *testing.T) {
	f, api := newFake(t)
	data := t.TempDir()
	cn := startConn(t, data, api, "127.0.0.1:0", webhookMode(hookToken, hookKey))
	addr := strings.TrimPrefix(cn.URL, "http://")
	wh := feishutest.Webhook{URL: cn.URL + WebhookPath, VerificationToken: hookToken, EncryptKey: hookKey}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	a, err := f.VerifyURL(ctx, wh, "ch-4711")
	var ans struct {
		Challenge string `json:"challenge"`
	}
	if err != nil || a.Status != http.StatusOK || json.Unmarshal(a.Body, &ans) != nil || ans.Challenge != "ch-4711" {
		t.Fatalf("URL verification: %v %d %s", err, a.Status, a.Body)
	}
	bad := wh
	bad.VerificationToken = "another-token"
	if a, _ := f.VerifyURL(ctx, bad, "x"); a.Status != http.StatusUnauthorized {
		t.Fatalf("URL verification with another token: %d %s", a.Status, a.Body)
	}

	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	ev, id := f.MessageEvent(feishutest.Message{AppID: testApp, ChatID: testChat, Content: map[string]string{"text": "over the webhook"}})
	for name, w := range map[string]feishutest.Webhook{
		"bad signature":  {URL: wh.URL, VerificationToken: hookToken, EncryptKey: hookKey, BadSignature: true},
		"no signature":   {URL: wh.URL, VerificationToken: hookToken, EncryptKey: hookKey, NoSignature: true},
		"another token":  bad,
		"another key":    {URL: wh.URL, VerificationToken: hookToken, EncryptKey: "not-the-key"},
		"not encrypted!": {URL: wh.URL, VerificationToken: hookToken},
	} {
		if a := post(t, f, w, ev); a.Status/100 != 4 {
			t.Errorf("%s: HTTP %d %s, want refused", name, a.Status, a.Body)
		}
	}
	if a := post(t, f, wh, ev); a.Status != http.StatusOK || !strings.Contains(string(a.Body), "success") {
		t.Fatalf("event: %d %s", a.Status, a.Body)
	}
	if got := cl.ExpectAccept(ch); got.MessageID != id || got.Text != "over the webhook" {
		t.Fatalf("published %+v", got)
	}
	if f.Connected(testApp) || f.Calls("endpoint") != 0 {
		t.Fatal("webhook mode opened a long connection")
	}
	if a := post(t, f, wh, ev); a.Status != http.StatusOK {
		t.Fatalf("re-push: %d %s", a.Status, a.Body)
	}
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "w1", Text: "answered"}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	if s := f.Sent(testChat); len(s) != 1 || s[0].Text() != "answered" {
		t.Fatalf("sent %+v", s)
	}

	// Restart on the same data: the re-pushed event stays published once.
	cl.Close()
	cn.Stop()
	cn = startConn(t, data, api, addr, webhookMode(hookToken, hookKey))
	cl = cn.Dial(t)
	if _, err := cl.Open(ctx, ch); err != nil {
		t.Fatal(err)
	}
	e2e.Eventually(t, "the channel is restored", func() bool {
		c, err := cn.c.Server().Channel(ch)
		return err == nil && c.Authenticated()
	})
	if a := post(t, f, wh, ev); a.Status != http.StatusOK {
		t.Fatalf("re-push after restart: %d %s", a.Status, a.Body)
	}
	ev2, id2 := f.MessageEvent(feishutest.Message{AppID: testApp, ChatID: testChat, Content: map[string]string{"text": "after the restart"}})
	if a := post(t, f, wh, ev2); a.Status != http.StatusOK {
		t.Fatalf("event: %d %s", a.Status, a.Body)
	}
	if got := cl.ExpectAccept(ch); got.MessageID != id2 {
		t.Fatalf("after the restart, published %+v (want only %s)", got, id2)
	}
}

// TestWebhookPlain: without an Encrypt Key, plaintext events are taken
// (no signature to check), an encrypted one is refused, and an event of
// an app no channel is bound to is acked and dropped.
func TestWebhookPlain(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", webhookMode("", ""))
	wh := feishutest.Webhook{URL: cn.URL + WebhookPath}
	other, _ := f.MessageEvent(feishutest.Message{AppID: "cli_nobodybound0000", ChatID: testChat, Content: map[string]string{"text": "x"}})
	if a := post(t, f, wh, other); a.Status != http.StatusOK {
		t.Fatalf("unbound app: %d %s", a.Status, a.Body)
	}
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	ev, id := f.MessageEvent(feishutest.Message{AppID: testApp, ChatID: testChat, Content: map[string]string{"text": "plain"}})
	if a := post(t, f, feishutest.Webhook{URL: wh.URL, EncryptKey: "k"}, ev); a.Status != http.StatusBadRequest {
		t.Fatalf("encrypted without a key: %d %s", a.Status, a.Body)
	}
	if a := post(t, f, wh, ev); a.Status != http.StatusOK {
		t.Fatalf("event: %d %s", a.Status, a.Body)
	}
	if got := cl.ExpectAccept(ch); got.MessageID != id {
		t.Fatalf("published %+v", got)
	}
}

// TestDecrypt: the fake's encryption (PKCS#7, random IV) opens with
// Decrypt, and Signature matches the fake's Sign.
func TestDecrypt(t *testing.T) {
	plain := []byte(`{"schema":"2.0","header":{"event_id":"e"}}`)
	got, err := Decrypt(feishutest.Encrypt(plain, hookKey), hookKey)
	if err != nil || string(got) != string(plain) {
		t.Fatalf("Decrypt: %q %v", got, err)
	}
	if _, err := Decrypt(feishutest.Encrypt(plain, hookKey), "wrong"); err == nil {
		t.Fatal("decrypted with the wrong key")
	}
	if Signature("1", "n", hookKey, plain) != feishutest.Sign("1", "n", hookKey, plain) {
		t.Fatal("signatures differ")
	}
}
