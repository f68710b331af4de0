package wecomtest

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The callback side of a self-built application ("接收消息与事件"): WeCom
// POSTs each message as XML whose Encrypt member is the encrypted message
// XML, signed in the query (msg_signature, timestamp, nonce), and expects
// an answer within 5 seconds, else it retries, three times in all. This
// file encrypts and signs on its own (it does not share the connector's
// code), as the "加解密方案说明" page describes.

// Encrypt seals msg for receiveID with encodingAESKey: random(16) ‖
// msg_len (big-endian) ‖ msg ‖ receiveID, PKCS#7-padded to 32 bytes,
// AES-256-CBC with key Base64_Decode(EncodingAESKey+"=") and its first 16
// bytes as IV, Base64.
func Encrypt(encodingAESKey, receiveID string, msg []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(encodingAESKey + "=")
	if err != nil || len(key) != 32 {
		return "", errors.New("wecomtest: bad EncodingAESKey")
	}
	var buf []byte
	rnd := make([]byte, 16)
	_, _ = rand.Read(rnd)
	buf = append(buf, rnd...)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(msg)))
	buf = append(buf, msg...)
	buf = append(buf, receiveID...)
	pad := 32 - len(buf)%32
	for range pad {
		buf = append(buf, byte(pad))
	}
	block, _ := aes.NewCipher(key)
	cipher.NewCBCEncrypter(block, key[:16]).CryptBlocks(buf, buf)
	return base64.StdEncoding.EncodeToString(buf), nil
}

// Sign is msg_signature: hex SHA-1 of the sorted, concatenated token,
// timestamp, nonce and encrypt.
func Sign(token, timestamp, nonce, encrypt string) string {
	s := []string{token, timestamp, nonce, encrypt}
	sort.Strings(s)
	h := sha1.Sum([]byte(strings.Join(s, "")))
	return hex.EncodeToString(h[:])
}

// Callback says how one callback is sent, and how it is forged.
type Callback struct {
	// CorpID and AgentID name the application (registered with AddApp).
	CorpID  string
	AgentID int
	// BadSignature sends a wrong msg_signature.
	BadSignature bool
	// Key, when set, encrypts with this EncodingAESKey instead of the
	// application's (signed with the right token): a wrong AES key.
	Key string
	// Token, when set, signs with this token instead.
	Token string
	// ReceiveID, when set, is the receiveid instead of the corp_id.
	ReceiveID string
	// Time is the timestamp (zero: now); an old one is a replay.
	Time time.Time
	// Nonce is the nonce ("" a fresh one); an old one is a replay.
	Nonce string
}

// Message is a user's message to the application, as the callback's XML
// carries it (MsgType text, image, voice, video, location, link).
type Message struct {
	From    string
	MsgType string // default "text"
	Content string
	// MediaID and PicURL of an image (AddMedia stores its bytes).
	MediaID string
	PicURL  string
	// MsgID is the message's MsgId (0: the next one).
	MsgID int64
	// Time is CreateTime (zero: now).
	Time time.Time
}

// Answer is the developer server's HTTP answer.
type Answer struct {
	Status int
	Body   []byte
}

type cdata struct {
	Text string `xml:",cdata"`
}

// messageXML is the decrypted callback ("消息格式").
type messageXML struct {
	XMLName      xml.Name `xml:"xml"`
	ToUserName   cdata
	FromUserName cdata
	CreateTime   int64
	MsgType      cdata
	Content      *cdata `xml:",omitempty"`
	PicURL       *cdata `xml:"PicUrl,omitempty"`
	MediaID      *cdata `xml:"MediaId,omitempty"`
	MsgID        int64  `xml:"MsgId"`
	AgentID      int
}

// envelopeXML is the POST body.
type envelopeXML struct {
	XMLName    xml.Name `xml:"xml"`
	ToUserName cdata
	AgentID    cdata
	Encrypt    cdata
}

// MessageXML returns the plaintext XML of m to app corpID/agentID and its
// MsgId (the next one when m has none).
func (s *Server) MessageXML(corpID string, agentID int, m Message) ([]byte, int64) {
	if m.MsgID == 0 {
		s.mu.Lock()
		s.msgSeq++
		m.MsgID = s.msgSeq
		s.mu.Unlock()
	}
	if m.Time.IsZero() {
		m.Time = time.Now()
	}
	x := messageXML{ToUserName: cdata{corpID}, FromUserName: cdata{m.From}, CreateTime: m.Time.Unix(),
		MsgType: cdata{m.MsgType}, MsgID: m.MsgID, AgentID: agentID}
	if x.MsgType.Text == "" {
		x.MsgType.Text = "text"
	}
	if m.Content != "" || x.MsgType.Text == "text" {
		x.Content = &cdata{m.Content}
	}
	if m.MediaID != "" {
		x.MediaID = &cdata{m.MediaID}
	}
	if m.PicURL != "" {
		x.PicURL = &cdata{m.PicURL}
	}
	b, _ := xml.Marshal(x)
	return b, m.MsgID
}

// sealed is one signed, encrypted payload.
type sealed struct {
	query url.Values
	enc   string
}

func (s *Server) seal(cb Callback, plain []byte) (App, sealed, error) {
	a, ok := s.app(cb.CorpID, cb.AgentID)
	if !ok {
		return a, sealed{}, fmt.Errorf("wecomtest: no app %s/%d", cb.CorpID, cb.AgentID)
	}
	if a.CallbackURL == "" {
		return a, sealed{}, fmt.Errorf("wecomtest: app %s/%d has no callback URL", cb.CorpID, cb.AgentID)
	}
	key, tok, rid := a.EncodingAESKey, a.Token, a.CorpID
	if cb.Key != "" {
		key = cb.Key
	}
	if cb.Token != "" {
		tok = cb.Token
	}
	if cb.ReceiveID != "" {
		rid = cb.ReceiveID
	}
	enc, err := Encrypt(key, rid, plain)
	if err != nil {
		return a, sealed{}, err
	}
	ts := cb.Time
	if ts.IsZero() {
		ts = time.Now()
	}
	nonce := cb.Nonce
	if nonce == "" {
		n := make([]byte, 4)
		_, _ = rand.Read(n)
		nonce = strconv.FormatUint(uint64(binary.BigEndian.Uint32(n)), 10)
	}
	tstr := strconv.FormatInt(ts.Unix(), 10)
	sig := Sign(tok, tstr, nonce, enc)
	if cb.BadSignature {
		sig = Sign(tok+"x", tstr, nonce, enc)
	}
	return a, sealed{query: url.Values{"msg_signature": {sig}, "timestamp": {tstr}, "nonce": {nonce}}, enc: enc}, nil
}

var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func do(ctx context.Context, method, u string, body io.Reader) (Answer, error) {
	// WeCom waits 5 seconds for an answer.
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return Answer{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "text/xml")
	}
	res, err := client.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return Answer{Status: res.StatusCode, Body: b}, err
}

func withQuery(base string, q url.Values) string {
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + q.Encode()
}

// VerifyURL sends the URL verification (GET with echostr) that WeCom
// sends when an administrator saves the callback URL; the answer's body
// must be echo.
func (s *Server) VerifyURL(ctx context.Context, cb Callback, echo string) (Answer, error) {
	a, sl, err := s.seal(cb, []byte(echo))
	if err != nil {
		return Answer{}, err
	}
	sl.query.Set("echostr", sl.enc)
	return do(ctx, http.MethodGet, withQuery(a.CallbackURL, sl.query), nil)
}

// PostCallback sends one callback carrying plain (the message XML), once.
func (s *Server) PostCallback(ctx context.Context, cb Callback, plain []byte) (Answer, error) {
	a, sl, err := s.seal(cb, plain)
	if err != nil {
		return Answer{}, err
	}
	body, _ := xml.Marshal(envelopeXML{ToUserName: cdata{a.CorpID}, AgentID: cdata{strconv.Itoa(a.AgentID)}, Encrypt: cdata{sl.enc}})
	return do(ctx, http.MethodPost, withQuery(a.CallbackURL, sl.query), strings.NewReader(string(body)))
}

// SendMessage has user m.From write m to the application, as WeCom
// delivers it: the callback is retried (same MsgId, fresh timestamp and
// nonce) until the server answers 200, three retries at most. It returns
// the MsgId, or the last failure.
func (s *Server) SendMessage(ctx context.Context, corpID string, agentID int, m Message) (string, error) {
	plain, id := s.MessageXML(corpID, agentID, m)
	s.mu.Lock()
	delay := s.retry
	s.mu.Unlock()
	var last error
	for attempt := 0; attempt < 4; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(delay):
			}
		}
		a, err := s.PostCallback(ctx, Callback{CorpID: corpID, AgentID: agentID}, plain)
		if err == nil && a.Status == http.StatusOK {
			return strconv.FormatInt(id, 10), nil
		}
		if err == nil {
			err = fmt.Errorf("wecomtest: callback answered HTTP %d %q", a.Status, a.Body)
		}
		last = err
	}
	return "", last
}

// SendText has user write text to the application (SendMessage).
func (s *Server) SendText(ctx context.Context, corpID string, agentID int, user, text string) (string, error) {
	return s.SendMessage(ctx, corpID, agentID, Message{From: user, Content: text})
}

func sleepCtx(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Millisecond):
		return nil
	}
}
