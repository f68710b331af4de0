package discordtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/coder/websocket"
)

// Gateway opcodes (https://discord.com/developers/docs/topics/opcodes-and-status-codes#gateway-gateway-opcodes).
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opResume         = 6
	opReconnect      = 7
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatAck   = 11
)

// Gateway close codes the fake uses.
const (
	CloseUnknownError         = 4000
	CloseDecodeError          = 4002
	CloseNotAuthenticated     = 4003
	CloseAuthenticationFailed = 4004
	CloseAlreadyAuthenticated = 4005
	CloseDisallowedIntents    = 4014
)

// maxFrameBytes bounds a frame the fake reads.
const maxFrameBytes = 64 << 10

// outQueue bounds the frames waiting to be written on one connection.
const outQueue = 4096

// frame is a Gateway payload.
type frame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d,omitempty"`
	S  *int64          `json:"s,omitempty"`
	T  string          `json:"t,omitempty"`
}

// gwSession is a Gateway session: what a RESUME continues.
type gwSession struct {
	id      string
	token   string
	intents int
	seq     int64
	events  []frame // the last MaxEvents dispatches
	conn    *gwConn // the connection it is on, nil while disconnected
}

// dispatch sends (and keeps) a DISPATCH of type t. s.mu is held.
func (se *gwSession) dispatch(t string, d any) {
	raw, err := json.Marshal(d)
	if err != nil {
		panic(err) // the fake's own maps
	}
	se.seq++
	seq := se.seq
	f := frame{Op: opDispatch, D: raw, S: &seq, T: t}
	se.events = append(se.events, f)
	if len(se.events) > MaxEvents {
		se.events = slices.Delete(se.events, 0, len(se.events)-MaxEvents)
	}
	if se.conn != nil {
		se.conn.send(f)
	}
}

// gwConn is one Gateway WebSocket connection.
type gwConn struct {
	ws   *websocket.Conn
	out  chan frame
	stop chan struct{}
	once sync.Once
	// Guarded by Server.mu.
	sess *gwSession
	code websocket.StatusCode
	why  string
}

func (c *gwConn) token() string {
	if c.sess == nil {
		return ""
	}
	return c.sess.token
}

func (c *gwConn) ready() bool { return c.sess != nil }

// send queues f; a connection that cannot keep up is closed.
func (c *gwConn) send(f frame) {
	select {
	case c.out <- f:
	default:
		c.ws.CloseNow()
	}
}

// close makes the writer close the connection with code.
func (c *gwConn) close(code websocket.StatusCode, why string) {
	c.once.Do(func() {
		c.code, c.why = code, why
		close(c.stop)
	})
}

// serveGateway serves one Gateway connection: HELLO, then IDENTIFY or
// RESUME, heartbeats, and the dispatches of its session.
func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	ws.SetReadLimit(maxFrameBytes)
	c := &gwConn{ws: ws, out: make(chan frame, outQueue), stop: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ws.Close(websocket.StatusGoingAway, "server closing")
		return
	}
	s.conns[c] = struct{}{}
	hb := s.heartbeat
	s.wg.Add(1)
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(r.Context())
	writerDone := make(chan struct{})
	go func() {
		defer s.wg.Done()
		defer close(writerDone)
		s.writer(ctx, c)
	}()
	defer func() {
		cancel()
		c.close(websocket.StatusNormalClosure, "")
		<-writerDone
		s.mu.Lock()
		delete(s.conns, c)
		if c.sess != nil && c.sess.conn == c {
			c.sess.conn = nil
		}
		s.mu.Unlock()
	}()
	c.send(frame{Op: opHello, D: mustJSON(map[string]any{"heartbeat_interval": hb.Milliseconds()})})
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			return
		}
		var f frame
		if json.Unmarshal(data, &f) != nil {
			c.close(CloseDecodeError, "Error while decoding payload.")
			return
		}
		if !s.handle(c, f) {
			return
		}
	}
}

// writer writes c's queued frames until it is told to close.
func (s *Server) writer(ctx context.Context, c *gwConn) {
	for {
		select {
		case f := <-c.out:
			data, _ := json.Marshal(f)
			if c.ws.Write(ctx, websocket.MessageText, data) != nil {
				c.ws.CloseNow()
				return
			}
		case <-c.stop:
			// Flush what is queued (a replay before a close), then close.
			for len(c.out) > 0 {
				data, _ := json.Marshal(<-c.out)
				if c.ws.Write(ctx, websocket.MessageText, data) != nil {
					break
				}
			}
			s.mu.Lock()
			code, why := c.code, c.why
			s.mu.Unlock()
			c.ws.Close(code, why)
			return
		case <-ctx.Done():
			c.ws.CloseNow()
			return
		}
	}
}

func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}

type identifyData struct {
	Token   string `json:"token"`
	Intents int    `json:"intents"`
}

type resumeData struct {
	Token     string `json:"token"`
	SessionID string `json:"session_id"`
	Seq       int64  `json:"seq"`
}

// handle answers one client payload; false ends the connection.
func (s *Server) handle(c *gwConn, f frame) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch f.Op {
	case opHeartbeat:
		c.send(frame{Op: opHeartbeatAck})
	case opIdentify:
		var d identifyData
		if json.Unmarshal(f.D, &d) != nil {
			c.close(CloseDecodeError, "Error while decoding payload.")
			return false
		}
		if c.sess != nil {
			c.close(CloseAlreadyAuthenticated, "Already authenticated.")
			return false
		}
		token, _ := strings.CutPrefix(d.Token, "Bot ")
		b := s.bots[token]
		if b == nil || b.revoked {
			c.close(CloseAuthenticationFailed, "Authentication failed.")
			return false
		}
		b.identify++
		if d.Intents&IntentMessageContent != 0 && !b.MessageContent {
			c.close(CloseDisallowedIntents, "Disallowed intent(s).")
			return false
		}
		s.sessSeq++
		se := &gwSession{id: fmt.Sprintf("session-%d-%s", s.sessSeq, b.ID), token: token, intents: d.Intents, conn: c}
		s.sessions[se.id] = se
		c.sess = se
		se.dispatch("READY", map[string]any{
			"v": 9, "session_id": se.id, "resume_gateway_url": s.GatewayURL(),
			"user":   map[string]any{"id": b.ID, "username": b.Username, "discriminator": "0", "bot": true},
			"guilds": []any{}, "application": map[string]any{"id": b.ID, "flags": 0},
		})
	case opResume:
		var d resumeData
		if json.Unmarshal(f.D, &d) != nil {
			c.close(CloseDecodeError, "Error while decoding payload.")
			return false
		}
		token, _ := strings.CutPrefix(d.Token, "Bot ")
		b := s.bots[token]
		if b == nil || b.revoked {
			c.close(CloseAuthenticationFailed, "Authentication failed.")
			return false
		}
		b.resumes++
		se := s.sessions[d.SessionID]
		if se == nil || se.token != token || (len(se.events) > 0 && d.Seq < se.events[0].seqNum()-1) || d.Seq > se.seq {
			c.send(frame{Op: opInvalidSession, D: json.RawMessage("false")})
			return true
		}
		if se.conn != nil && se.conn != c {
			se.conn.sess = nil
			se.conn.close(CloseUnknownError, "Session resumed elsewhere.")
		}
		se.conn, c.sess = c, se
		for _, e := range se.events {
			if e.seqNum() > d.Seq {
				c.send(e)
			}
		}
		se.dispatch("RESUMED", map[string]any{})
	default:
		if c.sess == nil {
			c.close(CloseNotAuthenticated, "Not authenticated.")
			return false
		}
	}
	return true
}

func (f frame) seqNum() int64 {
	if f.S == nil {
		return 0
	}
	return *f.S
}
