// Package telegramtest is a fake Telegram Bot API for tests: an
// http.Handler that speaks the real Bot API's JSON at
// /bot<token>/<method> and serves files at /file/bot<token>/<file_path>,
// with an API for the test to play the people in a chat (SendText,
// SendFile) and to see what the bots did there (Sent, Actions).
//
// It implements getMe, getChat, getWebhookInfo, setWebhook, deleteWebhook,
// getUpdates (offset confirmation, timeout long polling, 409 when a second
// poller of the same token arrives or a webhook is set), getFile,
// sendMessage, editMessageText, sendChatAction and the multipart uploads
// sendPhoto, sendDocument, sendVideo and sendAudio. Errors have the Bot
// API's shape ({"ok":false,"error_code":N,"description":"...",
// "parameters":{"retry_after":S}}) and HTTP status: 401 for an unknown or
// revoked token, 400 for an unknown chat, 429 from FailNext.
//
// Parameters are read from a JSON body, a form (urlencoded or multipart)
// or the query, as the real API accepts them. Every queue is bounded
// (MaxUpdates, MaxSent). A Server is safe for concurrent use.
package telegramtest

import (
	"context"
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
	"unicode/utf16"
)

// Bounds of the fake.
const (
	// MaxUpdates bounds the unconfirmed updates kept per bot.
	MaxUpdates = 1000
	// MaxSent bounds the bot messages remembered per chat.
	MaxSent = 1000
	// MaxTextLen is the Bot API's message length limit (UTF-16 units).
	MaxTextLen = 4096
	// MaxUploadBytes bounds one multipart upload.
	MaxUploadBytes = 50 << 20
	// maxLimit is getUpdates' largest limit.
	maxLimit = 100
)

// Bot is a bot account of the fake.
type Bot struct {
	ID        int64
	Username  string
	FirstName string
}

// Chat is a chat the fake knows. A bot can reach every chat.
type Chat struct {
	ID        int64
	Type      string // "private" (default), "group", "supergroup" or "channel"
	Title     string
	FirstName string
	Username  string
}

// SentFile is a file a bot uploaded.
type SentFile struct {
	Field    string // photo, document, video or audio
	Name     string
	MimeType string
	Data     []byte
}

// Sent is one message a bot posted in a chat, as it now reads.
type Sent struct {
	MessageID int64
	BotID     int64
	Method    string // sendMessage, sendPhoto, ...
	// Text is the current text (or caption), after every edit.
	Text string
	// Edits lists the texts the message had before each edit, oldest
	// first: a message sent once and never edited has none.
	Edits []string
	File  *SentFile
	// ThreadID is the forum topic the bot posted in (message_thread_id;
	// 0: the chat's general thread).
	ThreadID int64
}

// File kinds of SendFile, as the Bot API names the Message fields.
const (
	KindPhoto    = "photo"
	KindDocument = "document"
	KindVoice    = "voice"
	KindAudio    = "audio"
	KindVideo    = "video"
)

// Server is the fake Bot API. Make it with New; serve it with Start (a
// loopback httptest server) or as an http.Handler; Close ends Start's
// server and every pending long poll.
type Server struct {
	mu        sync.Mutex
	bots      map[string]*botState // by token
	chats     map[int64]*Chat
	sent      map[int64][]*Sent // by chat
	actions   map[int64][]string
	files     map[string]*fileEntry // by file_id and by path
	nextMsg   int64
	nextFile  int64
	closed    chan struct{}
	closeOnce sync.Once
	ts        *httptest.Server
}

type botState struct {
	token    string
	bot      Bot
	revoked  bool
	webhook  string
	nextUpd  int64
	updates  []json.RawMessage // unconfirmed, each {"update_id":N,...}
	ids      []int64           // update ids of updates
	wake     chan struct{}     // closed when an update arrives
	poll     chan struct{}     // closed to terminate the running getUpdates
	fails    map[string][]apiError
	calls    map[string]int
	pollers  int
	maxPolls int
}

type fileEntry struct {
	id, unique, path, name, mime string
	data                         []byte
}

type apiError struct {
	code       int
	desc       string
	retryAfter int
	nth        int // fail the nth call from now (1: the next)
}

// New returns an empty fake: add bots and chats with AddBot and AddChat.
func New() *Server {
	return &Server{bots: map[string]*botState{}, chats: map[int64]*Chat{}, sent: map[int64][]*Sent{},
		actions: map[int64][]string{}, files: map[string]*fileEntry{}, nextMsg: 100, closed: make(chan struct{})}
}

// Start serves the fake on a loopback port and returns its base URL (the
// connector's API URL).
func (s *Server) Start() string {
	s.ts = httptest.NewServer(s)
	return s.ts.URL
}

// Close ends every long poll and, after Start, the server.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closed) })
	if s.ts != nil {
		s.ts.CloseClientConnections()
		s.ts.Close()
	}
}

// AddBot adds a bot reachable with token.
func (s *Server) AddBot(token string, b Bot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bots[token] = &botState{token: token, bot: b, nextUpd: 1000, wake: make(chan struct{}), poll: make(chan struct{}),
		fails: map[string][]apiError{}, calls: map[string]int{}}
}

// AddChat adds a chat.
func (s *Server) AddChat(c Chat) {
	if c.Type == "" {
		c.Type = "private"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chats[c.ID] = &c
}

// Revoke makes token invalid (as BotFather's /revoke does): every call
// then fails with 401 Unauthorized, and a running long poll ends so.
func (s *Server) Revoke(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.bots[token]; b != nil {
		b.revoked = true
		close(b.poll)
		b.poll = make(chan struct{})
	}
}

// SetWebhook sets (or, with "", deletes) token's webhook URL.
func (s *Server) SetWebhook(token, url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.bots[token]; b != nil {
		b.webhook = url
	}
}

// FailNext makes the next call of method with token fail with the Bot API
// error code and description; retryAfter > 0 adds parameters.retry_after
// (use 429 "Too Many Requests: retry after N").
func (s *Server) FailNext(token, method string, code int, description string, retryAfter int) {
	s.FailCall(token, method, 1, code, description, retryAfter)
}

// FailCall is FailNext for the nth call of method from now (1: the next
// one); earlier calls succeed.
func (s *Server) FailCall(token, method string, nth, code int, description string, retryAfter int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.bots[token]; b != nil {
		b.fails[method] = append(b.fails[method], apiError{code, description, retryAfter, max(nth, 1)})
	}
}

// Calls returns how often method was called with token.
func (s *Server) Calls(token, method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.bots[token]; b != nil {
		return b.calls[method]
	}
	return 0
}

// MaxPollers returns the largest number of concurrent getUpdates calls
// token has had (1 for a well-behaved client).
func (s *Server) MaxPollers(token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.bots[token]; b != nil {
		return b.maxPolls
	}
	return 0
}

// Pending returns the number of token's unconfirmed updates.
func (s *Server) Pending(token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.bots[token]; b != nil {
		return len(b.updates)
	}
	return 0
}

// SendText makes the user of chat write text to the bot of token and
// returns the message's message_id.
func (s *Server) SendText(token string, chatID int64, text string) int64 {
	return s.userMessage(token, chatID, map[string]any{"text": text})
}

// SendTextInThread makes the user of chat write text in the forum topic
// threadID (a supergroup with topics: the message has message_thread_id
// and is_topic_message) and returns the message's message_id.
func (s *Server) SendTextInThread(token string, chatID, threadID int64, text string) int64 {
	return s.userMessage(token, chatID, map[string]any{"text": text, "message_thread_id": threadID, "is_topic_message": true})
}

// SendFile makes the user of chat send a file of kind (KindPhoto, ...)
// with an optional caption to the bot of token; the bot downloads it with
// getFile. It returns the message_id.
func (s *Server) SendFile(token string, chatID int64, kind, name, mimeType string, data []byte, caption string) int64 {
	s.mu.Lock()
	s.nextFile++
	n := s.nextFile
	f := &fileEntry{id: fmt.Sprintf("file-%d", n), unique: fmt.Sprintf("u%d", n), name: name, mime: mimeType,
		path: fmt.Sprintf("%ss/file_%d%s", kind, n, ext(name)), data: append([]byte(nil), data...)}
	s.files[f.id] = f
	s.files[f.path] = f
	s.mu.Unlock()
	obj := map[string]any{"file_id": f.id, "file_unique_id": f.unique, "file_size": len(data)}
	fields := map[string]any{}
	switch kind {
	case KindPhoto:
		small := map[string]any{"file_id": f.id + "-thumb", "file_unique_id": f.unique + "t", "width": 90, "height": 90}
		obj["width"], obj["height"] = 800, 600
		fields[kind] = []any{small, obj}
	default:
		if name != "" && kind != KindVoice {
			obj["file_name"] = name
		}
		if mimeType != "" {
			obj["mime_type"] = mimeType
		}
		if kind == KindVoice || kind == KindAudio || kind == KindVideo {
			obj["duration"] = 3
		}
		fields[kind] = obj
	}
	if caption != "" {
		fields["caption"] = caption
	}
	return s.userMessage(token, chatID, fields)
}

func ext(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i:]
	}
	return ""
}

// userMessage enqueues an update with a message from the chat's user.
func (s *Server) userMessage(token string, chatID int64, fields map[string]any) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bots[token]
	c := s.chats[chatID]
	if b == nil || c == nil {
		panic(fmt.Sprintf("telegramtest: unknown bot or chat %d", chatID))
	}
	s.nextMsg++
	msg := map[string]any{"message_id": s.nextMsg, "date": time.Now().Unix(), "chat": chatJSON(c),
		"from": map[string]any{"id": chatID, "is_bot": false, "first_name": "User"}}
	for k, v := range fields {
		msg[k] = v
	}
	b.nextUpd++
	raw, _ := json.Marshal(map[string]any{"update_id": b.nextUpd, "message": msg})
	if len(b.updates) >= MaxUpdates {
		b.updates, b.ids = b.updates[1:], b.ids[1:]
	}
	b.updates = append(b.updates, raw)
	b.ids = append(b.ids, b.nextUpd)
	close(b.wake)
	b.wake = make(chan struct{})
	return s.nextMsg
}

// Sent returns the messages bots posted in chat, oldest first (copies).
func (s *Server) Sent(chatID int64) []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Sent, 0, len(s.sent[chatID]))
	for _, m := range s.sent[chatID] {
		c := *m
		c.Edits = append([]string(nil), m.Edits...)
		out = append(out, c)
	}
	return out
}

// Actions returns the chat actions (sendChatAction) bots sent in chat.
func (s *Server) Actions(chatID int64) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.actions[chatID]...)
}

func chatJSON(c *Chat) map[string]any {
	m := map[string]any{"id": c.ID, "type": c.Type}
	if c.Title != "" {
		m["title"] = c.Title
	}
	if c.FirstName != "" {
		m["first_name"] = c.FirstName
	}
	if c.Username != "" {
		m["username"] = c.Username
	}
	return m
}

// ServeHTTP serves the Bot API, file downloads and the control endpoints
// of the standalone fake (see ControlHandler).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/file/bot"):
		s.serveFile(w, r)
	case strings.HasPrefix(r.URL.Path, "/bot"):
		s.serveMethod(w, r)
	case strings.HasPrefix(r.URL.Path, "/_fake/"):
		s.serveControl(w, r)
	default:
		fail(w, apiError{code: 404, desc: "Not Found"})
	}
}

func reply(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

func fail(w http.ResponseWriter, e apiError) {
	body := map[string]any{"ok": false, "error_code": e.code, "description": e.desc}
	if e.retryAfter > 0 {
		body["parameters"] = map[string]any{"retry_after": e.retryAfter}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.code)
	json.NewEncoder(w).Encode(body)
}

var (
	errUnauthorized = apiError{code: 401, desc: "Unauthorized"}
	errChatNotFound = apiError{code: 400, desc: "Bad Request: chat not found"}
)

// params reads a request's parameters from JSON, a form or the query.
func params(r *http.Request) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range r.URL.Query() {
		out[k] = v[0]
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		var m map[string]any
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&m); err != nil {
			return nil, err
		}
		for k, v := range m {
			switch v := v.(type) {
			case string:
				out[k] = v
			default:
				b, _ := json.Marshal(v)
				out[k] = string(b)
			}
		}
	case "multipart/form-data":
		if err := r.ParseMultipartForm(MaxUploadBytes); err != nil {
			return nil, err
		}
		for k, v := range r.MultipartForm.Value {
			out[k] = v[0]
		}
	case "application/x-www-form-urlencoded":
		if err := r.ParseForm(); err != nil {
			return nil, err
		}
		for k, v := range r.PostForm {
			out[k] = v[0]
		}
	}
	return out, nil
}

func (s *Server) serveMethod(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/bot")
	token, method, ok := strings.Cut(rest, "/")
	if !ok {
		fail(w, apiError{code: 404, desc: "Not Found"})
		return
	}
	p, err := params(r)
	if err != nil {
		fail(w, apiError{code: 400, desc: "Bad Request: can't parse request parameters"})
		return
	}
	s.mu.Lock()
	b := s.bots[token]
	if b == nil || b.revoked {
		s.mu.Unlock()
		fail(w, errUnauthorized)
		return
	}
	b.calls[method]++
	var failure *apiError
	q := b.fails[method][:0]
	for _, e := range b.fails[method] {
		if e.nth--; e.nth <= 0 && failure == nil {
			failure = &e
			continue
		}
		q = append(q, e)
	}
	b.fails[method] = q
	if failure != nil {
		s.mu.Unlock()
		fail(w, *failure)
		return
	}
	s.mu.Unlock()
	switch method {
	case "getMe":
		reply(w, map[string]any{"id": b.bot.ID, "is_bot": true, "first_name": b.bot.FirstName, "username": b.bot.Username,
			"can_join_groups": true, "can_read_all_group_messages": false, "supports_inline_queries": false})
	case "getChat":
		s.getChat(w, p)
	case "getWebhookInfo":
		s.mu.Lock()
		url, n := b.webhook, len(b.updates)
		s.mu.Unlock()
		reply(w, map[string]any{"url": url, "has_custom_certificate": false, "pending_update_count": n})
	case "setWebhook", "deleteWebhook":
		s.SetWebhook(token, p["url"])
		reply(w, true)
	case "getUpdates":
		s.getUpdates(w, r, b, p)
	case "getFile":
		s.mu.Lock()
		f := s.files[p["file_id"]]
		s.mu.Unlock()
		if f == nil || f.id != p["file_id"] {
			fail(w, apiError{code: 400, desc: "Bad Request: invalid file_id"})
			return
		}
		reply(w, map[string]any{"file_id": f.id, "file_unique_id": f.unique, "file_size": len(f.data), "file_path": f.path})
	case "sendMessage":
		s.sendMessage(w, b, p)
	case "editMessageText":
		s.editMessageText(w, b, p)
	case "sendChatAction":
		c := s.chat(p["chat_id"])
		if c == nil {
			fail(w, errChatNotFound)
			return
		}
		s.mu.Lock()
		s.actions[c.ID] = append(s.actions[c.ID][max(0, len(s.actions[c.ID])-MaxSent+1):], p["action"])
		s.mu.Unlock()
		reply(w, true)
	case "sendPhoto", "sendDocument", "sendVideo", "sendAudio":
		s.sendFile(w, r, b, method, p)
	default:
		fail(w, apiError{code: 404, desc: "Not Found"})
	}
}

// chat resolves a chat_id parameter (a number or "@username").
func (s *Server) chat(id string) *Chat {
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.HasPrefix(id, "@") {
		for _, c := range s.chats {
			if "@"+c.Username == id {
				return c
			}
		}
		return nil
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return nil
	}
	return s.chats[n]
}

func (s *Server) getChat(w http.ResponseWriter, p map[string]string) {
	c := s.chat(p["chat_id"])
	if c == nil {
		fail(w, errChatNotFound)
		return
	}
	reply(w, chatJSON(c))
}

func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, b *botState, p map[string]string) {
	offset, _ := strconv.ParseInt(p["offset"], 10, 64)
	limit, _ := strconv.Atoi(p["limit"])
	if limit <= 0 || limit > maxLimit {
		limit = maxLimit
	}
	timeout, _ := strconv.Atoi(p["timeout"])
	s.mu.Lock()
	if b.webhook != "" {
		s.mu.Unlock()
		fail(w, apiError{code: 409, desc: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"})
		return
	}
	// A newer getUpdates terminates the running one, as Telegram does.
	close(b.poll)
	b.poll = make(chan struct{})
	mine := b.poll
	b.pollers++
	b.maxPolls = max(b.maxPolls, b.pollers)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		b.pollers--
		s.mu.Unlock()
	}()
	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if offset > 0 {
			i := 0
			for i < len(b.ids) && b.ids[i] < offset {
				i++
			}
			b.updates, b.ids = b.updates[i:], b.ids[i:]
		}
		n := min(limit, len(b.updates))
		out := append([]json.RawMessage{}, b.updates[:n]...)
		wake, revoked := b.wake, b.revoked
		s.mu.Unlock()
		if revoked {
			fail(w, errUnauthorized)
			return
		}
		if n > 0 || timeout <= 0 {
			reply(w, out)
			return
		}
		select {
		case <-wake:
		case <-mine:
			s.mu.Lock()
			revoked = b.revoked
			s.mu.Unlock()
			if revoked {
				fail(w, errUnauthorized)
			} else {
				fail(w, apiError{code: 409, desc: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"})
			}
			return
		case <-deadline.C:
			reply(w, []any{})
			return
		case <-r.Context().Done():
			return
		case <-s.closed:
			reply(w, []any{})
			return
		}
	}
}

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

// post records a bot message in chat and returns its Message object.
func (s *Server) post(b *botState, c *Chat, method, text string, f *SentFile, thread string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextMsg++
	m := &Sent{MessageID: s.nextMsg, BotID: b.bot.ID, Method: method, Text: text, File: f}
	m.ThreadID, _ = strconv.ParseInt(thread, 10, 64)
	list := s.sent[c.ID]
	if len(list) >= MaxSent {
		list = list[1:]
	}
	s.sent[c.ID] = append(list, m)
	out := map[string]any{"message_id": m.MessageID, "date": time.Now().Unix(), "chat": chatJSON(c),
		"from": map[string]any{"id": b.bot.ID, "is_bot": true, "first_name": b.bot.FirstName, "username": b.bot.Username}}
	if m.ThreadID != 0 {
		out["message_thread_id"], out["is_topic_message"] = m.ThreadID, true
	}
	if f == nil {
		out["text"] = text
	} else {
		if text != "" {
			out["caption"] = text
		}
		out[f.Field] = map[string]any{"file_id": fmt.Sprintf("sent-%d", m.MessageID), "file_unique_id": fmt.Sprintf("s%d", m.MessageID), "file_size": len(f.Data)}
	}
	return out
}

func (s *Server) sendMessage(w http.ResponseWriter, b *botState, p map[string]string) {
	c := s.chat(p["chat_id"])
	switch text := p["text"]; {
	case c == nil:
		fail(w, errChatNotFound)
	case strings.TrimSpace(text) == "":
		fail(w, apiError{code: 400, desc: "Bad Request: message text is empty"})
	case utf16Len(text) > MaxTextLen:
		fail(w, apiError{code: 400, desc: "Bad Request: message is too long"})
	default:
		reply(w, s.post(b, c, "sendMessage", text, nil, p["message_thread_id"]))
	}
}

func (s *Server) editMessageText(w http.ResponseWriter, b *botState, p map[string]string) {
	c := s.chat(p["chat_id"])
	id, _ := strconv.ParseInt(p["message_id"], 10, 64)
	text := p["text"]
	if c == nil {
		fail(w, errChatNotFound)
		return
	}
	if strings.TrimSpace(text) == "" {
		fail(w, apiError{code: 400, desc: "Bad Request: message text is empty"})
		return
	}
	if utf16Len(text) > MaxTextLen {
		fail(w, apiError{code: 400, desc: "Bad Request: MESSAGE_TOO_LONG"})
		return
	}
	s.mu.Lock()
	var m *Sent
	for _, x := range s.sent[c.ID] {
		if x.MessageID == id && x.BotID == b.bot.ID && x.File == nil {
			m = x
		}
	}
	switch {
	case m == nil:
		s.mu.Unlock()
		fail(w, apiError{code: 400, desc: "Bad Request: message to edit not found"})
		return
	case m.Text == text:
		s.mu.Unlock()
		fail(w, apiError{code: 400, desc: "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"})
		return
	}
	m.Edits = append(m.Edits, m.Text)
	m.Text = text
	out := map[string]any{"message_id": m.MessageID, "date": time.Now().Unix(), "edit_date": time.Now().Unix(),
		"chat": chatJSON(c), "text": text}
	s.mu.Unlock()
	reply(w, out)
}

func (s *Server) sendFile(w http.ResponseWriter, r *http.Request, b *botState, method string, p map[string]string) {
	c := s.chat(p["chat_id"])
	if c == nil {
		fail(w, errChatNotFound)
		return
	}
	field := strings.ToLower(strings.TrimPrefix(method, "send"))
	if r.MultipartForm == nil || len(r.MultipartForm.File[field]) == 0 {
		fail(w, apiError{code: 400, desc: "Bad Request: there is no " + field + " in the request"})
		return
	}
	fh := r.MultipartForm.File[field][0]
	fr, err := fh.Open()
	if err != nil {
		fail(w, apiError{code: 400, desc: "Bad Request: can't read the file"})
		return
	}
	data, err := io.ReadAll(fr)
	fr.Close()
	if err != nil || len(data) == 0 {
		fail(w, apiError{code: 400, desc: "Bad Request: file must be non-empty"})
		return
	}
	f := &SentFile{Field: field, Name: fh.Filename, MimeType: fh.Header.Get("Content-Type"), Data: data}
	reply(w, s.post(b, c, method, p["caption"], f, p["message_thread_id"]))
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/file/bot")
	token, path, _ := strings.Cut(rest, "/")
	s.mu.Lock()
	b, f := s.bots[token], s.files[path]
	s.mu.Unlock()
	switch {
	case b == nil || b.revoked:
		fail(w, errUnauthorized)
	case f == nil || f.path != path:
		fail(w, apiError{code: 404, desc: "Not Found"})
	default:
		w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
		w.Write(f.data)
	}
}

// serveControl serves the standalone fake's control endpoints, for a
// person or a script driving a fake that runs in another process:
//
//	POST /_fake/send?token=T&chat_id=C   body: the user's text
//	GET  /_fake/sent?chat_id=C           JSON: the bots' messages (Sent)
func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	chatID, err := strconv.ParseInt(r.URL.Query().Get("chat_id"), 10, 64)
	if err != nil {
		http.Error(w, "chat_id must be a number", http.StatusBadRequest)
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/_fake/send":
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		token := r.URL.Query().Get("token")
		s.mu.Lock()
		ok := s.bots[token] != nil && s.chats[chatID] != nil
		s.mu.Unlock()
		if !ok || len(body) == 0 {
			http.Error(w, "unknown bot or chat, or no text", http.StatusNotFound)
			return
		}
		fmt.Fprintln(w, s.SendText(token, chatID, string(body)))
	case r.Method == http.MethodGet && r.URL.Path == "/_fake/sent":
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(s.Sent(chatID))
	default:
		http.NotFound(w, r)
	}
}

// WaitSent waits until cond holds for chat's sent messages, or ctx ends.
func (s *Server) WaitSent(ctx context.Context, chatID int64, cond func([]Sent) bool) ([]Sent, error) {
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
