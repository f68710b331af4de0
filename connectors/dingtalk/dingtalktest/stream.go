package dingtalktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// The Stream protocol (open.dingtalk.com, Stream mode protocol): POST
// /v1.0/gateway/connections/open returns an endpoint and a ticket (valid
// 90 s, once); the client dials endpoint?ticket=...; the server pushes
// JSON data frames and the client answers each with a response frame.

// Topic and frame types of the Stream protocol.
const (
	TopicBotMessage = "/v1.0/im/bot/messages/get"
	TypeSystem      = "SYSTEM"
	TypeCallback    = "CALLBACK"
	TypeEvent       = "EVENT"
)

// Frame is a data frame the server pushes.
type Frame struct {
	SpecVersion string            `json:"specVersion"`
	Type        string            `json:"type"`
	Headers     map[string]string `json:"headers"`
	Data        string            `json:"data"`
}

// Response is the client's answer to a Frame.
type Response struct {
	Code    int               `json:"code"`
	Headers map[string]string `json:"headers"`
	Message string            `json:"message"`
	Data    string            `json:"data"`
}

// Subscription is one entry of the open request's subscriptions.
type Subscription struct {
	Type  string `json:"type"`
	Topic string `json:"topic"`
}

type streamConn struct {
	c        *websocket.Conn
	clientID string
	subs     []Subscription
	wmu      sync.Mutex
	mu       sync.Mutex
	acks     map[string]chan Response
	pongs    int
}

func (sc *streamConn) write(ctx context.Context, f Frame) error {
	b, _ := json.Marshal(f)
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	return sc.c.Write(ctx, websocket.MessageText, b)
}

func (sc *streamConn) subscribed(typ, topic string) bool {
	for _, s := range sc.subs {
		if s.Type == typ && (s.Topic == topic || (typ == TypeEvent && s.Topic == "*")) {
			return true
		}
	}
	return false
}

// open is POST /v1.0/gateway/connections/open.
func (s *Server) open(w http.ResponseWriter, r *http.Request) {
	s.count("open")
	if s.injected(w, r.URL.Path) {
		return
	}
	var in struct {
		ClientID      string         `json:"clientId"`
		ClientSecret  string         `json:"clientSecret"`
		Subscriptions []Subscription `json:"subscriptions"`
		UA            string         `json:"ua"`
		LocalIP       string         `json:"localIp"`
	}
	if err := decode(r, &in); err != nil || in.ClientID == "" || in.ClientSecret == "" || len(in.Subscriptions) == 0 {
		apiError(w, http.StatusBadRequest, "MissingParameter", "clientId, clientSecret and subscriptions are required")
		return
	}
	for _, sub := range in.Subscriptions {
		if sub.Type != TypeSystem && sub.Type != TypeCallback && sub.Type != TypeEvent {
			apiError(w, http.StatusBadRequest, "InvalidParameter", "unknown subscription type")
			return
		}
	}
	s.mu.Lock()
	a, ok := s.apps[in.ClientID]
	if !ok || a.ClientSecret != in.ClientSecret {
		s.mu.Unlock()
		apiError(w, http.StatusUnauthorized, "Unauthorized", "clientId or clientSecret is invalid")
		return
	}
	t := newID("tk")
	s.tickets[t] = ticket{clientID: in.ClientID, exp: time.Now().Add(TicketTTL)}
	s.remember(t)
	subs, _ := json.Marshal(in.Subscriptions)
	s.tickets[t+"#subs"] = ticket{clientID: string(subs)}
	s.mu.Unlock()
	ws := "ws" + strings.TrimPrefix(s.hs.URL, "http") + PathConnect
	writeJSON(w, http.StatusOK, map[string]string{"endpoint": ws, "ticket": t})
}

// serveStream is the Stream WebSocket of one client.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request) {
	s.count("connect")
	t := r.URL.Query().Get("ticket")
	s.mu.Lock()
	tk, ok := s.tickets[t]
	subsT := s.tickets[t+"#subs"]
	delete(s.tickets, t)
	delete(s.tickets, t+"#subs")
	ping, closing := s.ping, s.closing
	s.mu.Unlock()
	if !ok || time.Now().After(tk.exp) {
		apiError(w, http.StatusUnauthorized, "InvalidTicket", "ticket is invalid or expired")
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	c.SetReadLimit(1 << 20)
	sc := &streamConn{c: c, clientID: tk.clientID, acks: map[string]chan Response{}}
	_ = json.Unmarshal([]byte(subsT.clientID), &sc.subs)
	s.mu.Lock()
	s.conns[tk.clientID] = append(s.conns[tk.clientID], sc)
	close(s.connected)
	s.connected = make(chan struct{})
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		cs := s.conns[tk.clientID]
		for i, x := range cs {
			if x == sc {
				s.conns[tk.clientID] = append(cs[:i:i], cs[i+1:]...)
				break
			}
		}
		if len(s.conns[tk.clientID]) == 0 {
			delete(s.conns, tk.clientID)
		}
		s.mu.Unlock()
		c.CloseNow()
	}()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-closing:
			c.CloseNow()
		case <-ctx.Done():
		}
	}()
	if ping > 0 {
		go s.pinger(ctx, sc, ping)
	}
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		if typ != websocket.MessageText {
			continue
		}
		var resp Response
		if json.Unmarshal(data, &resp) != nil {
			continue
		}
		id := resp.Headers["messageId"]
		sc.mu.Lock()
		if ch := sc.acks[id]; ch != nil {
			ch <- resp
			delete(sc.acks, id)
		}
		sc.mu.Unlock()
	}
}

// pinger sends SYSTEM ping frames and counts the answers that echo the
// opaque.
func (s *Server) pinger(ctx context.Context, sc *streamConn, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		opaque := newID("op")
		data, _ := json.Marshal(map[string]string{"opaque": opaque})
		resp, err := s.push(ctx, sc, TypeSystem, "ping", string(data))
		if err != nil {
			return
		}
		var echo struct {
			Opaque string `json:"opaque"`
		}
		_ = json.Unmarshal([]byte(resp.Data), &echo)
		if resp.Code == http.StatusOK && echo.Opaque == opaque {
			sc.mu.Lock()
			sc.pongs++
			sc.mu.Unlock()
		}
	}
}

// push writes a frame and waits for its response.
func (s *Server) push(ctx context.Context, sc *streamConn, typ, topic, data string) (Response, error) {
	s.mu.Lock()
	s.seq++
	id := fmt.Sprintf("%08x_%d_%x", s.seq, 974, time.Now().UnixNano())
	s.mu.Unlock()
	ch := make(chan Response, 1)
	sc.mu.Lock()
	sc.acks[id] = ch
	sc.mu.Unlock()
	defer func() {
		sc.mu.Lock()
		delete(sc.acks, id)
		sc.mu.Unlock()
	}()
	f := Frame{SpecVersion: "1.0", Type: typ, Data: data, Headers: map[string]string{
		"appId": sc.clientID, "contentType": "application/json", "messageId": id,
		"time": strconv.FormatInt(time.Now().UnixMilli(), 10), "topic": topic}}
	if err := sc.write(ctx, f); err != nil {
		return Response{}, fmt.Errorf("dingtalktest: write frame: %w", err)
	}
	select {
	case resp := <-ch:
		return resp, nil
	case <-ctx.Done():
		return Response{}, fmt.Errorf("dingtalktest: no response to %s %s: %w", typ, topic, ctx.Err())
	}
}

// Pongs returns how many SYSTEM pings the client answered with their
// opaque, over its live connections.
func (s *Server) Pongs(clientID string) int {
	s.mu.Lock()
	cs := append([]*streamConn(nil), s.conns[clientID]...)
	s.mu.Unlock()
	n := 0
	for _, c := range cs {
		c.mu.Lock()
		n += c.pongs
		c.mu.Unlock()
	}
	return n
}

// latest returns the newest live connection of clientID subscribed to
// the bot message topic.
func (s *Server) latest(clientID string) *streamConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.conns[clientID]
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].subscribed(TypeCallback, TopicBotMessage) {
			return cs[i]
		}
	}
	return nil
}

// WaitConnected waits until clientID has a live Stream connection
// subscribed to bot messages.
func (s *Server) WaitConnected(ctx context.Context, clientID string) error {
	for {
		s.mu.Lock()
		ch := s.connected
		s.mu.Unlock()
		if s.latest(clientID) != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dingtalktest: app %s never connected: %w", clientID, ctx.Err())
		case <-ch:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Connected reports whether clientID has a live Stream connection.
func (s *Server) Connected(clientID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns[clientID]) > 0
}

// Drop closes every Stream connection of clientID at once, as a network
// failure would; it reports whether there was one.
func (s *Server) Drop(clientID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.conns[clientID]
	for _, c := range cs {
		c.c.CloseNow()
	}
	delete(s.conns, clientID) // gone at once, not when its handler notices
	return len(cs) > 0
}

// Disconnect sends SYSTEM disconnect on every Stream connection of
// clientID and closes them after the grace (SetDisconnectGrace), as
// DingTalk does to rebalance; it returns at once.
func (s *Server) Disconnect(clientID string) bool {
	s.mu.Lock()
	cs := append([]*streamConn(nil), s.conns[clientID]...)
	grace := s.grace
	s.mu.Unlock()
	data, _ := json.Marshal(map[string]string{"reason": "connection is expired"})
	for _, c := range cs {
		f := Frame{SpecVersion: "1.0", Type: TypeSystem, Data: string(data), Headers: map[string]string{
			"contentType": "application/json", "topic": "disconnect", "messageId": newID("dis"),
			"time": strconv.FormatInt(time.Now().UnixMilli(), 10)}}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = c.write(ctx, f)
		cancel()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			select {
			case <-time.After(grace):
			case <-s.closing:
			}
			c.c.CloseNow()
		}()
	}
	return len(cs) > 0
}

// ErrNotConnected is returned by Say when the app has no Stream
// connection: DingTalk would not keep the message for it.
var ErrNotConnected = errors.New("dingtalktest: the app has no Stream connection")
