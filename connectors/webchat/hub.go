package webchat

import (
	"encoding/json"
	"errors"
	"sync"
)

// Event types of the web side's Server-Sent Events stream
// (GET /webchat/api/events).
const (
	// EventDelta carries a live fragment of an assistant message
	// ([DeltaEvent]).
	EventDelta = "delta"
	// EventMessage carries a complete message, from the user or from the
	// assistant ([MessageEvent]); an assistant message replaces its deltas.
	EventMessage = "message"
	// EventActivity carries the assistant's processing state
	// ([ActivityEvent]).
	EventActivity = "activity"
	// EventStatus carries the state of the chat channel ([StatusEvent]).
	EventStatus = "status"
	// EventPing is sent every 20 s (data "{}"), so
	// that a page notices a stream that went silent without closing.
	EventPing = "ping"
)

// Defaults of the event hub.
const (
	// DefaultClientBuffer is the number of events buffered for one browser
	// stream; a client that falls this far behind is disconnected (its
	// EventSource reconnects and replays the backlog).
	DefaultClientBuffer = 64
	// DefaultMaxClients bounds the open event streams of one process.
	DefaultMaxClients = 1000
	// DefaultMaxStreamsPerChannel bounds the open event streams of one
	// channel (one QR chat or one room), so that one chat cannot take
	// every stream of the process.
	DefaultMaxStreamsPerChannel = 64
	// DefaultMaxStreamsPerClient bounds the open event streams of one
	// client address.
	DefaultMaxStreamsPerClient = 16
	// DefaultBacklog is the number of recent complete messages kept per
	// channel and replayed to a browser that (re)connects.
	DefaultBacklog = 50
	// DefaultMaxBacklogChannels bounds the channels with a backlog; the
	// least recently used backlog is dropped beyond it.
	DefaultMaxBacklogChannels = 1000
)

// errTooManyClients is returned by subscribe when DefaultMaxClients (or the
// configured bound) streams are open, or the channel's or the client's
// share of them.
var errTooManyClients = errors.New("webchat: too many event streams")

// DeltaEvent is the data of an EventDelta: Text is the fragment with the
// given Sequence of the assistant message MessageID.
type DeltaEvent struct {
	MessageID string `json:"message_id"`
	Sequence  int64  `json:"sequence"`
	Text      string `json:"text"`
}

// FileEvent describes one file of a MessageEvent; URL is relative to the
// web side and readable with the browser's session cookie.
type FileEvent struct {
	Type     string `json:"type"`
	Filename string `json:"filename,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
	Size     int64  `json:"size,omitempty"`
	// URL is empty for a file the browser sent that is not an image,
	// audio or video (it is shown by name); media it sent has a URL so
	// that it stays media after a reload.
	URL string `json:"url,omitempty"`
}

// MessageEvent is the data of an EventMessage. From is "user" or
// "assistant".
type MessageEvent struct {
	MessageID string      `json:"message_id"`
	From      string      `json:"from"`
	Text      string      `json:"text,omitempty"`
	Files     []FileEvent `json:"files,omitempty"`
	CreatedAt int64       `json:"created_at"`
}

// ActivityEvent is the data of an EventActivity: Status is "thinking",
// "tool" (with ToolName) or "idle".
type ActivityEvent struct {
	Status   string `json:"status"`
	ToolName string `json:"tool_name,omitempty"`
}

// States of a StatusEvent.
const (
	// StateConnected: an xAgent data plane serves the channel; messages
	// are answered now.
	StateConnected = "connected"
	// StateAgentOffline: the chat is signed in but no xAgent data plane
	// serves the channel; messages are kept and answered when it is back.
	StateAgentOffline = "agent_offline"
	// StateSignedOut: the chat was signed out (or its channel deleted);
	// the browser must sign in again.
	StateSignedOut = "signed_out"
	// StateReplaced: this browser's chat moved to another channel (a new
	// sign-in replaced it); reloading the page opens the new one.
	StateReplaced = "replaced"
)

// StatusEvent is the data of an EventStatus: State is one of the State*
// constants; Detail is a short human-readable note. The stream sends one
// first and another whenever the state changes (checked every second).
type StatusEvent struct {
	State  string `json:"state"`
	Detail string `json:"detail,omitempty"`
}

// event is one SSE event ready to write.
type event struct {
	typ  string
	data []byte
}

func newEvent(typ string, v any) (event, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return event{}, err
	}
	return event{typ: typ, data: b}, nil
}

// subscriber is one open browser stream of one channel.
type subscriber struct {
	channel string
	client  string
	ch      chan event
	gone    chan struct{} // closed when the hub drops the subscriber
	once    sync.Once
}

func (s *subscriber) drop() { s.once.Do(func() { close(s.gone) }) }

// backlog is the recent complete messages of one channel, oldest first.
type backlog struct {
	msgs []event
	used uint64 // last-use tick, for eviction
}

// hub fans events out to the browser streams of each channel. It starts no
// goroutines; publishing never blocks: a subscriber whose buffer is full is
// dropped. Safe for concurrent use.
type hub struct {
	clientBuf    int
	maxClients   int
	maxPerChan   int
	maxPerClient int
	backlogLen   int
	maxBacklogs  int
	// noBacklog: the durable history replays messages, the hub keeps none.
	noBacklog bool

	mu       sync.Mutex
	closed   bool
	subs     map[string]map[*subscriber]struct{}
	nsubs    int
	byClient map[string]int // open streams per client address
	backlogs map[string]*backlog
	tick     uint64
}

func newHub(clientBuf, maxClients, backlogLen, maxBacklogs int) *hub {
	return &hub{
		clientBuf:    orDefault(clientBuf, DefaultClientBuffer),
		maxClients:   orDefault(maxClients, DefaultMaxClients),
		maxPerChan:   DefaultMaxStreamsPerChannel,
		maxPerClient: DefaultMaxStreamsPerClient,
		byClient:     make(map[string]int),
		backlogLen:   orDefault(backlogLen, DefaultBacklog),
		maxBacklogs:  orDefault(maxBacklogs, DefaultMaxBacklogChannels),
		subs:         make(map[string]map[*subscriber]struct{}),
		backlogs:     make(map[string]*backlog),
	}
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// subscribe opens a stream of channel for client (an address); the
// backlog is queued first.
func (h *hub) subscribe(channel, client string) (*subscriber, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errors.New("webchat: event hub closed")
	}
	if h.nsubs >= h.maxClients || len(h.subs[channel]) >= h.maxPerChan || h.byClient[client] >= h.maxPerClient {
		return nil, errTooManyClients
	}
	s := &subscriber{channel: channel, client: client, ch: make(chan event, h.clientBuf+h.backlogLen), gone: make(chan struct{})}
	if b, ok := h.backlogs[channel]; ok {
		for _, ev := range b.msgs {
			s.ch <- ev
		}
	}
	m := h.subs[channel]
	if m == nil {
		m = make(map[*subscriber]struct{})
		h.subs[channel] = m
	}
	m[s] = struct{}{}
	h.nsubs++
	h.byClient[client]++
	return s, nil
}

// unsubscribe removes s; safe to call after the hub dropped it.
func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.removeLocked(s)
}

func (h *hub) removeLocked(s *subscriber) {
	m := h.subs[s.channel]
	if _, ok := m[s]; !ok {
		return
	}
	delete(m, s)
	if len(m) == 0 {
		delete(h.subs, s.channel)
	}
	h.nsubs--
	if h.byClient[s.client]--; h.byClient[s.client] <= 0 {
		delete(h.byClient, s.client)
	}
	s.drop()
}

// publish sends ev to every stream of channel; complete messages are also
// kept in the channel's bounded backlog.
func (h *hub) publish(channel string, ev event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	if ev.typ == EventMessage && !h.noBacklog {
		h.rememberLocked(channel, ev)
	}
	for s := range h.subs[channel] {
		select {
		case s.ch <- ev:
		default:
			h.removeLocked(s) // too slow: drop it, the browser reconnects
		}
	}
}

func (h *hub) rememberLocked(channel string, ev event) {
	h.tick++
	b, ok := h.backlogs[channel]
	if !ok {
		if len(h.backlogs) >= h.maxBacklogs {
			h.evictLocked()
		}
		b = &backlog{}
		h.backlogs[channel] = b
	}
	b.used = h.tick
	b.msgs = append(b.msgs, ev)
	if n := len(b.msgs) - h.backlogLen; n > 0 {
		b.msgs = append(b.msgs[:0], b.msgs[n:]...)
	}
}

// evictLocked drops the least recently used backlog (a linear scan: the map
// is bounded and eviction happens only at the bound).
func (h *hub) evictLocked() {
	var victim string
	var oldest uint64
	first := true
	for k, b := range h.backlogs {
		if first || b.used < oldest {
			victim, oldest, first = k, b.used, false
		}
	}
	delete(h.backlogs, victim)
}

// forget drops the backlog of channel and disconnects its streams (used
// when a channel is closed or deleted).
func (h *hub) forget(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.backlogs, channel)
	for s := range h.subs[channel] {
		h.removeLocked(s)
	}
}

// clients reports the number of open streams of channel.
func (h *hub) clients(channel string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs[channel])
}

// close drops every stream and refuses new ones, so that SSE handlers
// return before the HTTP server shuts down.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, m := range h.subs {
		for s := range m {
			h.removeLocked(s)
		}
	}
}
