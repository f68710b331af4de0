package feishutest

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Webhook is a developer server's event subscription (§3): where Feishu
// POSTs events and the app's Verification Token and Encrypt Key.
type Webhook struct {
	URL               string
	VerificationToken string
	// EncryptKey, when set, encrypts bodies and signs requests.
	EncryptKey string
	// BadSignature sends a wrong X-Lark-Signature; NoSignature none.
	BadSignature, NoSignature bool
}

// WebhookAnswer is the developer server's HTTP answer.
type WebhookAnswer struct {
	Status int
	Body   []byte
}

// Encrypt is Feishu's event encryption (§3): PKCS#7-padded plaintext,
// AES-256-CBC with key SHA-256(encryptKey) and a random IV prepended,
// base64.
func Encrypt(plain []byte, encryptKey string) string {
	key := sha256.Sum256([]byte(encryptKey))
	block, _ := aes.NewCipher(key[:])
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	data := append(append([]byte(nil), plain...), bytes.Repeat([]byte{byte(pad)}, pad)...)
	out := make([]byte, aes.BlockSize+len(data))
	_, _ = rand.Read(out[:aes.BlockSize])
	cipher.NewCBCEncrypter(block, out[:aes.BlockSize]).CryptBlocks(out[aes.BlockSize:], data)
	return base64.StdEncoding.EncodeToString(out)
}

// Sign is X-Lark-Signature (§3): hex SHA-256 of timestamp ‖ nonce ‖
// encrypt key ‖ body.
func Sign(timestamp, nonce, encryptKey string, body []byte) string {
	h := sha256.Sum256(append([]byte(timestamp+nonce+encryptKey), body...))
	return hex.EncodeToString(h[:])
}

// PostWebhook pushes a schema 2.0 event (as MessageEvent builds it) to
// wh: its header.token set to the Verification Token, encrypted and
// signed when wh has an Encrypt Key.
func (s *Server) PostWebhook(ctx context.Context, wh Webhook, event []byte) (WebhookAnswer, error) {
	var ev map[string]any
	if err := json.Unmarshal(event, &ev); err != nil {
		return WebhookAnswer{}, fmt.Errorf("feishutest: event: %w", err)
	}
	if h, ok := ev["header"].(map[string]any); ok {
		h["token"] = wh.VerificationToken
	}
	plain, _ := json.Marshal(ev)
	return s.post(ctx, wh, plain, true)
}

// VerifyURL sends the URL verification (§3) with challenge, encrypted
// when wh has an Encrypt Key and never signed, and returns the answer.
func (s *Server) VerifyURL(ctx context.Context, wh Webhook, challenge string) (WebhookAnswer, error) {
	plain, _ := json.Marshal(map[string]string{"challenge": challenge, "token": wh.VerificationToken, "type": "url_verification"})
	return s.post(ctx, wh, plain, false)
}

func (s *Server) post(ctx context.Context, wh Webhook, plain []byte, sign bool) (WebhookAnswer, error) {
	body := plain
	if wh.EncryptKey != "" {
		body, _ = json.Marshal(map[string]string{"encrypt": Encrypt(plain, wh.EncryptKey)})
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, wh.URL, bytes.NewReader(body))
	if err != nil {
		return WebhookAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	if sign && wh.EncryptKey != "" && !wh.NoSignature {
		ts, nonce := strconv.FormatInt(time.Now().Unix(), 10), newID("n")
		sig := Sign(ts, nonce, wh.EncryptKey, body)
		if wh.BadSignature {
			sig = Sign(ts, nonce, wh.EncryptKey+"x", body)
		}
		req.Header.Set("X-Lark-Request-Timestamp", ts)
		req.Header.Set("X-Lark-Request-Nonce", nonce)
		req.Header.Set("X-Lark-Signature", sig)
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := hc.Do(req)
	if err != nil {
		return WebhookAnswer{}, fmt.Errorf("feishutest: post webhook: %w", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<16))
	return WebhookAnswer{Status: res.StatusCode, Body: b}, nil
}
