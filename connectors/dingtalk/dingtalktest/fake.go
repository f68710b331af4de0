// Package dingtalktest is a fake DingTalk Open Platform for tests, written
// from the fact sheet (connectors/dingtalk/README.md): one http.Handler
// serving both hosts, api.dingtalk.com (the app access token, the Stream
// gateway's connection registration, the robot send and file APIs, the AI
// card APIs) and oapi.dingtalk.com (media upload, session webhooks), plus
// the Stream WebSocket itself (JSON frames: CALLBACK pushes of bot
// messages, SYSTEM ping and disconnect, the client's acks).
//
// A test plays the people in a chat with Say (a bot message pushed over
// the app's Stream connection, returning the client's ack) and sees what
// the bot did with Sent. Errors have DingTalk's two envelopes: the new
// API's HTTP status with {"code":"...","message":"...","requestid":"..."},
// the old API's HTTP 200 with {"errcode":N,"errmsg":"..."}; FailNext
// injects one. Like DingTalk (Stream protocol FAQ: bot messages are
// fire-and-forget), the fake never pushes a bot message again, acked or
// not. Every record is bounded (MaxSent, MaxFiles). A Server is safe for
// concurrent use.
package dingtalktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Bounds and behaviour of the fake.
const (
	// MaxSent bounds the bot messages remembered.
	MaxSent = 1000
	// MaxFiles bounds the user files and uploaded media kept.
	MaxFiles = 1000
	// TokenTTL is the expireIn of issued access tokens, in seconds.
	TokenTTL = 7200
	// TicketTTL is how long a Stream ticket may be used (90 s, once).
	TicketTTL = 90 * time.Second
	// SessionTTL is the life of a message's sessionWebhook.
	SessionTTL = 90 * time.Minute
)

// Paths of the fake (the real ones).
const (
	PathToken       = "/v1.0/oauth2/accessToken"
	PathOpen        = "/v1.0/gateway/connections/open"
	PathConnect     = "/connect"
	PathOTO         = "/v1.0/robot/oToMessages/batchSend"
	PathGroup       = "/v1.0/robot/groupMessages/send"
	PathDownload    = "/v1.0/robot/messageFiles/download"
	PathCardDeliver = "/v1.0/card/instances/createAndDeliver"
	PathCardStream  = "/v1.0/card/streaming"
	PathMedia       = "/media/upload"
	PathSession     = "/robot/sendBySession"
	// pathFile serves the downloadUrl of a user file.
	pathFile = "/fake-files/"
)

// App is one DingTalk app with the robot capability.
type App struct {
	ClientID     string
	ClientSecret string
	// RobotCode is the robot's code (default ClientID, as for an
	// internal app's robot).
	RobotCode string
}

// Sent is one message a bot sent, as it stands now.
type Sent struct {
	ClientID string
	// Via is how it was sent: "session" (sessionWebhook), "oto"
	// (oToMessages/batchSend), "group" (groupMessages/send) or "card"
	// (createAndDeliver, then streamed).
	Via string
	// ConversationID is the conversation (a session's, a group's
	// openConversationId or a card's space); UserID the 1:1 receiver.
	ConversationID string
	UserID         string
	// Kind is the message type: the msgtype of a session message
	// ("text", "markdown") or the msgKey of a robot API message
	// ("sampleText", "sampleMarkdown", "sampleImageMsg", "sampleFile"),
	// "card" for a card.
	Kind string
	// Text is a text or markdown message's text, a card's streamed
	// content as it reads now.
	Text string
	// MediaID and FileName name the file of a file or image message.
	MediaID  string
	FileName string
	// OutTrackID, Streams and Finalized describe a card: its id, the
	// streaming updates it got, and whether one finalized it.
	OutTrackID string
	Streams    int
	Finalized  bool
	At         time.Time
}

type file struct {
	data []byte
	name string
}

type failure struct {
	status  int
	code    string
	errcode int
}

type ticket struct {
	clientID string
	exp      time.Time
}

type session struct {
	clientID, conv, user string
	exp                  time.Time
}

// Server is the fake. Create it with New, add apps, Start it, Close it.
type Server struct {
	hs *httptest.Server

	mu        sync.Mutex
	apps      map[string]App    // clientId → app
	tokens    map[string]string // access token → clientId
	issued    []string
	tickets   map[string]ticket
	conns     map[string][]*streamConn // clientId → live Stream connections, newest last
	connected chan struct{}            // closed and replaced on every connect
	sent      []Sent
	cards     map[string]int // outTrackId → index in sent
	sessions  map[string]session
	files     map[string]file // downloadCode → user file
	media     map[string]file // media_id → upload
	fail      map[string][]failure
	calls     map[string]int
	seq       uint64
	ping      time.Duration
	grace     time.Duration
	closing   chan struct{}
	wg        sync.WaitGroup
}

// New returns an unstarted fake with no apps.
func New() *Server {
	return &Server{apps: map[string]App{}, tokens: map[string]string{}, tickets: map[string]ticket{},
		conns: map[string][]*streamConn{}, connected: make(chan struct{}), cards: map[string]int{},
		sessions: map[string]session{}, files: map[string]file{}, media: map[string]file{},
		fail: map[string][]failure{}, calls: map[string]int{}, grace: 10 * time.Second, closing: make(chan struct{})}
}

// AddApp registers an app.
func (s *Server) AddApp(a App) {
	if a.RobotCode == "" {
		a.RobotCode = a.ClientID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apps[a.ClientID] = a
}

// SetPing makes the fake send a SYSTEM ping on every Stream connection
// every d (0, the default, sends none); SetDisconnectGrace sets how long
// it waits after a SYSTEM disconnect before closing (DingTalk: 10 s).
func (s *Server) SetPing(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ping = d
}

// SetDisconnectGrace sets the wait between a SYSTEM disconnect and the
// close of the connection.
func (s *Server) SetDisconnectGrace(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.grace = d
}

// Start serves the fake on a loopback port and returns its base URL (both
// hosts).
func (s *Server) Start() string {
	s.hs = httptest.NewServer(s)
	return s.hs.URL
}

// StartOn serves h (the fake, or a handler wrapping it) on ln and returns
// the base URL.
func (s *Server) StartOn(ln net.Listener, h http.Handler) string {
	s.hs = httptest.NewUnstartedServer(h)
	s.hs.Listener.Close()
	s.hs.Listener = ln
	s.hs.Start()
	return s.hs.URL
}

// URL returns the base URL.
func (s *Server) URL() string { return s.hs.URL }

// Close closes every Stream connection and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
	for _, cs := range s.conns {
		for _, c := range cs {
			c.c.CloseNow()
		}
	}
	s.mu.Unlock()
	if s.hs != nil {
		s.hs.Close()
	}
	s.wg.Wait()
}

// FailNext makes the next request whose path starts with prefix fail:
// with HTTP status and the new API's code (api.dingtalk.com paths), or
// with HTTP 200 and errcode (oapi paths: /media, /robot/sendBySession).
func (s *Server) FailNext(prefix string, status int, code string, errcode int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[prefix] = append(s.fail[prefix], failure{status, code, errcode})
}

// RevokeTokens forgets every issued access token: the next call with one
// gets HTTP 401 InvalidAuthentication.
func (s *Server) RevokeTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.tokens)
}

// ExpireSessions makes every sessionWebhook handed out so far expired.
func (s *Server) ExpireSessions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.sessions {
		v.exp = time.Now().Add(-time.Second)
		s.sessions[k] = v
	}
}

// IssuedTokens returns every access token and Stream ticket the fake
// issued, for tests that check that none leaks.
func (s *Server) IssuedTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.issued...)
}

// Calls returns how many requests hit a route: "token", "open",
// "connect", "oto", "group", "session", "download", "file", "media",
// "card", "stream".
func (s *Server) Calls(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[route]
}

// Sent returns the messages bots sent in conversation conv ("" for all).
func (s *Server) Sent(conv string) []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Sent
	for _, m := range s.sent {
		if conv == "" || m.ConversationID == conv {
			out = append(out, m)
		}
	}
	return out
}

// WaitSent polls Sent(conv) until cond holds or ctx ends.
func (s *Server) WaitSent(ctx context.Context, conv string, cond func([]Sent) bool) ([]Sent, error) {
	for {
		got := s.Sent(conv)
		if cond(got) {
			return got, nil
		}
		select {
		case <-ctx.Done():
			return got, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Media returns an uploaded file by its media_id.
func (s *Server) Media(id string) ([]byte, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.media[id]
	return f.data, f.name, ok
}

// AddFile stores a user's file and returns its downloadCode, for a
// picture or file message.
func (s *Server) AddFile(name string, data []byte) string {
	code := newID("dc")
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.files) < MaxFiles {
		s.files[code] = file{data: data, name: name}
	}
	return code
}

func newID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// ServeHTTP routes the fake's endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	post := r.Method == http.MethodPost
	switch {
	case p == PathToken && post:
		s.token(w, r)
	case p == PathOpen && post:
		s.open(w, r)
	case p == PathConnect:
		s.serveStream(w, r)
	case p == PathOTO && post:
		s.robotSend(w, r, "oto")
	case p == PathGroup && post:
		s.robotSend(w, r, "group")
	case p == PathDownload && post:
		s.download(w, r)
	case strings.HasPrefix(p, pathFile) && r.Method == http.MethodGet:
		s.serveFile(w, r)
	case p == PathCardDeliver && post:
		s.cardDeliver(w, r)
	case p == PathCardStream && r.Method == http.MethodPut:
		s.cardStream(w, r)
	case p == PathMedia && post:
		s.upload(w, r)
	case p == PathSession && post:
		s.sessionSend(w, r)
	default:
		apiError(w, http.StatusNotFound, "NotFound", "no such API")
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError writes the new API's error envelope.
func apiError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"code": code, "message": msg, "requestid": newID("req")})
}

// oapiError writes the old API's error envelope (HTTP 200).
func oapiError(w http.ResponseWriter, errcode int, msg string) {
	writeJSON(w, http.StatusOK, map[string]any{"errcode": errcode, "errmsg": msg})
}

func (s *Server) count(route string) {
	s.mu.Lock()
	s.calls[route]++
	s.mu.Unlock()
}

// injected writes a queued failure for path, if any.
func (s *Server) injected(w http.ResponseWriter, path string) bool {
	s.mu.Lock()
	var f *failure
	for prefix, list := range s.fail {
		if len(list) > 0 && (prefix == "" || strings.HasPrefix(path, prefix)) {
			f = &list[0]
			s.fail[prefix] = list[1:]
			break
		}
	}
	s.mu.Unlock()
	if f == nil {
		return false
	}
	if f.errcode != 0 {
		oapiError(w, f.errcode, "injected failure")
		return true
	}
	apiError(w, f.status, f.code, "injected failure")
	return true
}

func decode(r *http.Request, v any) error {
	return json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(v)
}

// token is POST /v1.0/oauth2/accessToken.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	s.count("token")
	if s.injected(w, r.URL.Path) {
		return
	}
	var in struct {
		AppKey    string `json:"appKey"`
		AppSecret string `json:"appSecret"`
	}
	if err := decode(r, &in); err != nil || in.AppKey == "" || in.AppSecret == "" {
		apiError(w, http.StatusBadRequest, "MissingParameter", "appKey and appSecret are required")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.apps[in.AppKey]; !ok || a.ClientSecret != in.AppSecret {
		// The exact code of refused credentials is not documented in
		// the fact sheet; the connector keys on the HTTP status.
		writeJSON(w, http.StatusBadRequest, map[string]string{"code": "invalidClientIdOrSecret", "message": "无效的clientId或clientSecret", "requestid": newID("req")})
		return
	}
	tok := newID("at")
	s.tokens[tok] = in.AppKey
	s.remember(tok)
	writeJSON(w, http.StatusOK, map[string]any{"accessToken": tok, "expireIn": TokenTTL})
}

func (s *Server) remember(secret string) {
	if len(s.issued) < MaxSent {
		s.issued = append(s.issued, secret)
	}
}

// auth checks the x-acs-dingtalk-access-token header (new API) and
// returns its app, or writes 401 InvalidAuthentication.
func (s *Server) auth(w http.ResponseWriter, r *http.Request) (App, bool) {
	s.mu.Lock()
	id, ok := s.tokens[r.Header.Get("x-acs-dingtalk-access-token")]
	a := s.apps[id]
	s.mu.Unlock()
	if !ok {
		apiError(w, http.StatusUnauthorized, "InvalidAuthentication", "不合法的access_token")
		return App{}, false
	}
	return a, true
}
