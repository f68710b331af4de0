package xagent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/xconn/xconn/protocol"
)

// conn is one data-plane connection from the xAgent. Its handler goroutine
// reads; writes are serialised by wmu (the script writes too).
type conn struct {
	s         *Server
	n         int
	ws        *websocket.Conn
	wmu       sync.Mutex
	helloDone bool
	// profiles are the hello's supported_profiles intersected with the
	// Card's: what the channels of this connection enable. Guarded by
	// Server.mu.
	profiles []protocol.Profile
	open     map[string]bool
	// closing is set when the script closes the connection: a chat.message
	// still read from it then gets no ack (it would be recorded but never
	// delivered).
	closing atomic.Bool
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	has, ok := s.key(r)
	offered := false
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, item := range strings.Split(v, ",") {
			offered = offered || strings.TrimSpace(item) == protocol.Subprotocol
		}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "closed", http.StatusServiceUnavailable)
		return
	}
	if len(s.conns) >= maxConns {
		s.mu.Unlock()
		http.Error(w, "too many connections", http.StatusServiceUnavailable)
		return
	}
	s.wg.Add(1)
	s.connSeq++
	n := s.connSeq
	s.mu.Unlock()
	defer s.wg.Done()
	s.record(event{kind: "handshake", conn: n, method: r.Method, path: r.URL.Path, hasKey: has, keyOK: ok, subprotocol: offered})
	opts := &websocket.AcceptOptions{}
	if offered {
		opts.Subprotocols = []string{protocol.Subprotocol}
	}
	ws, err := websocket.Accept(w, r, opts)
	if err != nil {
		return
	}
	defer ws.CloseNow()
	ws.SetReadLimit(maxFrame)
	c := &conn{s: s, n: n, ws: ws, open: map[string]bool{}}
	s.mu.Lock()
	s.conns[n] = c
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, n)
		s.mu.Unlock()
		s.record(event{kind: "closed", conn: n})
	}()
	for {
		typ, data, err := ws.Read(s.ctx)
		if err != nil {
			return
		}
		env, derr := protocol.DecodeEnvelope(data)
		if typ != websocket.MessageText || derr != nil {
			s.record(event{kind: "frame", conn: n, raw: data})
			continue
		}
		s.record(event{kind: "packet", conn: n, env: env, raw: data})
		c.handle(env)
	}
}

// send writes env with a fresh packet_id and records it.
func (c *conn) send(env *protocol.Envelope) {
	env.Schema = protocol.PacketSchema
	if env.PacketID == "" {
		env.PacketID = c.s.next("pkt_xc_")
	}
	env.Time = time.Now().UnixMilli()
	data, err := env.Encode()
	if err != nil {
		return
	}
	// Recorded under the write lock, before the write: a packet is in
	// the log before anything answering it, and the script, having seen
	// it, can wait for the write to end (closeConn).
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.s.record(event{kind: "packet", conn: c.n, out: true, env: env, raw: data})
	ctx, cancel := context.WithTimeout(c.s.ctx, 5*time.Second)
	defer cancel()
	_ = c.ws.Write(ctx, websocket.MessageText, data) // a failed write ends the read loop too
}

func (c *conn) reply(req *protocol.Envelope, typ string, p any) {
	e := req.Reply(typ)
	if p != nil {
		_ = e.SetPayload(p)
	}
	c.send(e)
}

func (c *conn) fail(req *protocol.Envelope, typ string, code protocol.Code, msg string) {
	e := req.Reply(typ)
	e.Error = &protocol.ErrorBody{Code: string(code), Message: msg}
	c.send(e)
}

func (c *conn) handle(e *protocol.Envelope) {
	s := c.s
	switch e.Type {
	case protocol.TypeHello:
		c.hello(e)
		return
	case protocol.TypePing:
		c.reply(e, protocol.TypePong, protocol.EmptyPayload{})
		return
	case protocol.TypeChatMessageAck, protocol.TypeChatMessageDelta, protocol.TypeChatActivity, protocol.TypePong, protocol.TypeError:
		return // recorded; judged at the end
	}
	if !c.helloDone {
		c.fail(e, protocol.TypeError, protocol.CodeHelloRequired, "connector.hello must come first")
		return
	}
	if e.Type == protocol.TypeChannelOpen {
		c.channelOpen(e)
		return
	}
	s.mu.Lock()
	ch := s.chans[e.ConnectorChannelID]
	s.mu.Unlock()
	if ch == nil || !c.open[e.ConnectorChannelID] {
		c.fail(e, protocol.TypeError, protocol.CodeChannelNotOpen, "channel is not open on this connection")
		return
	}
	switch e.Type {
	case protocol.TypeChannelClose:
		delete(c.open, ch.id)
		c.reply(e, protocol.TypeChannelCloseAck, protocol.StatusPayload{Status: "ok"})
	case protocol.TypeDescriptorGet:
		c.reply(e, protocol.TypeDescriptorGetAck, protocol.DescriptorPayload{ConnectionDescriptor: c.descriptor(ch)})
	case protocol.TypeAuthStart, protocol.TypeAuthStatus, protocol.TypeAuthCancel, protocol.TypeAuthLogout:
		c.auth(e, ch)
	case protocol.TypeToolInvoke:
		c.tool(e, ch)
	case protocol.TypeChatMessage:
		c.final(e)
	default:
		c.fail(e, protocol.TypeError, protocol.CodeUnsupportedPacket, "unsupported packet "+e.Type)
	}
}

func (c *conn) hello(e *protocol.Envelope) {
	var p protocol.HelloPayload
	if e.DecodePayload(&p) != nil || p.ConnectorCardID != CardID {
		c.fail(e, protocol.TypeError, protocol.CodeConnectorCardIDMismatch, "connector_card_id mismatch")
		return
	}
	s := c.s
	s.mu.Lock()
	id := s.lastID
	if id == "" || s.replaceID {
		s.seq++
		id = fmt.Sprintf("conn_xc_%d", s.seq)
		s.lastID, s.replaceID = id, false
	}
	s.mu.Unlock()
	c.helloDone = true
	var profiles []protocol.Profile
	for _, pr := range s.card.Supports.Profiles {
		if slices.Contains(p.SupportedProfiles, pr) {
			profiles = append(profiles, pr)
		}
	}
	if len(profiles) == 0 {
		profiles = []protocol.Profile{protocol.ProfileIMv2} // judged by xagent.hello-fields
	}
	s.mu.Lock()
	c.profiles = profiles
	s.mu.Unlock()
	c.reply(e, protocol.TypeHelloAck, protocol.HelloAckPayload{ConnectorCardID: CardID, ConnectorID: id, ProtocolVersion: protocol.ProtocolVersion})
}

func (c *conn) channelOpen(e *protocol.Envelope) {
	s := c.s
	s.mu.Lock()
	ch := s.chans[e.ConnectorChannelID]
	if ch == nil {
		s.seq++
		ch = &channel{id: fmt.Sprintf("cch_xc_%d", s.seq)}
		s.chans[ch.id] = ch
	}
	s.mu.Unlock()
	c.open[ch.id] = true
	out := e.Reply(protocol.TypeChannelOpenAck)
	out.ConnectorChannelID = ch.id
	_ = out.SetPayload(protocol.ChannelOpenAckPayload{ConnectorChannelID: ch.id, ConnectionDescriptor: c.descriptor(ch)})
	c.send(out)
}

// descriptor returns the Descriptor of ch now.
func (c *conn) descriptor(ch *channel) *protocol.Descriptor {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	d := &protocol.Descriptor{Schema: protocol.DescriptorSchema,
		Connection: protocol.Connection{ConnectorCardID: CardID, ConnectorID: s.lastID, ConnectorChannelID: ch.id,
			TargetType: protocol.TargetIM, Profiles: slices.Clone(c.profiles), Status: protocol.StatusCreated},
		Target: protocol.DescriptorTarget{Provider: "xagent-check", Label: "xAgent check", DisplayName: "xAgent check (not signed in)"}}
	st := protocol.ToolState{ToolID: ToolID, Status: protocol.ToolRequiresReauth, TargetPermissionState: protocol.PermissionRequiresReauth}
	if ch.authed {
		d.Connection.Status = protocol.StatusConnected
		d.Target.DisplayName, d.Target.AccountHint = "xAgent check", "check"
		st.Status, st.TargetPermissionState = protocol.ToolAvailable, protocol.PermissionGranted
	}
	d.Tools = []protocol.ToolState{st}
	return d
}

func (c *conn) auth(e *protocol.Envelope, ch *channel) {
	s := c.s
	switch e.Type {
	case protocol.TypeAuthStart:
		var p protocol.AuthStartPayload
		_ = e.DecodePayload(&p)
		switch p.FlowID {
		case FormFlow:
			if p.Input["code"] == "" {
				c.fail(e, protocol.TypeAuthStartAck, protocol.CodeInvalidAuthInput, "code is required")
				return
			}
			s.mu.Lock()
			ch.authed = true
			s.mu.Unlock()
			c.reply(e, protocol.TypeAuthStartAck, protocol.AuthStatePayload{ConnectorChannelID: ch.id, FlowID: FormFlow,
				AuthSessionID: s.next("auth_xc_"), Status: protocol.AuthAuthenticated, ConnectionDescriptor: c.descriptor(ch)})
		case QRFlow:
			id := s.next("auth_xc_")
			s.mu.Lock()
			s.auths[id] = &authSession{id: id, channel: ch.id, flow: QRFlow, lastStatus: protocol.AuthPending}
			s.mu.Unlock()
			c.reply(e, protocol.TypeAuthStartAck, protocol.AuthStatePayload{ConnectorChannelID: ch.id, FlowID: QRFlow, AuthSessionID: id,
				Status: protocol.AuthPending, QRCodeText: "xconn-check:qr:" + id, PollIntervalMillis: QRPollInterval.Milliseconds()})
		default:
			c.fail(e, protocol.TypeAuthStartAck, protocol.CodeAuthFlowNotFound, "unknown auth flow")
		}
	case protocol.TypeAuthStatus:
		var p protocol.AuthStatusPayload
		_ = e.DecodePayload(&p)
		s.mu.Lock()
		a := s.auths[p.AuthSessionID]
		if a == nil || a.channel != ch.id || a.canceled {
			s.mu.Unlock()
			c.fail(e, protocol.TypeAuthStatusAck, protocol.CodeAuthSessionNotFound, "auth session not found")
			return
		}
		a.polls++
		st := protocol.AuthStatePayload{ConnectorChannelID: ch.id, FlowID: QRFlow, AuthSessionID: a.id, Status: protocol.AuthPending,
			PollIntervalMillis: QRPollInterval.Milliseconds()}
		switch {
		case p.Refresh:
			a.refreshed = true
			st.QRCodeText = fmt.Sprintf("xconn-check:qr:%s:%d", a.id, a.polls)
		case a.refreshed:
			ch.authed = true
			st.Status = protocol.AuthAuthenticated
		case a.polls >= 2:
			st.Status = protocol.AuthQRRefreshRequired
		}
		a.lastStatus = st.Status
		s.mu.Unlock()
		if st.Status == protocol.AuthAuthenticated {
			st.ConnectionDescriptor = c.descriptor(ch)
		}
		c.reply(e, protocol.TypeAuthStatusAck, st)
	case protocol.TypeAuthCancel:
		var p protocol.AuthCancelPayload
		_ = e.DecodePayload(&p)
		s.mu.Lock()
		a := s.auths[p.AuthSessionID]
		status := protocol.CancelNotFound
		if a != nil && a.channel == ch.id {
			a.canceled, status = true, protocol.CancelCanceled
		}
		s.mu.Unlock()
		c.reply(e, protocol.TypeAuthCancelAck, protocol.AuthCancelAckPayload{ConnectorChannelID: ch.id, AuthSessionID: p.AuthSessionID,
			Status: status, AuthStatus: protocol.AuthUnauthenticated})
	case protocol.TypeAuthLogout:
		s.mu.Lock()
		ch.authed = false
		s.mu.Unlock()
		c.reply(e, protocol.TypeAuthLogoutAck, protocol.AuthLogoutAckPayload{Status: "ok", ConnectionDescriptor: c.descriptor(ch)})
	}
}

func (c *conn) tool(e *protocol.Envelope, ch *channel) {
	var p protocol.ToolInvokePayload
	if e.DecodePayload(&p) != nil || p.ToolID != ToolID {
		c.fail(e, protocol.TypeToolInvokeAck, protocol.CodeUnknownTool, "unknown tool")
		return
	}
	c.s.mu.Lock()
	authed := ch.authed
	c.s.mu.Unlock()
	if !authed {
		c.fail(e, protocol.TypeToolInvokeAck, protocol.CodeConnectionNotAuthenticated, "sign in first")
		return
	}
	var args struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(p.Arguments, &args)
	res, _ := json.Marshal(map[string]string{"echo": args.Text})
	c.reply(e, protocol.TypeToolInvokeAck, protocol.ToolInvokeAckPayload{ToolID: ToolID, Result: res})
}

// final acknowledges a chat.message from xAgent as the script says:
// accepted by default, no ack while finals are held, rejected as
// retryable once when asked.
func (c *conn) final(e *protocol.Envelope) {
	var p protocol.ChatMessagePayload
	_ = e.DecodePayload(&p)
	s := c.s
	s.mu.Lock()
	hold, reject := s.holdFinals, s.rejectNext
	if reject {
		s.rejectNext = false
	}
	s.mu.Unlock()
	ack := protocol.ChatAckPayload{MessageID: p.MessageID, Status: protocol.AckAccepted}
	switch {
	case hold || c.closing.Load():
		return
	case reject:
		ack = protocol.ChatAckPayload{MessageID: p.MessageID, Status: protocol.AckRejected, Code: "target_busy", Message: "scripted retryable rejection", Retryable: new(true)}
	}
	out := e.Reply(protocol.TypeChatMessageAck) // request_id returned when the final had one (section 7)
	_ = out.SetPayload(ack)
	c.send(out)
}

// push sends a chat.message from the "target" on ch over connection n.
func (s *Server) push(n int, ch string, m protocol.ChatMessagePayload) (*protocol.Envelope, bool) {
	return s.sendPacket(n, ch, protocol.TypeChatMessage, m)
}

// sendPacket sends a packet of type typ with payload p on ch over
// connection n.
func (s *Server) sendPacket(n int, ch, typ string, p any) (*protocol.Envelope, bool) {
	s.mu.Lock()
	c := s.conns[n]
	s.mu.Unlock()
	if c == nil {
		return nil, false
	}
	e := &protocol.Envelope{ConnectorChannelID: ch, Type: typ}
	_ = e.SetPayload(p)
	c.send(e)
	return e, true
}

// negotiated reports whether connection n enabled profile.
func (s *Server) negotiated(n int, profile protocol.Profile) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conns[n]
	return c != nil && slices.Contains(c.profiles, profile)
}
