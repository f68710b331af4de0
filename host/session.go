package host

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/internal/jsonbytes"
	"github.com/xconn/xconn/internal/timerpool"
	"github.com/xconn/xconn/internal/wsconn"
	"github.com/xconn/xconn/protocol"
)

// session is one data-plane socket of one connector after (or during)
// connector.hello: request/ack matching by request_id, chat.message.ack
// matching by reply_to, the dispatcher of pushes and the ordered per-channel
// workers. It owns its goroutines; close stops and waits for them.
type session struct {
	rt          *runtime
	conn        *wsconn.Conn
	connectorID string
	neg         *protocol.Negotiated

	ctx    context.Context // ends when the socket ends or the host stops
	cancel context.CancelFunc
	// detached is ctx without its cancellation, for the acks of a
	// stopping session.
	detached context.Context
	wg       sync.WaitGroup
	// work counts the per-channel chat workers: when ctx ends, the socket
	// stays open until the message each of them is handling is committed
	// and acknowledged (a graceful stop loses no ack; see dial).
	work sync.WaitGroup
	done chan struct{} // closed once every goroutine of the session stopped

	inbound chan *protocol.Envelope // bounded dispatch queue

	// seq orders, in arrival order on the socket, the Descriptor pushes
	// and the sign-in acks (the reader hands acks to their waiters at once
	// but queues pushes): a sign-in keeps a pushed Descriptor over its ack's
	// only when the push arrived after the ack. pushSeqs holds the number
	// of each queued push (at most InboundQueue entries); guarded by mu.
	seq      atomic.Uint64
	pushSeqs map[*protocol.Envelope]uint64

	idPrefix string         // random part of the ids of this socket's requests
	idSeq    atomic.Uint64  // numbers them
	timers   timerpool.Pool // stopped *time.Timer for request timeouts
	reqs     sync.Pool      // *pendingReq whose answer was received (see request)

	// catalogs are the channel catalogs of this session by Descriptor
	// profile list, shared by every route with that list (a catalog is
	// immutable and costs a few KiB; most channels of a connector have the
	// same profiles). At most maxSharedCatalogs are kept.
	catMu    sync.Mutex
	catalogs map[string]*protocol.Negotiated
	strs     map[string]string // interned Descriptor strings (see intern)

	mu       sync.Mutex
	closed   bool
	pending  map[string]*pendingReq             // by request_id; bounded by MaxInFlight
	chatAcks map[string]chan *protocol.Envelope // by packet_id of a sent chat.message
	routes   map[string]*route                  // open channels, by connector_channel_id
	opening  map[string]*openTok                // reopens in flight, by connector_channel_id (see beginOpen)
	workers  map[string]chan *protocol.Envelope // per-channel ordered queues
	// binds are the sign-in channels the connector reported authenticated
	// whose route is not bound to its record yet (see beginBind).
	binds map[string]chan struct{}
}

// closeGrace bounds what a stopping session still does: the commit and
// the ack of a chat message being handled, and the close handshake.
const closeGrace = 5 * time.Second

type pendingReq struct {
	typ      string
	channel  string
	toolID   string
	callID   string                  // tool.invoke: context.tool_call_id
	ch       chan *protocol.Envelope // capacity 1
	onAck    func(*protocol.Envelope)
	progress func(*protocol.ToolProgressPayload)
}

// dial opens the socket and starts its goroutines; hello is not sent yet.
func (rt *runtime) dial(ctx context.Context) (*session, error) {
	base, key, _ := rt.view()
	u := *base
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	default:
		u.Scheme = "ws"
	}
	header := http.Header{}
	if key != "" {
		header.Set("Authorization", "Bearer "+key)
	}
	dctx, cancel := context.WithTimeout(ctx, rt.h.opts.RequestTimeout)
	defer cancel()
	conn, err := wsconn.Dial(dctx, u.JoinPath(protocol.PathWS).String(), header, wsconn.Options{Logger: rt.h.log})
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", protocol.PathWS, redactURLError(err))
	}
	s := &session{rt: rt, conn: conn, done: make(chan struct{}),
		inbound:  make(chan *protocol.Envelope, rt.h.opts.InboundQueue),
		pending:  map[string]*pendingReq{},
		chatAcks: map[string]chan *protocol.Envelope{},
		routes:   map[string]*route{},
		pushSeqs: map[*protocol.Envelope]uint64{},
		workers:  map[string]chan *protocol.Envelope{},
		catalogs: map[string]*protocol.Negotiated{},
		idPrefix: newID(""),
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.detached = context.WithoutCancel(s.ctx)
	// The socket outlives s.ctx: when the host stops, the chat messages
	// being handled finish their commit and send their acks first, then
	// the socket is closed after its queue is flushed. Otherwise the
	// connector would never learn that a message it sent was taken, and
	// could expire it while the host was down although its reply went out.
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		defer s.cancel()
		_ = conn.Run(runCtx, s.onFrame)
	}()
	go func() {
		defer s.wg.Done()
		s.dispatch()
	}()
	go func() {
		<-s.ctx.Done()
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.work.Wait()
		_ = conn.Close(websocket.StatusGoingAway, "host stopping")
		t := time.AfterFunc(closeGrace, stopRun) // a peer that never answers the close
		s.wg.Wait()
		t.Stop()
		stopRun()
		close(s.done)
	}()
	return s, nil
}

// hello sends connector.hello and validates the ack (section 8.1, 8.2).
func (s *session) hello(ctx context.Context) error {
	rt := s.rt
	_, _, card := rt.view()
	rt.mu.Lock()
	prevID := rt.entry.ConnectorID
	rt.mu.Unlock()
	p := protocol.HelloPayload{ConnectorCardID: rt.cardID, ConnectorID: prevID,
		ProtocolVersion: protocol.ProtocolVersion, SupportedProfiles: rt.h.opts.SupportedProfiles}
	env, err := s.request(ctx, protocol.TypeHello, "", p, reqOpts{})
	if err != nil {
		return err
	}
	var ack protocol.HelloAckPayload
	if err := env.DecodePayload(&ack); err != nil {
		return protocol.Errorf(protocol.CodeInvalidPacket, "hello.ack payload: %v", err)
	}
	switch {
	case ack.ConnectorCardID != rt.cardID:
		return protocol.Errorf(protocol.CodeConnectorCardIDMismatch, "hello.ack connector_card_id %q, want %q", ack.ConnectorCardID, rt.cardID)
	case ack.ConnectorID == "":
		return protocol.Errorf(protocol.CodeInvalidPacket, "hello.ack has no connector_id")
	}
	if err := protocol.AdmitVersionString(ack.ProtocolVersion); err != nil {
		return err
	}
	if ack.ProtocolVersion != card.ProtocolVersion {
		return protocol.Errorf(protocol.CodeUnsupportedProtocolVersion, "hello.ack protocol_version %q differs from the Card's %q", ack.ProtocolVersion, card.ProtocolVersion)
	}
	s.connectorID = ack.ConnectorID
	s.neg = protocol.Negotiate(card, rt.h.opts.SupportedProfiles)
	return nil
}

// stop ends the session gracefully: the chat messages being handled are
// committed and acknowledged, then the socket is closed after its queue
// is flushed (see dial). It waits for every goroutine of the session.
func (s *session) stop() {
	s.cancel()
	<-s.done
}

// close closes the socket and waits for every goroutine of the session.
func (s *session) close(reason string) {
	_ = s.conn.Close(websocket.StatusNormalClosure, reason)
	s.cancel()
	<-s.done
}

type reqOpts struct {
	timeout  time.Duration
	toolID   string                   // tool.invoke: correlates tool.progress.push without request_id
	callID   string                   // tool.invoke: its tool_call_id, idem
	onAck    func(*protocol.Envelope) // runs on the reader goroutine; must be quick
	progress func(*protocol.ToolProgressPayload)
}

// request sends a request packet and waits for its ack, an error packet with
// the same request_id, the timeout, ctx or the end of the socket.
func (s *session) request(ctx context.Context, typ, channelID string, payload any, o reqOpts) (*protocol.Envelope, error) {
	pktID, reqID := s.requestIDs()
	env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: pktID, RequestID: reqID,
		ConnectorChannelID: channelID, Type: typ, Time: nowMillis()}
	var err error
	if env.Payload, err = encodePayload(payload); err != nil {
		return nil, fmt.Errorf("%s: encode payload: %w", typ, err)
	}
	p := s.newPending(typ, channelID, o)
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return nil, &protocol.Error{Code: CodeOffline, Message: "data plane closed", Retryable: true}
	case len(s.pending) >= s.rt.h.opts.MaxInFlight:
		s.mu.Unlock()
		return nil, &protocol.Error{Code: protocol.CodeChannelBusy, Message: "too many requests in flight", Retryable: true}
	}
	s.pending[env.RequestID] = p
	s.mu.Unlock()
	defer s.forget(env.RequestID)
	timeout := o.timeout
	if timeout <= 0 {
		timeout = s.rt.h.opts.RequestTimeout
	}
	// A timer rather than a context.WithTimeout: no context to allocate and
	// register with the caller's. The send itself waits for ctx only (the
	// socket's queue is bounded and its writer has its own write timeout).
	t := s.timers.Get(timeout)
	defer s.timers.Put(t)
	ctx, span := s.requestSpan(ctx, env)
	defer span.End()
	if err := s.sendRequest(ctx, env); err != nil {
		return nil, err
	}
	select {
	case reply := <-p.ch:
		// onFrame removed p from pending before it sent the reply and
		// is done with it: p can serve another request.
		s.reqs.Put(p)
		if reply.Type == protocol.TypeError || reply.Error != nil {
			if pe := protocol.ErrorFromWire(reply.Error); pe != nil {
				return reply, pe
			}
			return reply, protocol.Errorf(protocol.CodeInvalidPacket, "%s: error packet without an error object", typ)
		}
		if spec, ok := protocol.LookupPacket(typ); ok && spec.Ack != "" && reply.Type != spec.Ack {
			return reply, protocol.Errorf(protocol.CodeInvalidPacket, "%s answered with %s", typ, reply.Type)
		}
		return reply, nil
	case <-s.done:
		return nil, &protocol.Error{Code: CodeOffline, Message: typ + ": data plane closed before the ack", Retryable: true}
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", typ, ctx.Err())
	case <-t.C:
		return nil, &protocol.Error{Code: CodeTimeout, Message: typ + ": no ack within " + timeout.String(), Retryable: true}
	}
}

// forget drops a pending request (after its ack, or when it gave up).
func (s *session) forget(requestID string) {
	s.mu.Lock()
	delete(s.pending, requestID)
	s.mu.Unlock()
}

// encodePayload encodes a request payload. The protocol's payload types
// encode themselves (through encoding/json, so their output is valid
// JSON): calling MarshalJSON directly spares json.Marshal's second pass
// over the result.
func encodePayload(v any) (json.RawMessage, error) {
	if m, ok := v.(json.Marshaler); ok {
		return m.MarshalJSON()
	}
	return json.Marshal(v)
}

// send enqueues one packet on the socket and reports it to the observer.
func (s *session) send(ctx context.Context, env *protocol.Envelope) error {
	s.rt.h.observe(protocol.ToConnector, s.rt.cardID, env)
	if err := s.conn.Send(ctx, env); err != nil {
		return &protocol.Error{Code: CodeOffline, Message: env.Type + ": send failed: " + err.Error(), Retryable: true}
	}
	return nil
}

// onFrame runs on the reader goroutine: it matches acks and hands
// everything else to the dispatcher without blocking.
func (s *session) onFrame(env *protocol.Envelope, _ []byte, err error) {
	if err != nil {
		s.rt.h.log.Warn("host: bad frame from connector", "card_id", s.rt.cardID, "err", err)
		s.sendError(nil, protocol.Errorf(protocol.CodeInvalidPacket, "not a packet: a JSON object in a text frame is required"))
		return
	}
	s.rt.h.observe(protocol.ToHost, s.rt.cardID, env)
	if env.Schema != protocol.PacketSchema || env.PacketID == "" || env.Type == "" {
		// Section 7: schema, packet_id and type are required; such a
		// packet is not processed, acks included.
		s.rt.h.log.Warn("host: packet without schema, packet_id or type", "card_id", s.rt.cardID, "type", env.Type)
		s.sendError(env, protocol.Errorf(protocol.CodeInvalidPacket, "schema %s, packet_id and type are required", protocol.PacketSchema))
		return
	}
	switch {
	case env.Type == protocol.TypeChatMessageAck:
		s.mu.Lock()
		ch := s.chatAcks[env.ReplyTo]
		delete(s.chatAcks, env.ReplyTo)
		s.mu.Unlock()
		if ch != nil {
			ch <- env // capacity 1, one ack per packet_id
		}
		return
	case env.Type == protocol.TypeToolProgressPush:
		// Delivered here, before the ack that follows it on the socket.
		s.progress(env)
	case env.RequestID != "" && env.Type != protocol.TypePing:
		s.mu.Lock()
		p := s.pending[env.RequestID]
		if p != nil {
			delete(s.pending, env.RequestID)
		}
		s.mu.Unlock()
		if p != nil {
			if p.onAck != nil && env.Error == nil && env.Type != protocol.TypeError {
				p.onAck(env)
			}
			p.ch <- env // capacity 1
			return
		}
	}
	if env.Type == protocol.TypeDescriptorPush {
		n := s.seq.Add(1)
		s.mu.Lock()
		s.pushSeqs[env] = n
		s.mu.Unlock()
	}
	select {
	case s.inbound <- env:
	default:
		s.takePushSeq(env)
		s.rt.h.log.Warn("host: inbound queue full; packet dropped", "card_id", s.rt.cardID, "type", env.Type)
		if env.Type == protocol.TypeChatMessage {
			// A dropped chat.message would keep its sender waiting for
			// the ack until its ack timeout: reject it now, retryable,
			// so that it comes again after the sender's backoff.
			var p struct {
				MessageID string `json:"message_id"`
			}
			if env.DecodePayload(&p) == nil && p.MessageID != "" {
				s.ack(env, protocol.ChatAckPayload{MessageID: p.MessageID, Status: protocol.AckRejected,
					Code: string(protocol.CodeChannelBusy), Message: "inbound queue full", Retryable: ptr(true)})
			}
		}
	}
}

// takePushSeq returns and forgets the arrival number of a queued
// Descriptor push (0 for none).
func (s *session) takePushSeq(env *protocol.Envelope) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.pushSeqs[env]
	delete(s.pushSeqs, env)
	return n
}

// progress hands a tool.progress.push to the call it belongs to (section
// 8.20): the tool.invoke with its request_id; else, on its channel, the one
// whose tool_call_id its payload names (ToolCallID, an xconn member the
// SDK sends); else the only tool.invoke of its tool_id in flight there. When
// two calls of one tool are in flight and the push names neither, it goes
// to none of them (it is still an EventToolProgress): a call never sees
// another call's progress.
func (s *session) progress(env *protocol.Envelope) {
	var pp protocol.ToolProgressPayload
	if env.DecodePayload(&pp) != nil {
		return
	}
	callID := pp.ToolCallID
	var fn func(*protocol.ToolProgressPayload)
	s.mu.Lock()
	if p := s.pending[env.RequestID]; env.RequestID != "" && p != nil {
		fn = p.progress
	} else {
		var byTool *pendingReq
		n := 0
		for _, p := range s.pending {
			if p.typ != protocol.TypeToolInvoke || p.channel != env.ConnectorChannelID || p.toolID != pp.ToolID {
				continue
			}
			if callID != "" {
				if p.callID == callID {
					byTool, n = p, 1
					break
				}
				continue
			}
			byTool = p
			n++
		}
		if n == 1 {
			fn = byTool.progress
		}
	}
	s.mu.Unlock()
	if fn != nil {
		c := pp
		fn(&c)
	}
}

// dispatch handles pushes in arrival order; chat messages go on to their
// channel's ordered worker.
func (s *session) dispatch() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case env := <-s.inbound:
			if env.Type == protocol.TypeChatMessage || env.Type == protocol.TypeMessagePush || env.Type == protocol.TypePing || env.Type == protocol.TypePong {
				s.handlePush(env) // a chat packet's span is its worker's
				continue
			}
			_, span := s.packetSpan(s.ctx, env)
			s.handlePush(env)
			span.End()
		}
	}
}

func (s *session) handlePush(env *protocol.Envelope) {
	h := s.rt.h
	switch env.Type {
	case protocol.TypePing:
		pong := env.Reply(protocol.TypePong)
		pong.PacketID, pong.Time = newID("pkt_"), nowMillis()
		_ = s.send(s.ctx, pong)
	case protocol.TypePong:
	case protocol.TypeToolProgressPush:
		var p protocol.ToolProgressPayload
		if err := env.DecodePayload(&p); err != nil {
			return
		}
		h.emit(Event{Kind: EventToolProgress, CardID: s.rt.cardID, ChannelID: env.ConnectorChannelID, Progress: &p, Detail: p.Status})
	case protocol.TypeDescriptorPush:
		s.rt.onDescriptorPush(s.ctx, s, env)
	case protocol.TypeChatMessage, protocol.TypeMessagePush:
		s.toWorker(env)
	case protocol.TypeError:
		pe := protocol.ErrorFromWire(env.Error)
		h.log.Warn("host: error packet from connector", "card_id", s.rt.cardID, "channel", env.ConnectorChannelID, "err", pe)
	default:
		s.unexpected(env)
	}
}

// unexpected answers a packet the host does not take from a connector. An
// ack that matched no request in flight (a late answer after its timeout)
// is ignored. A Profile's packet that travels only to the connector or
// that the channel did not negotiate is dropped silently (IM v2 section
// 10). Anything else, an unknown type or a common packet that only
// xAgent sends, gets an error packet unsupported_packet (section 8.23).
func (s *session) unexpected(env *protocol.Envelope) {
	spec, known := protocol.LookupPacket(env.Type)
	switch {
	case known && spec.IsAck && spec.Direction&protocol.ToHost != 0:
		s.rt.h.log.Debug("host: ack without a request in flight ignored", "card_id", s.rt.cardID, "type", env.Type)
	case known && spec.Profile != "":
		s.rt.h.log.Debug("host: packet of a Profile not taken from a connector dropped", "card_id", s.rt.cardID, "type", env.Type)
	default:
		s.rt.h.log.Debug("host: unsupported packet", "card_id", s.rt.cardID, "type", env.Type)
		s.sendError(env, protocol.Errorf(protocol.CodeUnsupportedPacket, "packet type %q is not one a Connector sends to xAgent", env.Type))
	}
}

// toWorker queues a chat packet on its channel's ordered worker, starting
// the worker when needed. A full queue rejects a chat.message as
// channel_busy (retryable).
func (s *session) toWorker(env *protocol.Envelope) {
	ch := env.ConnectorChannelID
	s.mu.Lock()
	q, ok := s.workers[ch]
	if !ok && !s.closed && len(s.workers) < s.rt.h.opts.MaxChannelWorkers {
		q = make(chan *protocol.Envelope, s.rt.h.opts.InboundQueue)
		s.workers[ch] = q
		s.work.Add(1)
		go func() {
			defer s.work.Done()
			for {
				select {
				case <-s.ctx.Done():
					return
				case e := <-q:
					if s.ctx.Err() != nil {
						return // stopping: the rest are redelivered, unacked
					}
					ctx, span := s.packetSpan(s.ctx, e)
					s.rt.handleChat(ctx, s, e)
					span.End()
				}
			}
		}()
	}
	s.mu.Unlock()
	if q != nil {
		select {
		case q <- env:
			return
		default:
		}
	}
	if env.Type == protocol.TypeChatMessage {
		var p protocol.ChatMessagePayload
		_ = env.DecodePayload(&p)
		s.ack(env, protocol.ChatAckPayload{MessageID: p.MessageID, Status: protocol.AckRejected,
			Code: string(protocol.CodeChannelBusy), Message: "channel queue full", Retryable: ptr(true)})
	}
}

// sendError answers a packet from the connector with an error packet
// (sections 7 and 8.23): request_id and connector_channel_id echoed,
// reply_to its packet_id; req nil for a frame that was no packet. It never
// blocks (it may run on the reader goroutine): with the send queue full
// the error is dropped, and it never answers an error packet.
func (s *session) sendError(req *protocol.Envelope, perr *protocol.Error) {
	if req != nil && req.Type == protocol.TypeError {
		return
	}
	env := &protocol.Envelope{Schema: protocol.PacketSchema, Type: protocol.TypeError}
	if req != nil {
		env = req.Reply(protocol.TypeError)
	}
	env.PacketID, env.Time, env.Error = newID("pkt_"), nowMillis(), perr.Wire()
	frame, err := env.MarshalJSON()
	if err != nil {
		return
	}
	s.rt.h.observe(protocol.ToConnector, s.rt.cardID, env)
	if err := s.conn.TrySendRaw(frame); err != nil {
		s.rt.h.log.Debug("host: error packet not sent", "card_id", s.rt.cardID, "code", perr.Code, "err", err)
	}
}

// ack answers a received chat.message.
func (s *session) ack(msg *protocol.Envelope, p protocol.ChatAckPayload) {
	env := msg.Reply(protocol.TypeChatMessageAck)
	env.RequestID = "" // IM v2 acks carry reply_to; request_id only when the message had one
	if msg.RequestID != "" {
		env.RequestID = msg.RequestID
	}
	env.PacketID, env.Time = newID("pkt_"), nowMillis()
	var err error
	if env.Payload, err = encodePayload(p); err != nil {
		return
	}
	// Not s.ctx: a stopping host still acks what it took (see dial). A
	// send waits only while the queue is full, at most until the socket
	// closes, which a stop does within closeGrace.
	_ = s.send(s.detached, env)
}

// beginBind records that the connector acknowledged the sign-in of a
// temporary channel as authenticated: the sign-in goroutine is about to
// store the record and bind the route to it. It runs on the reader
// goroutine, as the ack arrives, so that a chat.message the connector sends
// right after the ack finds it (see awaitBind).
func (s *session) beginBind(channelID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.binds == nil {
		s.binds = map[string]chan struct{}{}
	}
	if s.binds[channelID] == nil {
		s.binds[channelID] = make(chan struct{})
	}
}

// endBind ends what beginBind started, whatever the outcome of the sign-in.
func (s *session) endBind(channelID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch := s.binds[channelID]; ch != nil {
		close(ch)
		delete(s.binds, channelID)
	}
}

// awaitBind returns the route of channelID once a sign-in that the
// connector acknowledged as authenticated has bound it to its record (or
// failed, or RequestTimeout passed); without such a sign-in it returns the
// current route at once. It runs on the channel's worker.
func (s *session) awaitBind(ctx context.Context, channelID string) *route {
	s.mu.Lock()
	ch := s.binds[channelID]
	s.mu.Unlock()
	if ch != nil {
		t := time.NewTimer(s.rt.h.opts.RequestTimeout)
		select {
		case <-ch:
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	return s.route(channelID)
}

// authAckBinds is the onAck of auth.start and auth.status on a temporary
// channel: an authenticated answer starts the binding of channelID.
func (s *session) authAckBinds(channelID string) func(*protocol.Envelope) {
	return func(env *protocol.Envelope) {
		authenticated := false
		jsonbytes.EachMember(env.Payload, func(key, val []byte) bool {
			if string(key) == "status" {
				authenticated = string(val) == `"`+string(protocol.AuthAuthenticated)+`"`
				return false
			}
			return true
		})
		if authenticated {
			s.beginBind(channelID)
		}
	}
}

func ptr[T any](v T) *T { return &v }
