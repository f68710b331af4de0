// Package wecomtest is a fake WeCom (企业微信) for tests, written from the
// public documents the connector's README cites: an http.Handler with the
// server API a self-built application calls (gettoken, message/send,
// media/upload, media/get), a sender of application
// callbacks that encrypts and signs them as WeCom does (Callback, with
// forgeries on request), and the intelligent robot's long connection
// (bot.go).
//
// Errors have WeCom's envelope ({"errcode":N,"errmsg":"..."}, HTTP 200);
// FailNext injects one (42001 to expire a token, 45009 for the frequency
// limit). Every record is bounded (MaxSent, MaxMedia). A Server is safe for
// concurrent use.
package wecomtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Bounds and behaviour of the fake.
const (
	// MaxSent bounds the messages remembered.
	MaxSent = 1000
	// MaxMedia bounds the media kept (uploads and users' files).
	MaxMedia = 1000
	// TokenTTL is the expires_in of issued access tokens, in seconds
	// (WeCom: 7200).
	TokenTTL = 7200
	// MaxUpload bounds one upload (WeCom's file limit is 20 MB).
	MaxUpload = 20 << 20
	// BotPath is the path of the robots' long connection on the fake
	// (WeCom's is the root of wss://openws.work.weixin.qq.com).
	BotPath = "/aibot"
)

// Sent is one message an application (message/send) or a robot
// (aibot_respond_msg, aibot_send_msg) sent, as it stands now.
type Sent struct {
	ID      string // msgid, or the robot's stream id
	CorpID  string
	AgentID int
	BotID   string
	ToUser  string
	MsgType string // text, markdown, image, file, stream
	Content string // text/markdown content, stream content
	MediaID string
	// Finished is a robot stream's finish; Updates counts its updates.
	Finished bool
	Updates  int
}

// Media is an uploaded or user file.
type Media struct {
	Type string
	Name string
	Data []byte
}

// App is a self-built application: its credentials and its callback
// configuration (what an administrator enters on its 接收消息 page).
type App struct {
	CorpID         string
	AgentID        int
	Secret         string
	Token          string
	EncodingAESKey string
	// CallbackURL is where WeCom posts the application's callbacks.
	CallbackURL string
}

type failure struct {
	code int
	msg  string
}

// Server is the fake. Create it with New, add apps and bots, Start it,
// Close it.
type Server struct {
	hs *httptest.Server

	mu     sync.Mutex
	apps   map[string]*App   // corp_id/agent_id → app
	tokens map[string]string // access token → corp_id/secret key
	issued []string
	sent   []Sent
	media  map[string]Media
	fail   map[string][]failure // path ("" any) → queued failures
	calls  map[string]int
	seq    uint64
	msgSeq int64
	retry  time.Duration
	// The robots: credentials, live connections, callbacks' req_ids,
	// uploads in progress, every open socket.
	botSecrets map[string]string
	botLive    map[string]*botSession
	botReqs    map[string]*callbackReq
	uploads    map[string]*upload
	botAll     map[*websocket.Conn]struct{}
	closed     bool
}

// New returns an unstarted fake.
func New() *Server {
	s := &Server{apps: map[string]*App{}, tokens: map[string]string{}, media: map[string]Media{},
		fail: map[string][]failure{}, calls: map[string]int{}, botSecrets: map[string]string{}, botLive: map[string]*botSession{},
		botReqs: map[string]*callbackReq{}, uploads: map[string]*upload{}, botAll: map[*websocket.Conn]struct{}{}}
	s.msgSeq = 4561255354251345929 // the documented example's MsgId
	s.retry = 200 * time.Millisecond
	return s
}

func appKey(corpID string, agentID int) string { return corpID + "/" + strconv.Itoa(agentID) }

// AddApp registers a self-built application.
func (s *Server) AddApp(a App) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := a
	s.apps[appKey(a.CorpID, a.AgentID)] = &c
}

// SetCallbackURL sets where the application's callbacks go.
func (s *Server) SetCallbackURL(corpID string, agentID int, url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.apps[appKey(corpID, agentID)]; a != nil {
		a.CallbackURL = url
	}
}

func (s *Server) app(corpID string, agentID int) (App, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.apps[appKey(corpID, agentID)]
	if a == nil {
		return App{}, false
	}
	return *a, true
}

// Start serves the fake on a loopback port and returns its base URL.
func (s *Server) Start() string {
	s.hs = httptest.NewServer(s)
	return s.hs.URL
}

// URL is the base URL of a started fake.
func (s *Server) URL() string { return s.hs.URL }

// Close stops the fake, closing the robots' connections first.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	for ws := range s.botAll {
		ws.CloseNow()
	}
	s.mu.Unlock()
	if s.hs != nil {
		s.hs.Close()
	}
}

// FailNext makes the next call of path (all paths for "") answer errcode
// code with msg.
func (s *Server) FailNext(path string, code int, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[path] = append(s.fail[path], failure{code: code, msg: msg})
}

// SetRetryDelay sets the pause between WeCom's attempts of a callback in
// SendMessage (default 200 ms; WeCom's is about 5 s).
func (s *Server) SetRetryDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retry = d
}

// ExpireTokens invalidates every issued access token: the next call with
// one answers 42001.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.tokens)
}

// IssuedTokens returns every access token issued so far.
func (s *Server) IssuedTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.issued...)
}

// Calls returns how often path was called.
func (s *Server) Calls(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[path]
}

// Sent returns what was sent to user (every user for ""), oldest first.
func (s *Server) Sent(user string) []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Sent
	for _, m := range s.sent {
		if user == "" || m.ToUser == user {
			out = append(out, m)
		}
	}
	return out
}

// Media returns an uploaded file.
func (s *Server) Media(id string) (Media, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.media[id]
	return m, ok
}

// AddMedia stores a user's file (as an image or file message carries it)
// and returns its media_id.
func (s *Server) AddMedia(m Media) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addMediaLocked(m)
}

func (s *Server) addMediaLocked(m Media) string {
	if len(s.media) >= MaxMedia {
		for k := range s.media {
			delete(s.media, k)
			break
		}
	}
	id := "m" + randHex(16)
	s.media[id] = m
	return id
}

func (s *Server) record(m Sent) {
	s.sent = append(s.sent, m)
	if len(s.sent) > MaxSent {
		s.sent = s.sent[len(s.sent)-MaxSent:]
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Server) nextID(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s%d%s", prefix, s.seq, randHex(4))
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_ = json.NewEncoder(w).Encode(v)
}

func replyErr(w http.ResponseWriter, code int, msg string) {
	reply(w, map[string]any{"errcode": code, "errmsg": msg})
}

// ServeHTTP serves the server API and the robots' long connection.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == BotPath:
		s.serveBot(w, r)
		return
	case strings.HasPrefix(r.URL.Path, BotFilePath):
		s.serveBotFile(w, r)
		return
	}
	s.mu.Lock()
	s.calls[r.URL.Path]++
	var f *failure
	for _, k := range []string{r.URL.Path, ""} {
		if q := s.fail[k]; len(q) > 0 {
			f, s.fail[k] = &q[0], q[1:]
			break
		}
	}
	s.mu.Unlock()
	if f != nil {
		replyErr(w, f.code, f.msg)
		return
	}
	if r.URL.Path == "/cgi-bin/gettoken" {
		s.getToken(w, r)
		return
	}
	key, ok := s.authorize(w, r)
	if !ok {
		return
	}
	switch r.URL.Path {
	case "/cgi-bin/message/send":
		s.send(w, r, key)
	case "/cgi-bin/media/upload":
		s.upload(w, r)
	case "/cgi-bin/media/get":
		s.get(w, r)
	default:
		http.NotFound(w, r)
	}
}

// getToken serves GET /cgi-bin/gettoken?corpid&corpsecret.
func (s *Server) getToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method", http.StatusMethodNotAllowed)
		return
	}
	corp, secret := r.URL.Query().Get("corpid"), r.URL.Query().Get("corpsecret")
	s.mu.Lock()
	defer s.mu.Unlock()
	known := false
	for _, a := range s.apps {
		if a.CorpID != corp {
			continue
		}
		known = true
		if a.Secret == secret {
			tok := randHex(32)
			s.tokens[tok] = a.CorpID + "/" + a.Secret
			s.issued = append(s.issued, tok)
			if len(s.issued) > MaxSent {
				s.issued = s.issued[len(s.issued)-MaxSent:]
			}
			reply(w, map[string]any{"errcode": 0, "errmsg": "ok", "access_token": tok, "expires_in": TokenTTL})
			return
		}
	}
	if !known {
		replyErr(w, 40013, "invalid corpid")
		return
	}
	replyErr(w, 40001, "invalid credential")
}

// authorize checks access_token: 41001 without one, 42001 for one no
// longer valid (ExpireTokens), 40014 for one never issued.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) (string, bool) {
	tok := r.URL.Query().Get("access_token")
	if tok == "" {
		replyErr(w, 41001, "access_token missing")
		return "", false
	}
	s.mu.Lock()
	key, ok := s.tokens[tok]
	wasIssued := false
	if !ok {
		for _, t := range s.issued {
			if t == tok {
				wasIssued = true
			}
		}
	}
	s.mu.Unlock()
	switch {
	case ok:
		return key, true
	case wasIssued:
		replyErr(w, 42001, "access_token expired")
	default:
		replyErr(w, 40014, "invalid access_token")
	}
	return "", false
}

type sendBody struct {
	ToUser  string `json:"touser"`
	MsgType string `json:"msgtype"`
	AgentID int    `json:"agentid"`
	Text    *struct {
		Content string `json:"content"`
	} `json:"text"`
	Markdown *struct {
		Content string `json:"content"`
	} `json:"markdown"`
	Image *struct {
		MediaID string `json:"media_id"`
	} `json:"image"`
	File *struct {
		MediaID string `json:"media_id"`
	} `json:"file"`
}

// MaxContent is the longest text or markdown content WeCom keeps (2048
// bytes; longer is truncated, as documented).
const MaxContent = 2048

// send serves POST /cgi-bin/message/send.
func (s *Server) send(w http.ResponseWriter, r *http.Request, key string) {
	var b sendBody
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&b); err != nil {
		replyErr(w, 47001, "data format error")
		return
	}
	corp := strings.SplitN(key, "/", 2)[0]
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.apps[appKey(corp, b.AgentID)]
	if a == nil || corp+"/"+a.Secret != key {
		replyErr(w, 40056, "invalid agentid")
		return
	}
	if b.ToUser == "" {
		replyErr(w, 81013, "user & party & tag all invalid")
		return
	}
	m := Sent{CorpID: corp, AgentID: b.AgentID, ToUser: b.ToUser, MsgType: b.MsgType}
	switch {
	case b.MsgType == "text" && b.Text != nil:
		m.Content = b.Text.Content
	case b.MsgType == "markdown" && b.Markdown != nil:
		m.Content = b.Markdown.Content
	case b.MsgType == "image" && b.Image != nil:
		m.MediaID = b.Image.MediaID
	case b.MsgType == "file" && b.File != nil:
		m.MediaID = b.File.MediaID
	default:
		replyErr(w, 40008, "invalid message type")
		return
	}
	if m.MediaID != "" {
		if _, ok := s.media[m.MediaID]; !ok {
			replyErr(w, 40007, "invalid media_id")
			return
		}
	}
	if len(m.Content) > MaxContent {
		m.Content = m.Content[:MaxContent]
	}
	m.ID = s.nextID("msg")
	s.record(m)
	reply(w, map[string]any{"errcode": 0, "errmsg": "ok", "invaliduser": "", "msgid": m.ID})
}

// upload serves POST /cgi-bin/media/upload?type=TYPE (multipart "media").
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	typ := r.URL.Query().Get("type")
	switch typ {
	case "image", "voice", "video", "file":
	default:
		replyErr(w, 40004, "invalid media type")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxUpload+1<<16)
	f, h, err := r.FormFile("media")
	if err != nil {
		replyErr(w, 44001, "empty media data")
		return
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil || len(data) < 5 {
		replyErr(w, 44001, "empty media data")
		return
	}
	s.mu.Lock()
	id := s.addMediaLocked(Media{Type: typ, Name: h.Filename, Data: data})
	s.mu.Unlock()
	reply(w, map[string]any{"errcode": 0, "errmsg": "", "type": typ, "media_id": id, "created_at": "1380000000"})
}

// get serves GET /cgi-bin/media/get?media_id: the bytes with a
// Content-Disposition, or a JSON error.
func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	m, ok := s.Media(r.URL.Query().Get("media_id"))
	if !ok {
		replyErr(w, 40007, "invalid media_id")
		return
	}
	ct := "application/octet-stream"
	if m.Type == "image" {
		ct = http.DetectContentType(m.Data)
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": m.Name}))
	_, _ = io.Copy(w, bytes.NewReader(m.Data))
}

// WaitSent waits until cond holds for what was sent to user.
func (s *Server) WaitSent(ctx context.Context, user string, cond func([]Sent) bool) ([]Sent, error) {
	for {
		got := s.Sent(user)
		if cond(got) {
			return got, nil
		}
		if err := sleepCtx(ctx); err != nil {
			return got, err
		}
	}
}
