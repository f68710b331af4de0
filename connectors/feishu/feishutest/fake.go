// Package feishutest is a fake Feishu (Lark) Open Platform for tests,
// written from the fact sheet (targets/feishu.md): an http.Handler with
// the tenant token endpoint, the IM message endpoints (create, reply,
// edit, patch, image and file uploads, resource downloads), the long
// connection (POST /callback/ws/endpoint, then a WebSocket speaking the
// SDK's protobuf frames) and the QR app registration of the accounts
// host, plus an API for the test to play the people in a chat (SendText,
// SendEvent over the long connection, PostWebhook and VerifyURL to a
// developer server, encrypted and signed) and to see what the bots did
// (Sent).
//
// Errors have Feishu's envelope ({"code":N,"msg":"..."}); FailNext
// injects one (for example 99991663 with HTTP 400, or 99991400 with HTTP
// 429 and x-ogw-ratelimit-reset). Every record is bounded (MaxSent,
// MaxResources). A Server is safe for concurrent use.
package feishutest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"
)

// Bounds and behaviour of the fake.
const (
	// MaxSent bounds the bot messages remembered.
	MaxSent = 1000
	// MaxResources bounds the uploads and user files kept.
	MaxResources = 1000
	// MaxEdits is Feishu's edit cap of one text/post message (§6.3).
	MaxEdits = 20
	// ServiceID is the service_id of the long connection's URL.
	ServiceID = 7
	// TokenTTL is the expire of issued tenant tokens, in seconds.
	TokenTTL = 7200
)

// Sent is one message a bot sent (create or reply), as it stands now.
type Sent struct {
	MessageID string
	AppID     string
	ChatID    string
	MsgType   string
	Content   string // the JSON string of the request's content
	ReplyTo   string // the message_id replied to ("" for create)
	UUID      string
	Edits     int
}

// Text returns the "text" member of a text message's content.
func (s Sent) Text() string {
	var c struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal([]byte(s.Content), &c)
	return c.Text
}

type resource struct {
	data []byte
	name string
}

type failure struct {
	status int
	code   int
	reset  int
}

// Server is the fake. Create it with New, add apps, Start it, Close it.
type Server struct {
	hs *httptest.Server

	mu        sync.Mutex
	apps      map[string]string // app_id → app_secret
	tokens    map[string]string // tenant token → app_id
	issued    []string          // every tenant token issued (bounded by MaxSent)
	sent      []Sent
	uuids     map[string]string // uuid → message_id
	res       map[string]resource
	fail      map[string][]failure // path prefix ("" any) → queued failures
	conns     map[string]*wsConn   // app_id → live long connection
	connected chan struct{}        // closed and replaced on every connect
	seq       uint64
	calls     map[string]int
	reg       registration
	closing   chan struct{}
}

type wsConn struct {
	c    *websocket.Conn
	mu   sync.Mutex
	acks map[uint64]chan int
}

// New returns an unstarted fake with no apps.
func New() *Server {
	return &Server{apps: map[string]string{}, tokens: map[string]string{}, uuids: map[string]string{},
		res: map[string]resource{}, fail: map[string][]failure{}, conns: map[string]*wsConn{},
		connected: make(chan struct{}), calls: map[string]int{}, closing: make(chan struct{})}
}

// AddApp registers a self-built app's credentials.
func (s *Server) AddApp(appID, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apps[appID] = secret
}

// Start serves the fake on a loopback port and returns its base URL (the
// open platform and the accounts host both).
func (s *Server) Start() string {
	s.hs = httptest.NewServer(s)
	return s.hs.URL
}

// StartOn serves h (the fake itself, or a handler wrapping it) on ln,
// for a fake run on its own address, and returns the base URL.
func (s *Server) StartOn(ln net.Listener, h http.Handler) string {
	s.hs = httptest.NewUnstartedServer(h)
	s.hs.Listener.Close()
	s.hs.Listener = ln
	s.hs.Start()
	return s.hs.URL
}

// URL returns the base URL.
func (s *Server) URL() string { return s.hs.URL }

// Close closes every long connection and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
	for _, c := range s.conns {
		c.c.CloseNow()
	}
	s.mu.Unlock()
	if s.hs != nil {
		s.hs.Close()
	}
}

// FailNext makes the next request whose path starts with prefix ("" for
// any /open-apis/im/ request) fail with HTTP status and Feishu code;
// reset > 0 adds x-ogw-ratelimit-reset.
func (s *Server) FailNext(prefix string, status, code, reset int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[prefix] = append(s.fail[prefix], failure{status, code, reset})
}

// RevokeTokens forgets every issued tenant token: the next API call
// with one gets 99991663.
func (s *Server) RevokeTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.tokens)
}

// IssuedTokens returns every tenant token the fake issued (revoked ones
// too), for tests that check that none leaks.
func (s *Server) IssuedTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.issued...)
}

// Calls returns how many requests hit a route ("token", "create",
// "reply", "update", "patch", "image", "file", "resource", "endpoint").
func (s *Server) Calls(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[route]
}

// Sent returns the messages bots sent in chat ("" for all chats).
func (s *Server) Sent(chatID string) []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Sent
	for _, m := range s.sent {
		if chatID == "" || m.ChatID == chatID {
			out = append(out, m)
		}
	}
	return out
}

// WaitSent polls Sent(chat) until cond holds or ctx ends.
func (s *Server) WaitSent(ctx context.Context, chatID string, cond func([]Sent) bool) ([]Sent, error) {
	for {
		got := s.Sent(chatID)
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

// AddResource stores a user's file of message messageID under key, for
// GET .../messages/{id}/resources/{key}.
func (s *Server) AddResource(messageID, key, name string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.res) < MaxResources {
		s.res[messageID+"/"+key] = resource{data: data, name: name}
	}
}

// Resource returns an uploaded image or file by its key.
func (s *Server) Resource(key string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.res[key]
	return r.data, ok
}

func newID(prefix string) string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// ServeHTTP routes the fake's endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/open-apis/auth/v3/tenant_access_token/internal" && r.Method == http.MethodPost:
		s.tenantToken(w, r)
	case p == larkws.GenEndpointUri && r.Method == http.MethodPost:
		s.endpoint(w, r)
	case p == "/ws":
		s.serveWS(w, r)
	case p == "/oauth/v1/app/registration" && r.Method == http.MethodPost:
		s.registration(w, r)
	case strings.HasPrefix(p, "/open-apis/im/v1/"):
		s.im(w, r)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"code": 404, "msg": "not found"})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) count(route string) {
	s.mu.Lock()
	s.calls[route]++
	s.mu.Unlock()
}

func (s *Server) tenantToken(w http.ResponseWriter, r *http.Request) {
	s.count("token")
	var in struct {
		AppID     string `json:"app_id"`
		AppSecret string `json:"app_secret"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 9499, "msg": "bad request"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sec, ok := s.apps[in.AppID]; !ok || sec != in.AppSecret || in.AppSecret == "" {
		// The real code for a wrong secret is not in the fact sheet; any
		// non-zero code refuses the credentials.
		writeJSON(w, http.StatusOK, map[string]any{"code": 10014, "msg": "app secret invalid"})
		return
	}
	tok := newID("t-")
	s.tokens[tok] = in.AppID
	if len(s.issued) < MaxSent {
		s.issued = append(s.issued, tok)
	}
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "ok", "tenant_access_token": tok, "expire": TokenTTL})
}

// auth checks the tenant token and returns its app, or writes 99991663.
func (s *Server) auth(w http.ResponseWriter, r *http.Request) (string, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	app, known := s.tokens[tok]
	s.mu.Unlock()
	if !ok || !known {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 99991663, "msg": "Invalid access token for authorization. Please make a request with token attached."})
		return "", false
	}
	return app, true
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
	if f.reset > 0 {
		w.Header().Set("x-ogw-ratelimit-limit", "50")
		w.Header().Set("x-ogw-ratelimit-reset", strconv.Itoa(f.reset))
	}
	writeJSON(w, f.status, map[string]any{"code": f.code, "msg": "injected failure"})
	return true
}

func (s *Server) im(w http.ResponseWriter, r *http.Request) {
	app, ok := s.auth(w, r)
	if !ok {
		return
	}
	if s.injected(w, r.URL.Path) {
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, "/open-apis/im/v1/")
	parts := strings.Split(rest, "/")
	switch {
	case rest == "messages" && r.Method == http.MethodPost:
		s.count("create")
		s.send(w, r, app, "", r.URL.Query().Get("receive_id_type"))
	case len(parts) == 3 && parts[0] == "messages" && parts[2] == "reply" && r.Method == http.MethodPost:
		s.count("reply")
		s.send(w, r, app, parts[1], "")
	case len(parts) == 2 && parts[0] == "messages" && (r.Method == http.MethodPut || r.Method == http.MethodPatch):
		if r.Method == http.MethodPut {
			s.count("update")
		} else {
			s.count("patch")
		}
		s.edit(w, r, parts[1])
	case len(parts) == 4 && parts[0] == "messages" && parts[2] == "resources" && r.Method == http.MethodGet:
		s.count("resource")
		s.download(w, r, parts[1], parts[3])
	case (rest == "images" || rest == "files") && r.Method == http.MethodPost:
		s.count(strings.TrimSuffix(rest, "s"))
		s.upload(w, r, rest)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"code": 404, "msg": "not found"})
	}
}

type sendBody struct {
	ReceiveID     string `json:"receive_id"`
	MsgType       string `json:"msg_type"`
	Content       string `json:"content"`
	UUID          string `json:"uuid"`
	ReplyInThread bool   `json:"reply_in_thread"`
}

func (s *Server) send(w http.ResponseWriter, r *http.Request, app, replyTo, idType string) {
	var in sendBody
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil || in.MsgType == "" || !json.Valid([]byte(in.Content)) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230001, "msg": "invalid request parameter"})
		return
	}
	if len(in.Content) > 150<<10 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230025, "msg": "content too long"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	chat := in.ReceiveID
	if replyTo != "" {
		chat = ""
		for _, m := range s.sent {
			if m.MessageID == replyTo {
				chat = m.ChatID
			}
		}
		if chat == "" {
			chat = chatOfUserMessage(replyTo)
		}
	} else if idType != "chat_id" && idType != "open_id" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230001, "msg": "receive_id_type"})
		return
	}
	if in.UUID != "" {
		if id, ok := s.uuids[in.UUID]; ok {
			for _, m := range s.sent {
				if m.MessageID == id {
					writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": message(m)})
					return
				}
			}
		}
	}
	m := Sent{MessageID: newID("om_"), AppID: app, ChatID: chat, MsgType: in.MsgType, Content: in.Content, ReplyTo: replyTo, UUID: in.UUID}
	if in.UUID != "" && len(s.uuids) < MaxSent {
		s.uuids[in.UUID] = m.MessageID
	}
	s.sent = append(s.sent, m)
	if len(s.sent) > MaxSent {
		s.sent = s.sent[len(s.sent)-MaxSent:]
	}
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": message(m)})
}

// chatOfUserMessage recovers the chat of a user message id made by
// SendText ("om_u_<chat>_<n>").
func chatOfUserMessage(id string) string {
	rest, ok := strings.CutPrefix(id, "om_u_")
	if !ok {
		return ""
	}
	if i := strings.LastIndexByte(rest, '_'); i > 0 {
		return rest[:i]
	}
	return ""
}

func message(m Sent) map[string]any {
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	return map[string]any{"message_id": m.MessageID, "chat_id": m.ChatID, "msg_type": m.MsgType, "parent_id": m.ReplyTo,
		"create_time": now, "update_time": now, "updated": m.Edits > 0, "deleted": false,
		"sender": map[string]any{"id": m.AppID, "id_type": "app_id", "sender_type": "app"}, "body": map[string]any{"content": m.Content}}
}

func (s *Server) edit(w http.ResponseWriter, r *http.Request, id string) {
	var in sendBody
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil || !json.Valid([]byte(in.Content)) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230001, "msg": "invalid request parameter"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.sent {
		m := &s.sent[i]
		if m.MessageID != id {
			continue
		}
		if r.Method == http.MethodPut {
			if m.MsgType != "text" && m.MsgType != "post" || in.MsgType != m.MsgType {
				writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230001, "msg": "only text and post messages can be edited"})
				return
			}
			if m.Edits >= MaxEdits {
				writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230072, "msg": "the message has reached the number of times it can be edited"})
				return
			}
			m.Edits++
		} else if m.MsgType != "interactive" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230001, "msg": "only cards can be patched"})
			return
		}
		m.Content = in.Content
		writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": message(*m)})
		return
	}
	writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230001, "msg": "message not found"})
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request, kind string) {
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230001, "msg": "multipart"})
		return
	}
	field, limit, prefix := "file", int64(30<<20), "file_"
	if kind == "images" {
		field, limit, prefix = "image", 10<<20, "img_"
		if r.FormValue("image_type") != "message" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230001, "msg": "image_type"})
			return
		}
	} else if r.FormValue("file_type") == "" || r.FormValue("file_name") == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230001, "msg": "file_type and file_name"})
		return
	}
	f, _, err := r.FormFile(field)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230001, "msg": "no " + field})
		return
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, limit+1))
	if len(data) == 0 || int64(len(data)) > limit {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230001, "msg": "size"})
		return
	}
	key := newID(prefix)
	s.mu.Lock()
	if len(s.res) < MaxResources {
		s.res[key] = resource{data: data, name: r.FormValue("file_name")}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": map[string]string{strings.TrimSuffix(field, "s") + "_key": key}})
}

func (s *Server) download(w http.ResponseWriter, r *http.Request, msgID, key string) {
	typ := r.URL.Query().Get("type")
	s.mu.Lock()
	res, ok := s.res[msgID+"/"+key]
	s.mu.Unlock()
	if typ != "image" && typ != "file" || !ok {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 234003, "msg": "file not found"})
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", res.name))
	_, _ = w.Write(res.data)
}

// endpoint answers the long connection's bootstrap (§5.1).
func (s *Server) endpoint(w http.ResponseWriter, r *http.Request) {
	s.count("endpoint")
	var in larkws.BootstrapRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 1, "msg": "bad request"})
		return
	}
	s.mu.Lock()
	sec, ok := s.apps[in.AppID]
	s.mu.Unlock()
	if !ok || sec != in.AppSecret {
		writeJSON(w, http.StatusOK, map[string]any{"code": 514, "msg": "auth failed"})
		return
	}
	u := "ws" + strings.TrimPrefix(s.hs.URL, "http") + "/ws?device_id=" + newID("d") + "&service_id=" + strconv.Itoa(ServiceID) + "&app_id=" + in.AppID
	writeJSON(w, http.StatusOK, larkws.EndpointResp{Code: 0, Msg: "ok", Data: &larkws.Endpoint{Url: u,
		ClientConfig: &larkws.ClientConfig{ReconnectCount: -1, ReconnectInterval: 120, ReconnectNonce: 30, PingInterval: 120}}})
}

// serveWS is the long connection of one app: it answers pings with pongs
// and routes acks to the SendEvent waiting for them.
func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	app := r.URL.Query().Get("app_id")
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	c.SetReadLimit(1 << 20)
	wc := &wsConn{c: c, acks: map[uint64]chan int{}}
	s.mu.Lock()
	if old := s.conns[app]; old != nil {
		old.c.CloseNow()
	}
	s.conns[app] = wc
	close(s.connected)
	s.connected = make(chan struct{})
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.conns[app] == wc {
			delete(s.conns, app)
		}
		s.mu.Unlock()
		c.CloseNow()
	}()
	ctx := r.Context()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		var f larkws.Frame
		if f.Unmarshal(data) != nil {
			continue
		}
		hs := larkws.Headers(f.Headers)
		switch {
		case f.Method == int32(larkws.FrameTypeControl) && hs.GetString(larkws.HeaderType) == string(larkws.MessageTypePing):
			pong := larkws.Frame{Method: int32(larkws.FrameTypeControl), Service: f.Service,
				Headers: []larkws.Header{{Key: larkws.HeaderType, Value: string(larkws.MessageTypePong)}}}
			b, _ := pong.Marshal()
			_ = c.Write(ctx, websocket.MessageBinary, b)
		case f.Method == int32(larkws.FrameTypeData):
			var resp larkws.Response
			_ = json.Unmarshal(f.Payload, &resp)
			wc.mu.Lock()
			if ch := wc.acks[f.SeqID]; ch != nil {
				ch <- resp.StatusCode
				delete(wc.acks, f.SeqID)
			}
			wc.mu.Unlock()
		}
	}
}

// Drop closes app's long connection, as a network failure or a restart
// of Feishu's gateway would; it reports whether there was one.
func (s *Server) Drop(app string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	wc := s.conns[app]
	if wc == nil {
		return false
	}
	wc.c.CloseNow()
	return true
}

// WaitConnected waits until app has a live long connection.
func (s *Server) WaitConnected(ctx context.Context, app string) error {
	for {
		s.mu.Lock()
		_, ok := s.conns[app]
		ch := s.connected
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("feishutest: app %s never connected: %w", app, ctx.Err())
		case <-ch:
		}
	}
}

// Connected reports whether app has a live long connection.
func (s *Server) Connected(app string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.conns[app]
	return ok
}

// SendEvent pushes a schema 2.0 event (payload) to app's long connection
// as a data frame split into parts frames, and returns the ack's code
// (200 or 500) once the client acked.
func (s *Server) SendEvent(ctx context.Context, app string, payload []byte, parts int) (int, error) {
	if err := s.WaitConnected(ctx, app); err != nil {
		return 0, err
	}
	s.mu.Lock()
	wc := s.conns[app]
	s.seq++
	seq := s.seq
	s.mu.Unlock()
	if wc == nil {
		return 0, errors.New("feishutest: not connected")
	}
	ack := make(chan int, 1)
	wc.mu.Lock()
	wc.acks[seq] = ack
	wc.mu.Unlock()
	parts = max(parts, 1)
	msgID := newID("m")
	size := (len(payload) + parts - 1) / parts
	for i := range parts {
		chunk := payload[min(i*size, len(payload)):min((i+1)*size, len(payload))]
		f := larkws.Frame{SeqID: seq, LogID: seq, Service: ServiceID, Method: int32(larkws.FrameTypeData), Payload: chunk,
			Headers: []larkws.Header{{Key: larkws.HeaderType, Value: string(larkws.MessageTypeEvent)},
				{Key: larkws.HeaderMessageID, Value: msgID}, {Key: larkws.HeaderSum, Value: strconv.Itoa(parts)},
				{Key: larkws.HeaderSeq, Value: strconv.Itoa(i)}, {Key: larkws.HeaderTraceID, Value: newID("tr")}}}
		b, _ := f.Marshal()
		if err := wc.c.Write(ctx, websocket.MessageBinary, b); err != nil {
			return 0, fmt.Errorf("feishutest: write event: %w", err)
		}
	}
	select {
	case code := <-ack:
		return code, nil
	case <-ctx.Done():
		return 0, fmt.Errorf("feishutest: no ack: %w", ctx.Err())
	}
}

// Message describes a user message for MessageEvent.
type Message struct {
	AppID    string
	ChatID   string
	ChatType string // p2p (default), group, topic_group
	OpenID   string // the sender (default ou_alice)
	Type     string // text (default), post, image, file
	Content  any    // marshalled into the content JSON string
	Mentions []Mention
	ID       string // default a new "om_u_<chat>_<n>"
}

// Mention is an @ of a message.
type Mention struct {
	Key    string `json:"key"`
	OpenID string `json:"-"`
	Name   string `json:"name"`
}

// MessageEvent builds the im.message.receive_v1 event of m (§3.1, §4)
// and returns it with the message id.
func (s *Server) MessageEvent(m Message) ([]byte, string) {
	if m.ChatType == "" {
		m.ChatType = "p2p"
	}
	if m.OpenID == "" {
		m.OpenID = "ou_alice"
	}
	if m.Type == "" {
		m.Type = "text"
	}
	if m.ID == "" {
		s.mu.Lock()
		s.seq++
		m.ID = fmt.Sprintf("om_u_%s_%d", m.ChatID, s.seq)
		s.mu.Unlock()
	}
	content, _ := json.Marshal(m.Content)
	mentions := []map[string]any{}
	for _, mn := range m.Mentions {
		mentions = append(mentions, map[string]any{"key": mn.Key, "name": mn.Name, "tenant_key": "tk",
			"id": map[string]string{"open_id": mn.OpenID, "union_id": "on_" + mn.OpenID, "user_id": ""}})
	}
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	ev := map[string]any{"schema": "2.0",
		"header": map[string]any{"event_id": newID("ev"), "event_type": "im.message.receive_v1", "create_time": now,
			"token": "", "app_id": m.AppID, "tenant_key": "tk"},
		"event": map[string]any{
			"sender": map[string]any{"sender_id": map[string]string{"open_id": m.OpenID, "union_id": "on_" + m.OpenID, "user_id": ""},
				"sender_type": "user", "tenant_key": "tk"},
			"message": map[string]any{"message_id": m.ID, "create_time": now, "update_time": now, "chat_id": m.ChatID,
				"chat_type": m.ChatType, "message_type": m.Type, "content": string(content), "mentions": mentions}}}
	b, _ := json.Marshal(ev)
	return b, m.ID
}

// SendText makes a user write text in a p2p chat of app over the long
// connection; it returns the message id once the client acked 200.
func (s *Server) SendText(ctx context.Context, app, chat, text string) (string, error) {
	ev, id := s.MessageEvent(Message{AppID: app, ChatID: chat, Content: map[string]string{"text": text}})
	code, err := s.SendEvent(ctx, app, ev, 1)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("feishutest: the client acked %d", code)
	}
	return id, err
}
