package slacktest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/coder/websocket"
)

// appState is an app's tokens and its Socket Mode side.
type appState struct {
	App
	appRevoked, botRevoked bool
	tickets                map[string]bool
	conns                  map[*sockConn]struct{}
	maxConns               int
	opened                 int
	pending                []*envelope // sent or waiting, not acked, oldest first
	deliveries, acks       int
	dropped                int
}

// envelope is one events_api envelope of an app.
type envelope struct {
	id          string
	payload     json.RawMessage
	attempts    int       // sends so far
	on          *sockConn // the connection it was last sent on, nil when waiting
	sentAt      time.Time
	retryReason string
}

// frame is one message the writer of a connection sends; closeAfter > 0
// closes the connection that long after it (a disconnect's grace).
type frame struct {
	data       []byte
	closeAfter time.Duration
}

// sockConn is one Socket Mode connection.
type sockConn struct {
	app  *appState
	out  chan frame
	done chan struct{}
}

func (c *sockConn) close() {
	select {
	case <-c.done:
	default:
		close(c.done)
	}
}

func (c *sockConn) live() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// enqueue adds an event for the app and sends it when a connection is open.
// Without one, the event is dropped unless KeepWhileDisconnected.
func (a *appState) enqueue(s *Server, payload json.RawMessage) {
	if len(a.liveConns()) == 0 && !s.opts.KeepWhileDisconnected {
		a.dropped++
		return
	}
	if len(a.pending) >= MaxPending {
		a.pending = a.pending[1:]
		a.dropped++
	}
	s.nextID++
	a.pending = append(a.pending, &envelope{id: fmt.Sprintf("%08x-fake-%04d-env", s.nextID, s.nextID%10000), payload: payload})
	s.pump(a)
}

func (a *appState) liveConns() []*sockConn {
	var l []*sockConn
	for c := range a.conns {
		if c.live() {
			l = append(l, c)
		}
	}
	return l
}

// pump sends every waiting envelope on a live connection (the first with
// room in its queue).
func (s *Server) pump(a *appState) {
	conns := a.liveConns()
	if len(conns) == 0 {
		return
	}
	for i, e := range a.pending {
		if e.on != nil {
			continue
		}
		raw, _ := json.Marshal(map[string]any{"envelope_id": e.id, "payload": e.payload, "type": "events_api",
			"accepts_response_payload": false, "retry_attempt": e.attempts, "retry_reason": e.retryReason})
		c := conns[i%len(conns)]
		select {
		case c.out <- frame{data: raw}:
			e.on, e.sentAt = c, time.Now()
			e.attempts++
			a.deliveries++
		default:
			return // full: the next pump sends it
		}
	}
}

// retryLoop sends again the envelopes not acked within AckTimeout.
func (s *Server) retryLoop() {
	defer s.sockets.Done()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.closed:
			return
		case now := <-t.C:
			s.mu.Lock()
			for _, a := range s.apps {
				kept := a.pending[:0]
				for _, e := range a.pending {
					if e.on != nil && (!e.on.live() || now.Sub(e.sentAt) > s.opts.AckTimeout) {
						e.on, e.retryReason = nil, "timeout"
						if e.attempts > MaxRetries {
							a.dropped++
							continue
						}
					}
					kept = append(kept, e)
				}
				a.pending = kept
				s.pump(a)
			}
			s.mu.Unlock()
		}
	}
}

// eventPayload is the event_callback of message m as event type typ
// (message or app_mention) for app a.
func (s *Server) eventPayload(a *appState, c *Conversation, m *Message, typ string) json.RawMessage {
	ev := s.messageJSON(m)
	ev["type"], ev["channel"], ev["event_ts"] = typ, c.ID, m.TS
	if typ == "message" {
		ev["channel_type"] = c.channelType()
	} else {
		delete(ev, "subtype")
	}
	if m.BotID != "" {
		ev["bot_profile"] = map[string]any{"id": m.BotID, "app_id": a.AppID, "name": a.BotName}
	}
	s.nextID++
	raw, _ := json.Marshal(map[string]any{"token": "fake-verification", "team_id": a.TeamID, "api_app_id": a.AppID,
		"event": ev, "type": "event_callback", "event_id": fmt.Sprintf("Ev%08d", s.nextID), "event_time": time.Now().Unix(),
		"authorizations":        []any{map[string]any{"team_id": a.TeamID, "user_id": a.BotUserID, "is_bot": true, "is_enterprise_install": false}},
		"is_ext_shared_channel": false})
	return raw
}

// botPosted sends the message event of a message a bot posted, as Slack
// does to every app subscribed to the conversation's messages.
func (s *Server) botPosted(m *Message) {
	c := s.convs[m.Channel]
	for _, a := range s.apps {
		if c != nil && !c.NotMember {
			a.enqueue(s, s.eventPayload(a, c, m, "message"))
		}
	}
}

// serveSocket accepts a Socket Mode connection for a ticket that
// apps.connections.open issued (each ticket once).
func (s *Server) serveSocket(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	var a *appState
	for _, x := range s.apps {
		if x.tickets[ticket] {
			a = x
		}
	}
	if a == nil || a.appRevoked {
		s.mu.Unlock()
		http.Error(w, "invalid ticket", http.StatusUnauthorized)
		return
	}
	delete(a.tickets, ticket)
	s.mu.Unlock()
	// slack-go, like Slack's SDKs, sends Origin: https://api.slack.com.
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: []string{"api.slack.com"}})
	if err != nil {
		return
	}
	ws.SetReadLimit(1 << 20)
	c := &sockConn{app: a, out: make(chan frame, 64), done: make(chan struct{})}
	s.mu.Lock()
	select {
	case <-s.closed:
		s.mu.Unlock()
		ws.CloseNow()
		return
	default:
	}
	s.sockets.Add(1)
	a.conns[c] = struct{}{}
	a.opened++
	a.maxConns = max(a.maxConns, len(a.liveConns()))
	hello, _ := json.Marshal(map[string]any{"type": "hello", "num_connections": len(a.liveConns()),
		"debug_info":      map[string]any{"host": "applink-fake", "build_number": 1, "approximate_connection_time": 18060},
		"connection_info": map[string]any{"app_id": a.AppID}})
	c.out <- frame{data: hello}
	s.pump(a)
	s.notify()
	s.mu.Unlock()
	defer s.sockets.Done()
	s.runSocket(a, c, ws)
}

// runSocket writes the connection's frames and pings until it closes; a
// reader goroutine takes the acks.
func (s *Server) runSocket(a *appState, c *sockConn, ws *websocket.Conn) {
	ctx, cancel := context.WithCancel(context.Background())
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer c.close()
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				return
			}
			var ack struct {
				EnvelopeID string `json:"envelope_id"`
			}
			if json.Unmarshal(data, &ack) != nil || ack.EnvelopeID == "" {
				continue
			}
			s.mu.Lock()
			for i, e := range a.pending {
				if e.id == ack.EnvelopeID {
					a.pending = append(a.pending[:i], a.pending[i+1:]...)
					a.acks++
					break
				}
			}
			s.notify()
			s.mu.Unlock()
		}
	}()
	defer func() {
		c.close()
		cancel()
		ws.CloseNow()
		<-readDone
		s.mu.Lock()
		delete(a.conns, c)
		for _, e := range a.pending {
			if e.on == c {
				e.on, e.retryReason = nil, "timeout"
			}
		}
		s.pump(a)
		s.notify()
		s.mu.Unlock()
	}()
	ping := time.NewTicker(s.opts.PingInterval)
	defer ping.Stop()
	var closing <-chan time.Time
	for {
		select {
		case <-c.done:
			return
		case <-s.closed:
			return
		case <-closing:
			_ = ws.Close(websocket.StatusNormalClosure, "refresh")
			return
		case f := <-c.out:
			wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
			err := ws.Write(wctx, websocket.MessageText, f.data)
			wcancel()
			if err != nil {
				return
			}
			if f.closeAfter > 0 && closing == nil {
				t := time.NewTimer(f.closeAfter)
				defer t.Stop()
				closing = t.C
			}
		case <-ping.C:
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			err := ws.Ping(pctx)
			pcancel()
			if err != nil {
				return
			}
		}
	}
}

// Disconnect sends every connection of app token the disconnect message
// Slack sends before it refreshes a connection (reason
// "refresh_requested"), and closes each grace later if the app has not.
func (s *Server) Disconnect(appToken string, grace time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.apps[appToken]
	if a == nil {
		return
	}
	raw, _ := json.Marshal(map[string]any{"type": "disconnect", "reason": "refresh_requested",
		"debug_info": map[string]any{"host": "applink-fake"}})
	for _, c := range a.liveConns() {
		select {
		case c.out <- frame{data: raw, closeAfter: max(grace, time.Millisecond)}:
		default:
			c.close()
		}
	}
}

// Drop cuts every connection of app token without a close handshake, as a
// network failure does.
func (s *Server) Drop(appToken string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.apps[appToken]; a != nil {
		for c := range a.conns {
			c.close()
		}
	}
}

// SocketStats are an app's Socket Mode counters.
type SocketStats struct {
	// Connections is the number open now; MaxConnections the most open at
	// once; Opened how many were ever opened.
	Connections, MaxConnections, Opened int
	// Pending is the envelopes not acked yet; Deliveries counts every
	// send (retries included); Acks the acks received; Dropped the events
	// not delivered (no connection, or out of retries).
	Pending, Deliveries, Acks, Dropped int
}

// Stats returns app token's Socket Mode counters.
func (s *Server) Stats(appToken string) SocketStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.apps[appToken]
	if a == nil {
		return SocketStats{}
	}
	return SocketStats{Connections: len(a.liveConns()), MaxConnections: a.maxConns, Opened: a.opened,
		Pending: len(a.pending), Deliveries: a.deliveries, Acks: a.acks, Dropped: a.dropped}
}

// WaitStats waits until cond holds for app token's counters.
func (s *Server) WaitStats(ctx context.Context, appToken string, cond func(SocketStats) bool) (SocketStats, error) {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		st := s.Stats(appToken)
		if cond(st) {
			return st, nil
		}
		select {
		case <-ch:
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return st, fmt.Errorf("slacktest: %w", ctx.Err())
		}
	}
}
