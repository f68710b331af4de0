package feishu

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// Webhook mode (fact sheet §3): Feishu POSTs each event to WebhookPath
// on the connector's listener instead of the long connection. The
// handler decrypts an {"encrypt":...} body with the Encrypt Key
// (AES-256-CBC, key SHA-256 of the Encrypt Key, IV the first 16 bytes),
// answers the URL verification challenge after checking its token, and
// for events checks X-Lark-Signature (when an Encrypt Key is set, as the
// SDK does) and the Verification Token, then takes the same path as the
// long connection: handleEvent, durable dedupe by message_id, Publish.
// 200 acks an event; 500 makes Feishu push it again.

const (
	// maxWebhookBody bounds one event request.
	maxWebhookBody = 1 << 20
	// maxWebhookInFlight bounds the events handled at once; beyond it an
	// event gets 503 and Feishu pushes it again.
	maxWebhookInFlight = 32
)

// Signature is X-Lark-Signature of a request (§3): lowercase hex of
// SHA-256(timestamp ‖ nonce ‖ encrypt key ‖ body), body as received.
func Signature(timestamp, nonce, encryptKey string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(timestamp + nonce + encryptKey))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// Decrypt opens the "encrypt" member of an encrypted event (§3): base64,
// AES-256-CBC with key SHA-256(encryptKey) and the first 16 bytes as IV;
// like the SDK it keeps the bytes from the first '{' to the last '}'
// rather than trusting the padding.
func Decrypt(encrypted, encryptKey string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(encrypted)
	if err != nil {
		return nil, errors.New("feishu webhook: encrypt is not base64")
	}
	if len(raw) < 2*aes.BlockSize || len(raw)%aes.BlockSize != 0 {
		return nil, errors.New("feishu webhook: encrypt has a bad length")
	}
	key := sha256.Sum256([]byte(encryptKey))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(raw)-aes.BlockSize)
	cipher.NewCBCDecrypter(block, raw[:aes.BlockSize]).CryptBlocks(out, raw[aes.BlockSize:])
	i, j := bytes.IndexByte(out, '{'), bytes.LastIndexByte(out, '}')
	if i < 0 || j < i || !json.Valid(out[i:j+1]) {
		return nil, errors.New("feishu webhook: cannot decrypt (wrong Encrypt Key?)")
	}
	return out[i : j+1], nil
}

// webhookBody is what the handler reads of a (decrypted) body: the
// encryption wrapper, the URL verification and both event schemas.
type webhookBody struct {
	Encrypt   string `json:"encrypt"`
	Type      string `json:"type"`
	Challenge string `json:"challenge"`
	Token     string `json:"token"`
	Schema    string `json:"schema"`
	Header    struct {
		Token     string `json:"token"`
		AppID     string `json:"app_id"`
		EventType string `json:"event_type"`
	} `json:"header"`
}

func (c *Connector) tokenOK(tok string) bool {
	return c.verifyToken == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(c.verifyToken)) == 1
}

func webhookReply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// webhook serves POST WebhookPath.
func (c *Connector) webhook(w http.ResponseWriter, r *http.Request) {
	select {
	case c.webhookSlots <- struct{}{}:
		defer func() { <-c.webhookSlots }()
	default:
		webhookReply(w, http.StatusServiceUnavailable, map[string]string{"msg": "busy"})
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxWebhookBody+1))
	if err != nil || len(raw) > maxWebhookBody {
		webhookReply(w, http.StatusBadRequest, map[string]string{"msg": "bad body"})
		return
	}
	var outer webhookBody
	if err := json.Unmarshal(raw, &outer); err != nil {
		webhookReply(w, http.StatusBadRequest, map[string]string{"msg": "body is not JSON"})
		return
	}
	plain, body := raw, outer
	if outer.Encrypt != "" {
		if c.encryptKey == "" {
			c.log.Warn("feishu webhook: an encrypted event, but no Encrypt Key is configured (--feishu-encrypt-key)")
			webhookReply(w, http.StatusBadRequest, map[string]string{"msg": "Need to set up the EncryptKey"})
			return
		}
		if plain, err = Decrypt(outer.Encrypt, c.encryptKey); err == nil {
			err = json.Unmarshal(plain, &body)
		}
		if err != nil {
			c.log.Warn("feishu webhook: event not decrypted", "err", err)
			webhookReply(w, http.StatusBadRequest, map[string]string{"msg": "cannot decrypt"})
			return
		}
	}
	if body.Type == "url_verification" {
		// Never signed (§3); the token is checked first.
		if !c.tokenOK(body.Token) {
			c.log.Warn("feishu webhook: URL verification with another Verification Token refused")
			webhookReply(w, http.StatusUnauthorized, map[string]string{"msg": "verification token mismatch"})
			return
		}
		webhookReply(w, http.StatusOK, map[string]string{"challenge": body.Challenge})
		return
	}
	if c.encryptKey != "" {
		got := r.Header.Get("X-Lark-Signature")
		want := Signature(r.Header.Get("X-Lark-Request-Timestamp"), r.Header.Get("X-Lark-Request-Nonce"), c.encryptKey, raw)
		if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			c.log.Warn("feishu webhook: bad or missing X-Lark-Signature; refused")
			webhookReply(w, http.StatusUnauthorized, map[string]string{"msg": "signature verification failed"})
			return
		}
	}
	tok := body.Header.Token
	if body.Schema == "" {
		tok = body.Token // schema 1.0 (§3.1)
	}
	if !c.tokenOK(tok) {
		c.log.Warn("feishu webhook: event with another Verification Token refused")
		webhookReply(w, http.StatusUnauthorized, map[string]string{"msg": "verification token mismatch"})
		return
	}
	if body.Schema != "2.0" || body.Header.AppID == "" {
		webhookReply(w, http.StatusOK, map[string]string{"msg": "success"}) // nothing the connector reads
		return
	}
	m := c.apps.Members(body.Header.AppID)
	if len(m.Channels()) == 0 {
		// No channel is bound to this app: acked, or Feishu would push
		// it for as long as it retries.
		c.log.Info("feishu webhook: event for an app no channel is bound to; dropped", "app_id", body.Header.AppID)
		webhookReply(w, http.StatusOK, map[string]string{"msg": "success"})
		return
	}
	if err := c.handleEvent(r.Context(), m, plain); err != nil {
		c.log.Warn("feishu webhook: event not handled (Feishu pushes it again)", "app_id", body.Header.AppID, "err", err)
		webhookReply(w, http.StatusInternalServerError, map[string]string{"msg": "event not handled"})
		return
	}
	webhookReply(w, http.StatusOK, map[string]string{"msg": "success"})
}
