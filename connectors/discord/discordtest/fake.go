// Package discordtest is a fake Discord for tests: one http.Handler that
// speaks Discord's REST API (JSON, API v9/v10) under /api/v{N}/ and its
// Gateway (a WebSocket with Discord's opcodes) at /gateway, with an API
// for the test to play the people in a channel (Say) and to see what the
// bots did there (Sent).
//
// REST: GET users/@me, gateway, gateway/bot, channels/{id},
// channels/{id}/messages (?after=, ?before=, ?limit=, newest first as
// Discord returns them), POST channels/{id}/messages (JSON or multipart
// with payload_json and files[n], message_reference replies), PATCH
// channels/{id}/messages/{id}, POST channels/{id}/typing, and attachment
// downloads at /attachments/{id}/{name} (the CDN's role). Errors have
// Discord's shape ({"message": "...", "code": N}) and status: 401 for an
// unknown or revoked token, 404 code 10003 for an unknown channel, 403
// code 50001 for a channel the bot cannot see, 429 with retry_after and
// the X-RateLimit-* headers when a route's bucket is empty or FailNext
// says so. Every answer carries X-RateLimit-Limit, -Remaining, -Reset,
// -Reset-After and -Bucket.
//
// Gateway: HELLO (op 10) on connect; IDENTIFY (op 2) checks the token
// (close 4004) and the intents (close 4014 when MESSAGE_CONTENT is asked
// for and not enabled for the bot) and answers READY; HEARTBEAT (op 1) is
// answered with HEARTBEAT_ACK (op 11); RESUME (op 6) replays the
// dispatches after the given sequence number and answers RESUMED, or
// INVALID_SESSION (op 9, d=false) for an unknown or invalidated session;
// DISPATCH (op 0) MESSAGE_CREATE carries every message written in a
// channel the bot sees, with content only under MESSAGE_CONTENT (or in a
// DM, or when the bot is mentioned), as Discord does. The test can drop
// the connections (Drop), send RECONNECT (op 7), invalidate sessions, and
// revoke a token.
//
// Every store is bounded (MaxMessages per channel, MaxEvents per session,
// MaxUploadBytes). A Server is safe for concurrent use.
package discordtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Bounds and Discord's limits the fake enforces.
const (
	// MaxMessages bounds the messages kept per channel.
	MaxMessages = 5000
	// MaxEvents bounds the dispatches kept per Gateway session for a
	// RESUME; an older sequence number is answered INVALID_SESSION.
	MaxEvents = 1000
	// MaxTextLen is Discord's message content limit, in characters.
	MaxTextLen = 2000
	// MaxUploadBytes bounds one message's attachments (Discord's default
	// upload limit: 10 MiB).
	MaxUploadBytes = 10 << 20
	// MaxFiles is the most attachments per message.
	MaxFiles = 10
	// DefaultHeartbeat is the heartbeat interval of HELLO.
	DefaultHeartbeat = 41250 * time.Millisecond
	// discordEpoch is the first millisecond of 2015 (snowflakes).
	discordEpoch = 1420070400000
)

// Intent bits of IDENTIFY the fake reads.
const (
	IntentGuildMessages  = 1 << 9
	IntentDirectMessages = 1 << 12
	IntentMessageContent = 1 << 15
)

// Channel types.
const (
	ChannelGuildText = 0
	ChannelDM        = 1
)

// Routes, as FailNext and Calls name them.
const (
	RouteMe         = "GET /users/@me"
	RouteGateway    = "GET /gateway"
	RouteGatewayBot = "GET /gateway/bot"
	RouteChannel    = "GET /channels/{id}"
	RouteHistory    = "GET /channels/{id}/messages"
	RouteSend       = "POST /channels/{id}/messages"
	RouteEdit       = "PATCH /channels/{id}/messages/{id}"
	RouteTyping     = "POST /channels/{id}/typing"
)

// Bot is a bot account of the fake.
type Bot struct {
	ID       string
	Username string
	// MessageContent is the Message Content privileged intent, switched
	// on in the Developer Portal: without it IDENTIFY asking for it is
	// closed with 4014.
	MessageContent bool
}

// Channel is a channel the fake knows.
type Channel struct {
	ID      string
	Type    int // ChannelGuildText (default) or ChannelDM
	GuildID string
	Name    string
	// Hidden lists the bot tokens that cannot see the channel (403).
	Hidden []string
}

// User is a person writing in a channel.
type User struct {
	ID       string
	Username string
}

// File is an attachment.
type File struct {
	Name        string
	ContentType string
	Data        []byte
}

// Sent is one message a bot posted in a channel, as it now reads.
type Sent struct {
	ID string
	// Text is the current content, after every edit.
	Text string
	// Edits are the contents before the current one, oldest first (the
	// first is what was posted).
	Edits []string
	// ReplyTo is the message_reference's message id.
	ReplyTo string
	Files   []File
}

// Server is the fake Discord. Create it with New, add bots and channels,
// Start it, and Close it at the end.
type Server struct {
	mu        sync.Mutex
	hs        *httptest.Server
	base      string
	heartbeat time.Duration
	bots      map[string]*botState // by token
	channels  map[string]*chanState
	sessions  map[string]*gwSession
	files     map[string]File // attachments by id
	conns     map[*gwConn]struct{}
	fails     []failure
	lastID    int64
	sessSeq   int
	// Rate: a route's bucket allows Limit calls per Window.
	limit  int
	window time.Duration
	wg     sync.WaitGroup
	closed bool
}

type botState struct {
	Bot
	token     string
	revoked   bool
	calls     map[string]int
	identify  int
	resumes   int
	buckets   map[string]*bucket
	dmChannel map[string]bool
}

type bucket struct {
	remaining int
	reset     time.Time
}

type message struct {
	ID          string
	ChannelID   string
	Author      User
	Bot         bool
	Content     string
	Edits       []string
	Created     time.Time
	Edited      time.Time
	ReplyTo     string
	Attachments []attachment
}

type attachment struct {
	ID   string
	File File
}

type chanState struct {
	Channel
	msgs []*message
}

type failure struct {
	token, route string
	status       int
	retryAfter   time.Duration
	message      string
}

// New returns a fake with no bots and no channels.
func New() *Server {
	return &Server{
		heartbeat: DefaultHeartbeat,
		bots:      map[string]*botState{},
		channels:  map[string]*chanState{},
		sessions:  map[string]*gwSession{},
		files:     map[string]File{},
		conns:     map[*gwConn]struct{}{},
		limit:     50,
		window:    time.Second,
	}
}

// SetHeartbeat sets the heartbeat interval announced in HELLO (call it
// before Start).
func (s *Server) SetHeartbeat(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.heartbeat = d
}

// SetRateLimit sets every route bucket's size and window (default 50 per
// second).
func (s *Server) SetRateLimit(limit int, window time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit, s.window = max(limit, 1), max(window, time.Millisecond)
}

// Start serves the fake on a loopback port and returns its base URL
// (http://127.0.0.1:N).
func (s *Server) Start() string {
	s.hs = httptest.NewServer(s)
	s.base = s.hs.URL
	return s.base
}

// APIURL is the REST base a client uses instead of https://discord.com/api.
func (s *Server) APIURL() string { return s.base + "/api" }

// GatewayURL is the fake's Gateway (what GET /gateway answers).
func (s *Server) GatewayURL() string { return "ws" + strings.TrimPrefix(s.base, "http") + "/gateway" }

// Close closes every Gateway connection and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	conns := make([]*gwConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close(websocket.StatusGoingAway, "server closing")
	}
	s.wg.Wait()
	if s.hs != nil {
		s.hs.Close()
	}
}

// AddBot adds a bot with its token (without the "Bot " prefix).
func (s *Server) AddBot(token string, b Bot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bots[token] = &botState{Bot: b, token: token, calls: map[string]int{}, buckets: map[string]*bucket{}}
}

// SetMessageContent switches the bot's Message Content intent on or off.
func (s *Server) SetMessageContent(token string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.bots[token]; b != nil {
		b.MessageContent = on
	}
}

// AddChannel adds a channel.
func (s *Server) AddChannel(c Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels[c.ID] = &chanState{Channel: c}
}

// Revoke makes Discord refuse the token: 401 on REST, its Gateway
// connections closed with 4004.
func (s *Server) Revoke(token string) {
	s.mu.Lock()
	var conns []*gwConn
	if b := s.bots[token]; b != nil {
		b.revoked = true
		for c := range s.conns {
			if c.token() == token {
				conns = append(conns, c)
			}
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close(4004, "Authentication failed.")
	}
}

// FailNext makes the token's next call of route fail with status and a
// Discord error body; a 429 carries retryAfter.
func (s *Server) FailNext(token, route string, status int, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails = append(s.fails, failure{token: token, route: route, status: status, retryAfter: retryAfter})
}

// Calls returns how many times the token called route.
func (s *Server) Calls(token, route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.bots[token]; b != nil {
		return b.calls[route]
	}
	return 0
}

// Identifies and Resumes count the token's IDENTIFY and RESUME payloads.
func (s *Server) Identifies(token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.bots[token]; b != nil {
		return b.identify
	}
	return 0
}

// Resumes: see Identifies.
func (s *Server) Resumes(token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.bots[token]; b != nil {
		return b.resumes
	}
	return 0
}

// Connected returns how many Gateway connections of the token are ready.
func (s *Server) Connected(token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.conns {
		if c.token() == token && c.ready() {
			n++
		}
	}
	return n
}

// Drop closes the token's Gateway connections with code (0 drops the TCP
// connection without a close frame); their sessions stay resumable.
func (s *Server) Drop(token string, code int) {
	s.mu.Lock()
	var conns []*gwConn
	for c := range s.conns {
		if c.token() == token {
			conns = append(conns, c)
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		if code == 0 {
			c.ws.CloseNow()
		} else {
			c.close(websocket.StatusCode(code), "dropped by the test")
		}
	}
}

// Reconnect sends RECONNECT (op 7) on the token's Gateway connections.
func (s *Server) Reconnect(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.token() == token {
			c.send(frame{Op: opReconnect})
		}
	}
}

// InvalidSession sends INVALID_SESSION (op 9, d=false) on the token's
// ready Gateway connections and forgets their sessions, as Discord does
// when it ends a session: the client must IDENTIFY again (on the same
// connection, or after reconnecting), and what is written until its new
// READY is dispatched to no session.
func (s *Server) InvalidSession(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.token() == token {
			delete(s.sessions, c.sess.id)
			c.sess = nil
			c.send(frame{Op: opInvalidSession, D: json.RawMessage("false")})
		}
	}
}

// InvalidateSessions forgets the token's Gateway sessions: a RESUME is
// answered INVALID_SESSION.
func (s *Server) InvalidateSessions(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, se := range s.sessions {
		if se.token == token {
			delete(s.sessions, id)
		}
	}
}

// newID returns a new snowflake (time-ordered).
func (s *Server) newID() string {
	id := (time.Now().UnixMilli() - discordEpoch) << 22
	if id <= s.lastID {
		id = s.lastID + 1
	}
	s.lastID = id
	return strconv.FormatInt(id, 10)
}

// Say writes a message from the user in the channel and dispatches
// MESSAGE_CREATE to every Gateway session that sees it; it returns the
// message id. replyTo, when not empty, makes it a reply.
func (s *Server) Say(channelID string, from User, text string, files ...File) string {
	return s.SayReply(channelID, from, "", text, files...)
}

// SayReply is Say with a message_reference to replyTo.
func (s *Server) SayReply(channelID string, from User, replyTo, text string, files ...File) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channels[channelID]
	if ch == nil {
		panic("discordtest: Say in unknown channel " + channelID)
	}
	m := &message{ID: s.newID(), ChannelID: channelID, Author: from, Content: text, Created: time.Now(), ReplyTo: replyTo}
	for _, f := range files {
		a := attachment{ID: s.newID(), File: f}
		s.files[a.ID] = f
		m.Attachments = append(m.Attachments, a)
	}
	s.appendMessage(ch, m)
	return m.ID
}

// appendMessage stores m and dispatches it. s.mu is held.
func (s *Server) appendMessage(ch *chanState, m *message) {
	ch.msgs = append(ch.msgs, m)
	if len(ch.msgs) > MaxMessages {
		ch.msgs = slices.Delete(ch.msgs, 0, len(ch.msgs)-MaxMessages)
	}
	for _, se := range s.sessions {
		b := s.bots[se.token]
		if b == nil || slices.Contains(ch.Hidden, se.token) {
			continue
		}
		want := IntentGuildMessages
		if ch.Type == ChannelDM {
			want = IntentDirectMessages
		}
		if se.intents&want == 0 {
			continue
		}
		full := se.intents&IntentMessageContent != 0 || ch.Type == ChannelDM || m.Author.ID == b.ID ||
			strings.Contains(m.Content, "<@"+b.ID+">")
		se.dispatch("MESSAGE_CREATE", s.messageJSON(ch, m, full))
	}
}

// Sent returns the messages bots posted in the channel, oldest first.
func (s *Server) Sent(channelID string) []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channels[channelID]
	if ch == nil {
		return nil
	}
	var out []Sent
	for _, m := range ch.msgs {
		if !m.Bot {
			continue
		}
		st := Sent{ID: m.ID, Text: m.Content, Edits: slices.Clone(m.Edits), ReplyTo: m.ReplyTo}
		for _, a := range m.Attachments {
			st.Files = append(st.Files, a.File)
		}
		out = append(out, st)
	}
	return out
}

// WaitSent waits until cond holds for the channel's sent messages, or ctx
// ends.
func (s *Server) WaitSent(ctx context.Context, channelID string, cond func([]Sent) bool) ([]Sent, error) {
	for {
		got := s.Sent(channelID)
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

// messageJSON is m as Discord's message object. s.mu is held.
func (s *Server) messageJSON(ch *chanState, m *message, full bool) map[string]any {
	author := map[string]any{"id": m.Author.ID, "username": m.Author.Username, "discriminator": "0", "global_name": m.Author.Username}
	if m.Bot {
		author["bot"] = true
	}
	out := map[string]any{
		"id": m.ID, "channel_id": ch.ID, "author": author, "content": "", "timestamp": m.Created.UTC().Format(time.RFC3339Nano),
		"edited_timestamp": nil, "tts": false, "mention_everyone": false, "mentions": []any{}, "mention_roles": []any{},
		"attachments": []any{}, "embeds": []any{}, "pinned": false, "type": 0,
	}
	if ch.GuildID != "" {
		out["guild_id"] = ch.GuildID
	}
	if !m.Edited.IsZero() {
		out["edited_timestamp"] = m.Edited.UTC().Format(time.RFC3339Nano)
	}
	if m.ReplyTo != "" {
		out["type"] = 19
		ref := map[string]any{"message_id": m.ReplyTo, "channel_id": ch.ID}
		if ch.GuildID != "" {
			ref["guild_id"] = ch.GuildID
		}
		out["message_reference"] = ref
	}
	if full {
		out["content"] = m.Content
		var atts []any
		for _, a := range m.Attachments {
			u := s.base + "/attachments/" + ch.ID + "/" + a.ID + "/" + a.File.Name
			atts = append(atts, map[string]any{"id": a.ID, "filename": a.File.Name, "size": len(a.File.Data), "url": u,
				"proxy_url": u, "content_type": a.File.ContentType})
		}
		if atts != nil {
			out["attachments"] = atts
		}
	}
	return out
}

// ServeHTTP serves the REST API, the Gateway and the attachments.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/gateway" || r.URL.Path == "/gateway/":
		s.serveGateway(w, r)
	case strings.HasPrefix(r.URL.Path, "/attachments/"):
		s.serveAttachment(w, r)
	case strings.HasPrefix(r.URL.Path, "/api/"):
		s.serveREST(w, r)
	default:
		http.NotFound(w, r)
	}
}

// apiError writes Discord's error body.
func apiError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"message": msg, "code": code})
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// route maps a REST path (after /api/vN) to its route name and ids.
func route(method, p string) (string, []string) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case method == http.MethodGet && p == "/users/@me":
		return RouteMe, nil
	case method == http.MethodGet && p == "/gateway":
		return RouteGateway, nil
	case method == http.MethodGet && p == "/gateway/bot":
		return RouteGatewayBot, nil
	case len(parts) == 2 && parts[0] == "channels" && method == http.MethodGet:
		return RouteChannel, parts[1:]
	case len(parts) == 3 && parts[0] == "channels" && parts[2] == "messages" && method == http.MethodGet:
		return RouteHistory, parts[1:2]
	case len(parts) == 3 && parts[0] == "channels" && parts[2] == "messages" && method == http.MethodPost:
		return RouteSend, parts[1:2]
	case len(parts) == 3 && parts[0] == "channels" && parts[2] == "typing" && method == http.MethodPost:
		return RouteTyping, parts[1:2]
	case len(parts) == 4 && parts[0] == "channels" && parts[2] == "messages" && method == http.MethodPatch:
		return RouteEdit, []string{parts[1], parts[3]}
	}
	return "", nil
}

func (s *Server) serveREST(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/api")
	if v, after, ok := strings.Cut(strings.TrimPrefix(rest, "/"), "/"); ok && len(v) > 1 && v[0] == 'v' {
		rest = "/" + after
	}
	name, ids := route(r.Method, rest)
	if name == "" {
		apiError(w, http.StatusNotFound, 0, "404: Not Found")
		return
	}
	auth := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(auth, "Bot ")
	s.mu.Lock()
	b := s.bots[token]
	if !ok || b == nil || b.revoked {
		s.mu.Unlock()
		apiError(w, http.StatusUnauthorized, 0, "401: Unauthorized")
		return
	}
	b.calls[name]++
	// Rate limit: one bucket per route and channel.
	key := name
	if len(ids) > 0 {
		key += " " + ids[0]
	}
	bk := b.buckets[key]
	now := time.Now()
	if bk == nil || now.After(bk.reset) {
		bk = &bucket{remaining: s.limit, reset: now.Add(s.window)}
		b.buckets[key] = bk
	}
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(s.limit))
	h.Set("X-RateLimit-Bucket", fmt.Sprintf("%x", len(key)*7919+int(key[0])))
	h.Set("X-RateLimit-Reset", strconv.FormatFloat(float64(bk.reset.UnixMilli())/1000, 'f', 3, 64))
	resetAfter := time.Until(bk.reset)
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(resetAfter.Seconds(), 'f', 3, 64))
	if bk.remaining == 0 {
		s.mu.Unlock()
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Scope", "user")
		h.Set("Retry-After", strconv.Itoa(int(resetAfter.Seconds()+0.999)))
		reply(w, http.StatusTooManyRequests, map[string]any{"message": "You are being rate limited.", "retry_after": resetAfter.Seconds(), "global": false})
		return
	}
	bk.remaining--
	h.Set("X-RateLimit-Remaining", strconv.Itoa(bk.remaining))
	for i, f := range s.fails {
		if f.token == token && f.route == name {
			s.fails = slices.Delete(s.fails, i, i+1)
			s.mu.Unlock()
			if f.status == http.StatusTooManyRequests {
				h.Set("Retry-After", strconv.Itoa(int(f.retryAfter.Seconds()+0.999)))
				h.Set("X-RateLimit-Scope", "user")
				reply(w, f.status, map[string]any{"message": "You are being rate limited.", "retry_after": f.retryAfter.Seconds(), "global": false})
				return
			}
			msg := http.StatusText(f.status)
			apiError(w, f.status, 0, fmt.Sprintf("%d: %s", f.status, msg))
			return
		}
	}
	defer s.mu.Unlock()
	switch name {
	case RouteMe:
		reply(w, 200, map[string]any{"id": b.ID, "username": b.Username, "discriminator": "0", "bot": true, "verified": true, "flags": 0})
	case RouteGateway:
		reply(w, 200, map[string]any{"url": s.GatewayURL()})
	case RouteGatewayBot:
		reply(w, 200, map[string]any{"url": s.GatewayURL(), "shards": 1,
			"session_start_limit": map[string]any{"total": 1000, "remaining": 999, "reset_after": 86400000, "max_concurrency": 1}})
	default:
		ch := s.channels[ids[0]]
		if ch == nil {
			apiError(w, http.StatusNotFound, 10003, "Unknown Channel")
			return
		}
		if slices.Contains(ch.Hidden, token) {
			apiError(w, http.StatusForbidden, 50001, "Missing Access")
			return
		}
		switch name {
		case RouteChannel:
			out := map[string]any{"id": ch.ID, "type": ch.Type, "name": ch.Name}
			if ch.GuildID != "" {
				out["guild_id"] = ch.GuildID
			}
			if n := len(ch.msgs); n > 0 {
				out["last_message_id"] = ch.msgs[n-1].ID
			}
			reply(w, 200, out)
		case RouteHistory:
			s.history(w, r, ch)
		case RouteSend:
			s.send(w, r, b, ch)
		case RouteEdit:
			s.edit(w, r, b, ch, ids[1])
		case RouteTyping:
			w.WriteHeader(http.StatusNoContent)
		}
	}
}

// idNum parses a snowflake (0 if empty or malformed).
func idNum(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// history answers GET messages: limit (1-100, default 50) messages after
// ?after= (the oldest ones after it), before ?before=, or the newest,
// always newest first. s.mu is held.
func (s *Server) history(w http.ResponseWriter, r *http.Request, ch *chanState) {
	q := r.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			apiError(w, http.StatusBadRequest, 50035, "Invalid Form Body")
			return
		}
		limit = n
	}
	var pick []*message
	switch {
	case q.Get("after") != "":
		after := idNum(q.Get("after"))
		for _, m := range ch.msgs {
			if idNum(m.ID) > after && len(pick) < limit {
				pick = append(pick, m)
			}
		}
	case q.Get("before") != "":
		before := idNum(q.Get("before"))
		for i := len(ch.msgs) - 1; i >= 0 && len(pick) < limit; i-- {
			if idNum(ch.msgs[i].ID) < before {
				pick = append([]*message{ch.msgs[i]}, pick...)
			}
		}
	default:
		pick = ch.msgs[max(0, len(ch.msgs)-limit):]
	}
	out := make([]any, 0, len(pick))
	for i := len(pick) - 1; i >= 0; i-- {
		out = append(out, s.messageJSON(ch, pick[i], true))
	}
	reply(w, 200, out)
}

// sendBody is the part of a create-message body the fake reads.
type sendBody struct {
	Content          *string `json:"content"`
	MessageReference *struct {
		MessageID       string `json:"message_id"`
		FailIfNotExists *bool  `json:"fail_if_not_exists"`
	} `json:"message_reference"`
}

// send answers POST messages. s.mu is held.
func (s *Server) send(w http.ResponseWriter, r *http.Request, b *botState, ch *chanState) {
	var body sendBody
	var files []File
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil {
			apiError(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
			return
		}
	case "multipart/form-data":
		mr := multipart.NewReader(io.LimitReader(r.Body, MaxUploadBytes+1<<20), params["boundary"])
		total := 0
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				apiError(w, http.StatusBadRequest, 50035, "Invalid Form Body")
				return
			}
			data, err := io.ReadAll(io.LimitReader(p, MaxUploadBytes+1))
			total += len(data)
			if err != nil || total > MaxUploadBytes {
				apiError(w, http.StatusRequestEntityTooLarge, 40005, "Request entity too large")
				return
			}
			switch name := p.FormName(); {
			case name == "payload_json":
				if err := json.Unmarshal(data, &body); err != nil {
					apiError(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
					return
				}
			case strings.HasPrefix(name, "files["):
				files = append(files, File{Name: p.FileName(), ContentType: p.Header.Get("Content-Type"), Data: data})
			}
		}
	default:
		apiError(w, http.StatusBadRequest, 50035, "Invalid Form Body")
		return
	}
	content := ""
	if body.Content != nil {
		content = *body.Content
	}
	if len([]rune(content)) > MaxTextLen {
		apiError(w, http.StatusBadRequest, 50035, "Invalid Form Body (content: Must be 2000 or fewer in length.)")
		return
	}
	if len(files) > MaxFiles {
		apiError(w, http.StatusBadRequest, 50035, "Invalid Form Body (files: Must be 10 or fewer in length.)")
		return
	}
	if content == "" && len(files) == 0 {
		apiError(w, http.StatusBadRequest, 50006, "Cannot send an empty message")
		return
	}
	m := &message{ID: s.newID(), ChannelID: ch.ID, Author: User{ID: b.ID, Username: b.Username}, Bot: true, Content: content, Created: time.Now()}
	if ref := body.MessageReference; ref != nil && ref.MessageID != "" {
		found := slices.ContainsFunc(ch.msgs, func(x *message) bool { return x.ID == ref.MessageID })
		if !found && (ref.FailIfNotExists == nil || *ref.FailIfNotExists) {
			apiError(w, http.StatusBadRequest, 50035, "Invalid Form Body (message_reference: Unknown message)")
			return
		}
		if found {
			m.ReplyTo = ref.MessageID
		}
	}
	for _, f := range files {
		a := attachment{ID: s.newID(), File: f}
		s.files[a.ID] = f
		m.Attachments = append(m.Attachments, a)
	}
	s.appendMessage(ch, m)
	reply(w, 200, s.messageJSON(ch, m, true))
}

// edit answers PATCH messages/{id}. s.mu is held.
func (s *Server) edit(w http.ResponseWriter, r *http.Request, b *botState, ch *chanState, id string) {
	i := slices.IndexFunc(ch.msgs, func(m *message) bool { return m.ID == id })
	if i < 0 {
		apiError(w, http.StatusNotFound, 10008, "Unknown Message")
		return
	}
	m := ch.msgs[i]
	if !m.Bot || m.Author.ID != b.ID {
		apiError(w, http.StatusForbidden, 50005, "Cannot edit a message authored by another user")
		return
	}
	var body sendBody
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil {
		apiError(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return
	}
	if body.Content != nil {
		if len([]rune(*body.Content)) > MaxTextLen {
			apiError(w, http.StatusBadRequest, 50035, "Invalid Form Body (content: Must be 2000 or fewer in length.)")
			return
		}
		if *body.Content != m.Content {
			m.Edits = append(m.Edits, m.Content)
			m.Content = *body.Content
			m.Edited = time.Now()
		}
	}
	reply(w, 200, s.messageJSON(ch, m, true))
}

// serveAttachment serves /attachments/{channel}/{id}/{name}.
func (s *Server) serveAttachment(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/attachments/"), "/")
	if len(parts) != 3 {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	f, ok := s.files[parts[1]]
	s.mu.Unlock()
	if !ok || f.Name != parts[2] {
		http.NotFound(w, r)
		return
	}
	if f.ContentType != "" {
		w.Header().Set("Content-Type", f.ContentType)
	}
	w.Write(f.Data)
}
