// Package slacktest is a fake Slack for tests: an http.Handler that speaks
// the real Web API's JSON under /api/<method> and the Socket Mode
// WebSocket protocol at the URL apps.connections.open hands out, with an
// API for the test to play the people in a workspace (Say, SayFile) and
// to see what the bot did there (Sent, Messages).
//
// Web API (https://api.slack.com/web): auth.test, apps.connections.open,
// chat.postMessage, chat.update, chat.delete, assistant.threads.setStatus
// (kept per thread, see Statuses), conversations.history,
// conversations.replies, conversations.info, files.getUploadURLExternal
// (with its upload URL), files.completeUploadExternal and the download of
// a file's url_private with the bot token. Tokens are read from the
// Authorization: Bearer header or a token parameter; parameters from a form
// (urlencoded or multipart), a JSON body or the query, as the real API
// accepts them. Answers have the real shape: HTTP 200 with {"ok":true,...}
// or {"ok":false,"error":"invalid_auth"}; a rate limit is HTTP 429 with a
// Retry-After header and {"ok":false,"error":"ratelimited"}.
//
// Socket Mode (https://api.slack.com/apis/socket-mode): a connection opens
// with a hello; each event is an events_api envelope that the app acks by
// sending back its envelope_id; an envelope not acked within AckTimeout, or
// whose connection closed first, is sent again with retry_attempt and
// retry_reason (at most MaxRetries times); Disconnect sends the
// disconnect message Slack sends before it refreshes a connection; Drop
// cuts connections as a network failure does. Events of an app with no open
// connection are not kept (Options.KeepWhileDisconnected keeps them), so an
// app must read conversations.history to catch up. The fake pings every
// connection every PingInterval, as Slack does.
//
// Every queue is bounded (MaxPending, MaxMessages, MaxFileBytes). A Server
// is safe for concurrent use.
package slacktest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"
)

// Bounds of the fake.
const (
	// MaxPending bounds the unacked envelopes kept per app.
	MaxPending = 1000
	// MaxMessages bounds the messages kept per conversation.
	MaxMessages = 5000
	// MaxFileBytes bounds one uploaded file.
	MaxFileBytes = 64 << 20
	// MaxTextLen is the length beyond which chat.postMessage and
	// chat.update answer msg_too_long (Slack truncates at 40,000
	// characters; the fake refuses instead, so that a test sees it).
	MaxTextLen = 40000
	// MaxRetries is how often an unacked envelope is sent again.
	MaxRetries = 3
)

// App is a Slack app installed in the fake workspace: its app-level token
// (Socket Mode) and its bot.
type App struct {
	AppToken  string // xapp-...
	BotToken  string // xoxb-...
	AppID     string // A...
	TeamID    string // T...
	Team      string
	BotUserID string // U...: the bot's user, as mentions name it
	BotID     string // B...
	BotName   string
}

// Conversation is a channel, private channel or DM of the workspace.
// Every app's bot is a member of every conversation unless NotMember.
type Conversation struct {
	ID        string // C... (public), G... (private) or D... (DM)
	Name      string
	User      string // a DM's other person
	NotMember bool
}

// channelType is the conversation's channel_type in message events.
func (c *Conversation) channelType() string {
	switch {
	case strings.HasPrefix(c.ID, "D"):
		return "im"
	case strings.HasPrefix(c.ID, "G"):
		return "group"
	}
	return "channel"
}

// File is a file shared in a message.
type File struct {
	ID, Name, Title, MimeType string
	Data                      []byte
}

// Message is one message of a conversation, as it now reads.
type Message struct {
	Channel  string
	TS       string
	ThreadTS string // the thread's parent ts, "" for a top-level message
	User     string // the author (the bot's user for the bot's messages)
	BotID    string // set on the bot's messages
	Text     string
	// Edits lists the texts the message had before each chat.update,
	// oldest first.
	Edits   []string
	Files   []*File
	Deleted bool
}

// Options configures a fake; the zero value takes every default.
type Options struct {
	// AckTimeout is how long an envelope waits for its ack before it is
	// sent again (default 3 s, as Slack waits).
	AckTimeout time.Duration
	// PingInterval is how often each Socket Mode connection is pinged
	// (default 5 s; slack-go expects one within 30 s).
	PingInterval time.Duration
	// KeepWhileDisconnected keeps the events of an app without an open
	// connection until it connects; by default they are dropped.
	KeepWhileDisconnected bool
}

// Server is the fake Slack. Make it with New; serve it with Start (a
// loopback httptest server); Close ends it and every Socket Mode
// connection.
type Server struct {
	opts Options

	mu        sync.Mutex
	apps      map[string]*appState // by app token
	bots      map[string]*appState // by bot token
	convs     map[string]*Conversation
	msgs      map[string][]*Message // by conversation, oldest first
	files     map[string]*File      // by id
	uploads   map[string]*pendingUpload
	statuses  map[string][]string  // by conversation and thread ts: the statuses set, oldest first
	fails     map[string][]failure // by method
	calls     map[string]int
	lastMicro int64
	nextID    int64
	changed   chan struct{} // closed and replaced on every change
	base      string        // http://host:port
	ts        *httptest.Server
	closed    chan struct{}
	stop      sync.Once
	sockets   sync.WaitGroup
	retryRun  sync.Once
}

type pendingUpload struct {
	file   *File
	length int
	done   bool
}

type failure struct {
	err        string
	retryAfter int
	nth        int
}

// New returns an empty fake: add apps and conversations with AddApp and
// AddConversation.
func New(opts Options) *Server {
	if opts.AckTimeout <= 0 {
		opts.AckTimeout = 3 * time.Second
	}
	if opts.PingInterval <= 0 {
		opts.PingInterval = 5 * time.Second
	}
	return &Server{opts: opts, apps: map[string]*appState{}, bots: map[string]*appState{}, convs: map[string]*Conversation{},
		msgs: map[string][]*Message{}, files: map[string]*File{}, uploads: map[string]*pendingUpload{}, statuses: map[string][]string{},
		fails: map[string][]failure{}, calls: map[string]int{}, changed: make(chan struct{}), closed: make(chan struct{})}
}

// Start serves the fake on a loopback port and returns the Web API's base
// URL, "http://127.0.0.1:PORT/api/" (slack.OptionAPIURL's form).
func (s *Server) Start() string {
	s.ts = httptest.NewServer(s)
	s.mu.Lock()
	s.base = s.ts.URL
	s.mu.Unlock()
	s.retryRun.Do(func() {
		s.sockets.Add(1)
		go s.retryLoop()
	})
	return s.ts.URL + "/api/"
}

// Close ends every Socket Mode connection and, after Start, the server.
func (s *Server) Close() {
	s.stop.Do(func() { close(s.closed) })
	s.mu.Lock()
	for _, a := range s.apps {
		for c := range a.conns {
			c.close()
		}
	}
	s.mu.Unlock()
	if s.ts != nil {
		s.ts.CloseClientConnections()
		s.ts.Close()
	}
	s.sockets.Wait()
}

// AddApp installs an app.
func (s *Server) AddApp(a App) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &appState{App: a, conns: map[*sockConn]struct{}{}, tickets: map[string]bool{}}
	s.apps[a.AppToken] = st
	s.bots[a.BotToken] = st
}

// AddConversation adds a channel or DM.
func (s *Server) AddConversation(c Conversation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.convs[c.ID] = &c
}

// Revoke makes token (an app or a bot token) invalid, as uninstalling the
// app or revoking the token does: every call with it then fails with
// token_revoked, and the app's Socket Mode connections close.
func (s *Server) Revoke(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.apps[token]; a != nil {
		a.appRevoked = true
		for c := range a.conns {
			c.close()
		}
	}
	if a := s.bots[token]; a != nil {
		a.botRevoked = true
	}
}

// FailNext makes the next call of method fail with the Web API error code
// (e.g. "internal_error"); retryAfter > 0 makes it a rate limit instead:
// HTTP 429, Retry-After: retryAfter, error "ratelimited".
func (s *Server) FailNext(method, code string, retryAfter int) {
	s.FailCall(method, 1, code, retryAfter)
}

// FailCall is FailNext for the nth call of method from now (1: the next).
func (s *Server) FailCall(method string, nth int, code string, retryAfter int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails[method] = append(s.fails[method], failure{err: code, retryAfter: retryAfter, nth: max(nth, 1)})
}

// Calls returns how often method was called.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// SayOptions are the extras of a person's message.
type SayOptions struct {
	// ThreadTS posts the message as a reply in the thread of that parent.
	ThreadTS string
	// Files are shared with the message (subtype file_share).
	Files []File
}

// Say makes user write text in conversation conv and returns its ts. The
// message is kept in the history and sent as a message event (and an
// app_mention event when it mentions an app's bot, "<@U...>") to every
// app whose bot is a member.
func (s *Server) Say(conv, user, text string) string {
	return s.SayWith(conv, user, text, SayOptions{})
}

// SayWith is Say with a thread and files.
func (s *Server) SayWith(conv, user, text string, o SayOptions) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.convs[conv]
	if c == nil {
		panic("slacktest: unknown conversation " + conv)
	}
	m := &Message{Channel: conv, TS: s.nextTS(), ThreadTS: o.ThreadTS, User: user, Text: text}
	for _, f := range o.Files {
		f := f
		s.nextID++
		f.ID = fmt.Sprintf("F%08d", s.nextID)
		f.Data = append([]byte(nil), f.Data...)
		if f.Title == "" {
			f.Title = f.Name
		}
		s.files[f.ID] = &f
		m.Files = append(m.Files, &f)
	}
	s.appendMessage(m)
	for _, a := range s.apps {
		if c.NotMember {
			continue
		}
		a.enqueue(s, s.eventPayload(a, c, m, "message"))
		if strings.Contains(text, "<@"+a.BotUserID+">") && c.channelType() != "im" {
			a.enqueue(s, s.eventPayload(a, c, m, "app_mention"))
		}
	}
	s.notify()
	return m.TS
}

// Sent returns the messages the bots posted in conv, oldest first, as they
// now read (deleted ones left out).
func (s *Server) Sent(conv string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.msgs[conv] {
		if m.BotID != "" && !m.Deleted {
			out = append(out, m.copy())
		}
	}
	return out
}

// Statuses returns the statuses assistant.threads.setStatus set in the
// thread threadTS of conv, oldest first ("" clears the status).
func (s *Server) Statuses(conv, threadTS string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.statuses[conv+"/"+threadTS])
}

// Messages returns every message of conv, oldest first.
func (s *Server) Messages(conv string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.msgs[conv] {
		out = append(out, m.copy())
	}
	return out
}

// WaitSent waits until cond holds for what the bots posted in conv and
// returns it; it fails when ctx ends first.
func (s *Server) WaitSent(ctx context.Context, conv string, cond func([]Message) bool) ([]Message, error) {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		sent := s.Sent(conv)
		if cond(sent) {
			return sent, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return sent, fmt.Errorf("slacktest: %w", ctx.Err())
		}
	}
}

func (m *Message) copy() Message {
	c := *m
	c.Edits = slices.Clone(m.Edits)
	c.Files = slices.Clone(m.Files)
	return c
}

// nextTS returns a new, strictly increasing message ts: the time in
// seconds with six decimals ("1700000000.123456"), as Slack's are.
func (s *Server) nextTS() string {
	us := time.Now().UnixMicro()
	if us <= s.lastMicro {
		us = s.lastMicro + 1
	}
	s.lastMicro = us
	return fmt.Sprintf("%d.%06d", us/1e6, us%1e6)
}

// appendMessage keeps m in its conversation's history (bounded).
func (s *Server) appendMessage(m *Message) {
	l := s.msgs[m.Channel]
	if len(l) >= MaxMessages {
		l = l[1:]
	}
	s.msgs[m.Channel] = append(l, m)
}

// notify wakes WaitSent and the socket pumps.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// fileJSON is a file object as Slack shows it in messages and events.
func (s *Server) fileJSON(f *File) map[string]any {
	url := fmt.Sprintf("%s/files-pri/%s/%s", s.base, f.ID, f.Name)
	return map[string]any{"id": f.ID, "name": f.Name, "title": f.Title, "mimetype": f.MimeType, "size": len(f.Data),
		"mode": "hosted", "url_private": url, "url_private_download": url + "?download=1", "filetype": filetype(f.Name)}
}

func filetype(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return strings.ToLower(name[i+1:])
	}
	return "binary"
}

// messageJSON is a message as conversations.history shows it.
func (s *Server) messageJSON(m *Message) map[string]any {
	o := map[string]any{"type": "message", "ts": m.TS, "text": m.Text}
	if m.User != "" {
		o["user"] = m.User
	}
	if m.BotID != "" {
		o["bot_id"] = m.BotID
	}
	if m.ThreadTS != "" {
		o["thread_ts"] = m.ThreadTS
	}
	if len(m.Files) > 0 {
		o["subtype"] = "file_share"
		o["upload"] = true
		var fs []any
		for _, f := range m.Files {
			fs = append(fs, s.fileJSON(f))
		}
		o["files"] = fs
	}
	if len(m.Edits) > 0 {
		o["edited"] = map[string]any{"user": m.User, "ts": m.TS}
	}
	return o
}

// ServeHTTP serves the Web API, the file URLs and Socket Mode.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/api/"):
		s.serveAPI(w, r, strings.TrimPrefix(r.URL.Path, "/api/"))
	case strings.HasPrefix(r.URL.Path, "/upload/v1/"):
		s.serveUpload(w, r, strings.TrimPrefix(r.URL.Path, "/upload/v1/"))
	case strings.HasPrefix(r.URL.Path, "/files-pri/"):
		s.serveFile(w, r, strings.TrimPrefix(r.URL.Path, "/files-pri/"))
	case r.URL.Path == "/link/":
		s.serveSocket(w, r)
	default:
		http.NotFound(w, r)
	}
}
