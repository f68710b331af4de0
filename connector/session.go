package connector

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/internal/signurl"
	"github.com/xconn/xconn/internal/timerpool"
	"github.com/xconn/xconn/internal/wsconn"
	"github.com/xconn/xconn/protocol"
)

// session is one data-plane socket: the wsconn reader and writer, the
// per-channel work queues and their workers. The read loop only routes
// frames into queues; workers run the handlers.
type session struct {
	srv    *Server
	conn   *wsconn.Conn
	ctx    context.Context // ends when the socket closes or the server stops
	cancel context.CancelFunc
	sem    chan struct{}           // bounds parallel channel workers
	pings  chan *protocol.Envelope // pings awaiting their pong, answered by ponger
	wg     sync.WaitGroup

	helloDone atomic.Bool
	watch     *writeWatch    // reports frames written to the socket; nil when unavailable
	idPrefix  string         // "pkt_" and a random part, unique per socket
	idSeq     atomic.Uint64  // numbers the packets this socket sends
	client    string         // the peer's host (remote IP), for per-client fairness
	timers    timerpool.Pool // stopped *time.Timer for tool call timeouts

	mu          sync.Mutex
	connectorID string
	neg         *protocol.Negotiated
	queues      map[string]*workQueue
	inBytes     int64                                   // bytes of the queued inbound frames (Options.InboundQueueBytes)
	waiters     map[string]chan protocol.ChatAckPayload // chat.message packet_id -> ack
}

type workQueue struct {
	items   []work
	running bool
}

type work struct {
	env  *protocol.Envelope
	err  error
	size int64 // the frame's bytes, counted in session.inBytes while queued
}

// controlKey is the queue of packets without a channel (hello, ping, a
// first channel.open) and of every packet before hello completes.
const controlKey = "\x00control"

// controlQueue bounds the control queue (hello, ping, first opens); a
// packet beyond it, or beyond Options.InboundQueueBytes, is answered at
// once on the read loop (channel_busy, or invalid_packet for a frame that
// is not a packet).
const controlQueue = 1024

// pingQueue bounds the pings awaiting their pong on one socket; a ping
// beyond it goes through the control queue instead.
const pingQueue = 64

// maxWaiters bounds chat.message acks awaited per socket.
const maxWaiters = 4096

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	if !s.checkAPIKey(w, r) {
		return
	}
	s.mu.Lock()
	if s.state != stateStarted {
		s.mu.Unlock()
		http.Error(w, "connector is not running", http.StatusServiceUnavailable)
		return
	}
	// The slot is reserved here, under the same lock as the check, and
	// held until the socket is gone: concurrent dials cannot pass
	// MaxSockets between a check and the registration after the handshake.
	if s.slots >= s.opts.MaxSockets {
		s.mu.Unlock()
		s.logLimited("sockets_full", "connector: data-plane socket refused: every slot is taken", "max_sockets", s.opts.MaxSockets)
		http.Error(w, "too many data-plane connections", http.StatusServiceUnavailable)
		return
	}
	s.slots++
	s.wg.Add(1) // the handler goroutine runs the socket; Close waits for it
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.slots--
		s.mu.Unlock()
		s.wg.Done()
	}()

	var watch *writeWatch
	if s.card.DeclaresProfile(protocol.ProfileIMv1) && canHijack(w) {
		ww := &watchWriter{ResponseWriter: w}
		w, watch = ww, &ww.watch
	}
	conn, err := wsconn.Accept(w, r, wsconn.Options{
		ReadLimit: s.opts.MaxFrameBytes, SendQueue: s.opts.SendQueue, SendQueueBytes: s.opts.SendQueueBytes, Logger: s.log,
	})
	if err != nil {
		s.log.Debug("connector: websocket accept failed", "err", err)
		return
	}
	if watch != nil && !watch.usable() {
		watch = nil
		s.log.Debug("connector: frames of this socket cannot be watched; message.push completes when queued")
	}
	ctx, cancel := context.WithCancel(s.ctx)
	sess := &session{
		srv: s, conn: conn, ctx: ctx, cancel: cancel, watch: watch,
		idPrefix: signurl.RandomID("pkt_")[:16] + "_", // 60 random bits
		client:   clientHost(r.RemoteAddr),
		sem:      make(chan struct{}, s.opts.Workers),
		pings:    make(chan *protocol.Envelope, pingQueue),
		queues:   map[string]*workQueue{},
		waiters:  map[string]chan protocol.ChatAckPayload{},
	}
	s.mu.Lock()
	if s.state != stateStarted {
		s.mu.Unlock()
		cancel()
		_ = conn.Close(websocket.StatusGoingAway, "server shutting down")
		return
	}
	s.sockets[sess] = struct{}{}
	s.mu.Unlock()
	s.metrics.sockets.Inc()
	s.log.Debug("connector: data plane connected")

	// A socket that never says hello would hold its slot for ever.
	helloTimer := time.AfterFunc(s.opts.HelloTimeout, func() {
		if !sess.helloDone.Load() {
			s.logLimited("hello_timeout", "connector: no connector.hello in time, socket closed", "hello_timeout", s.opts.HelloTimeout.String())
			_ = conn.Close(websocket.StatusPolicyViolation, "hello_required: no connector.hello within "+s.opts.HelloTimeout.String())
		}
	})
	sess.wg.Add(1)
	go sess.ponger()
	_ = conn.Run(ctx, sess.onFrame)
	helloTimer.Stop()
	cancel()
	sess.wg.Wait()
	s.detach(sess)
	s.metrics.sockets.Dec()
	s.log.Debug("connector: data plane disconnected")
}

// onFrame runs on the read loop: it never blocks and never runs a handler.
func (sess *session) onFrame(env *protocol.Envelope, raw []byte, err error) {
	s := sess.srv
	if env != nil {
		s.metrics.packetIn(env.Type)
		if env.Type == protocol.TypeChatMessageAck && sess.helloDone.Load() {
			sess.deliverAck(env)
			return
		}
		if err == nil && sess.isPlainPing(env) {
			if sess.pongNow(env) {
				return
			}
			select {
			case sess.pings <- env:
				return
			default: // ping flood: fall back to the control queue
			}
		}
	}
	key := controlKey
	if env != nil && sess.helloDone.Load() && env.ConnectorChannelID != "" {
		key = env.ConnectorChannelID
	}
	if sess.enqueue(key, work{env: env, err: err, size: int64(len(raw))}) {
		return
	}
	// The queue (or the socket's inbound bytes) is full: the request is
	// answered here, without keeping the frame. The answer waits for room
	// in the writer's queue, which holds back reading from this peer (a
	// peer that does not read its answers meets SendQueueBytes or the
	// write timeout and is closed). An error packet gets no answer.
	switch {
	case env == nil:
		perr := protocol.AsError(err)
		if perr == nil {
			perr = protocol.Errorf(protocol.CodeInvalidPacket, "invalid packet")
		}
		sess.sendError(nil, perr)
	case env.Type == protocol.TypeError:
		s.metrics.dropped.Inc()
	default:
		s.metrics.busy.Inc()
		s.logLimited("queue_full", "connector: packets answered channel_busy: a queue of the socket is full",
			"type", metricType(env.Type))
		sess.sendError(env, protocol.Errorf(protocol.CodeChannelBusy, "too many queued packets for this connection or channel; retry later"))
	}
}

// enqueue appends w to the queue of key and starts its worker. It reports
// false when the queue (or the number of queues) is at its bound.
func (sess *session) enqueue(key string, w work) bool {
	s := sess.srv
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.inBytes > 0 && sess.inBytes+w.size > s.opts.InboundQueueBytes {
		return false
	}
	q := sess.queues[key]
	if q == nil {
		if len(sess.queues) >= s.opts.MaxChannelQueues && key != controlKey {
			return false
		}
		q = &workQueue{}
		sess.queues[key] = q
	}
	limit := s.opts.ChannelQueue
	if key == controlKey {
		limit = max(limit, controlQueue) // room for busy answers
	}
	if len(q.items) >= limit {
		return false
	}
	q.items = append(q.items, w)
	sess.inBytes += w.size
	if !q.running {
		q.running = true
		sess.wg.Add(1)
		go sess.worker(key, q)
	}
	return true
}

// isPlainPing reports whether env is a well-formed ping after hello, which
// ponger answers without a worker (process would answer it the same way).
func (sess *session) isPlainPing(env *protocol.Envelope) bool {
	return env.Type == protocol.TypePing && env.Schema == protocol.PacketSchema &&
		env.PacketID != "" && sess.helloDone.Load()
}

// pongNow answers a plain ping on the read goroutine: the pong is encoded
// here and queued for the writer without waiting, so it takes no hand-off
// to another goroutine and never waits behind channel work. It reports
// false when the writer's queue is full (the caller then hands the ping to
// ponger, which may wait).
func (sess *session) pongNow(req *protocol.Envelope) bool {
	env := req.Reply(protocol.TypePong)
	env.PacketID, env.Time = sess.packetID(), time.Now().UnixMilli()
	env.Payload = json.RawMessage(`{}`)
	b, err := env.MarshalJSON() // compact payload: the same bytes as Encode
	if err != nil {
		return false
	}
	switch err := sess.conn.TrySendRaw(b); {
	case err == nil:
		sess.srv.metrics.packetOut(protocol.TypePong)
		return true
	case errors.Is(err, wsconn.ErrQueueFull):
		return false
	default:
		return true // the socket is closing: nobody reads the pong
	}
}

// packetID returns a packet_id for a packet this socket sends: the socket's
// random prefix and a sequence number, unique without a random draw per
// packet.
func (sess *session) packetID() string {
	var buf [64]byte
	b := append(buf[:0], sess.idPrefix...)
	b = strconv.AppendUint(b, sess.idSeq.Add(1), 36)
	return string(b)
}

// ponger answers the pings handed over by the read loop: a pong goes
// straight to the writer queue, never behind channel work. It runs for the
// life of the socket; serveWS waits for it.
func (sess *session) ponger() {
	defer sess.wg.Done()
	for {
		select {
		case env := <-sess.pings:
			sess.reply(env, protocol.TypePong, protocol.EmptyPayload{})
		case <-sess.ctx.Done():
			return
		}
	}
}

// worker drains one queue in order; at most Options.Workers channel queues
// run at once. The control queue (hello, connection-level packets, busy
// answers) takes no worker slot, so channel work cannot starve it.
func (sess *session) worker(key string, q *workQueue) {
	defer sess.wg.Done()
	if key != controlKey {
		select {
		case sess.sem <- struct{}{}:
		case <-sess.ctx.Done():
			sess.stopQueue(key, q)
			return
		}
		defer func() { <-sess.sem }()
	}
	for {
		sess.mu.Lock()
		if len(q.items) == 0 || sess.ctx.Err() != nil {
			sess.dropQueueLocked(key, q)
			sess.mu.Unlock()
			return
		}
		w := q.items[0]
		q.items[0] = work{}
		q.items = q.items[1:]
		sess.mu.Unlock()
		sess.process(w)
		sess.mu.Lock()
		sess.inBytes -= w.size
		sess.mu.Unlock()
	}
}

func (sess *session) stopQueue(key string, q *workQueue) {
	sess.mu.Lock()
	sess.dropQueueLocked(key, q)
	sess.mu.Unlock()
}

// dropQueueLocked forgets queue key with what it still holds. The caller
// holds sess.mu.
func (sess *session) dropQueueLocked(key string, q *workQueue) {
	for _, w := range q.items {
		sess.inBytes -= w.size
	}
	q.running = false
	q.items = nil
	delete(sess.queues, key)
}

// deliverAck hands a chat.message.ack to the waiting sender, if any.
func (sess *session) deliverAck(env *protocol.Envelope) {
	var ack protocol.ChatAckPayload
	if env.DecodePayload(&ack) != nil {
		return
	}
	sess.mu.Lock()
	ch, ok := sess.waiters[env.ReplyTo]
	sess.mu.Unlock()
	if !ok {
		sess.srv.log.Debug("connector: chat.message.ack without a waiting message", "channel", env.ConnectorChannelID)
		return
	}
	select {
	case ch <- ack:
	default:
	}
}

func (sess *session) addWaiter(packetID string) (chan protocol.ChatAckPayload, bool) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if len(sess.waiters) >= maxWaiters {
		return nil, false
	}
	ch := make(chan protocol.ChatAckPayload, 1)
	sess.waiters[packetID] = ch
	return ch, true
}

func (sess *session) dropWaiter(packetID string) {
	sess.mu.Lock()
	delete(sess.waiters, packetID)
	sess.mu.Unlock()
}

func (sess *session) negotiated() *protocol.Negotiated {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.neg == nil {
		return protocol.NegotiateProfiles(nil, nil)
	}
	return sess.neg
}

func (sess *session) connector() string {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.connectorID
}

// newPacket returns a Connector-initiated envelope.
func (sess *session) newPacket(typ, channel string) *protocol.Envelope {
	return &protocol.Envelope{
		Schema: protocol.PacketSchema, PacketID: sess.packetID(),
		ConnectorChannelID: channel, Type: typ, Time: time.Now().UnixMilli(),
	}
}

// send writes env; it blocks while the socket's queue is full, until the
// socket ends. Errors mean the socket is gone and are only logged.
func (sess *session) send(ctx context.Context, env *protocol.Envelope) error {
	if env.Error != nil {
		env.Error.Message = sess.srv.secrets.Scrub(env.Error.Message)
	}
	// MarshalJSON, not Encode: the payloads here come from json.Marshal
	// (compact, HTML-escaped), so encoding/json's second pass over the
	// frame would copy it unchanged.
	frame, err := env.MarshalJSON()
	if err != nil {
		sess.srv.log.Debug("connector: send failed", "type", env.Type, "err", err)
		return err
	}
	return sess.sendFrame(ctx, env.Type, frame)
}

// sendFrame queues an encoded packet of type typ for the writer, like send.
func (sess *session) sendFrame(ctx context.Context, typ string, frame []byte) error {
	if err := sess.conn.SendRaw(ctx, frame); err != nil {
		sess.srv.log.Debug("connector: send failed", "type", typ, "err", err)
		return err
	}
	sess.srv.metrics.packetOut(typ)
	return nil
}

// reply sends the ack typ of req with payload.
func (sess *session) reply(req *protocol.Envelope, typ string, payload any) {
	sess.replyEnv(req.Reply(typ), payload)
}

// replyEnv completes an ack envelope prepared with Envelope.Reply and sends
// it with payload.
func (sess *session) replyEnv(env *protocol.Envelope, payload any) {
	env.PacketID, env.Time = sess.packetID(), time.Now().UnixMilli()
	if err := env.SetPayload(payload); err != nil {
		sess.srv.log.Error("connector: encode ack", "type", env.Type, "err", err)
		env.Payload, env.Error = nil, protocol.Errorf(protocol.CodeInternal, "cannot encode %s", env.Type).Wire()
	}
	_ = sess.send(sess.ctx, env)
}

// replyRaw sends the ack typ of req with an already encoded payload.
func (sess *session) replyRaw(req *protocol.Envelope, typ string, payload json.RawMessage) {
	env := req.Reply(typ)
	env.PacketID, env.Time, env.Payload = sess.packetID(), time.Now().UnixMilli(), payload
	_ = sess.send(sess.ctx, env)
}

// replyError sends the ack typ of req carrying an envelope error.
func (sess *session) replyError(req *protocol.Envelope, typ string, perr *protocol.Error) {
	env := req.Reply(typ)
	env.PacketID, env.Time = sess.packetID(), time.Now().UnixMilli()
	env.Error = perr.Wire()
	sess.srv.metrics.errors.WithLabelValues(metricCode(perr.Code)).Inc()
	_ = sess.send(sess.ctx, env)
}

// sendError sends a packet of type error answering req (which may be nil).
func (sess *session) sendError(req *protocol.Envelope, perr *protocol.Error) {
	env := &protocol.Envelope{Schema: protocol.PacketSchema, Type: protocol.TypeError}
	if req != nil {
		env = req.Reply(protocol.TypeError)
	}
	env.PacketID, env.Time = sess.packetID(), time.Now().UnixMilli()
	env.Error = perr.Wire()
	sess.srv.metrics.errors.WithLabelValues(metricCode(perr.Code)).Inc()
	_ = sess.send(sess.ctx, env)
}

// reject sends an error packet answering req and closes the socket with a
// policy-violation close code (a refused hello).
func (sess *session) reject(req *protocol.Envelope, perr *protocol.Error) {
	sess.rejectWith(req, perr, websocket.StatusPolicyViolation)
}

// rejectWith is reject with the close status code (try again later for a
// refusal that passes, such as a full instance table).
func (sess *session) rejectWith(req *protocol.Envelope, perr *protocol.Error, code websocket.StatusCode) {
	sess.sendError(req, perr)
	_ = sess.conn.Close(code, string(perr.Code))
}

// Knowing when a frame was written.
//
// wsconn's SendRaw returns once a frame is queued for the socket's writer,
// which writes it later (or never, when the socket dies first). A packet
// without an ack, the IM v1 message.push, counts as delivered only once
// written (IM v1 section 7.1: "None of the following counts as successful
// delivery: a closed channel, a disconnected transport, a write failure"),
// so its sender needs to see the write itself. wsconn has no such signal,
// so the SDK puts a watchConn under the socket: serveWS hands wsconn a
// ResponseWriter whose Hijack wraps the net.Conn that wsconn (and
// coder/websocket above it) writes every frame to. A frame's bytes reach
// the network unchanged (server frames are not masked and wsconn negotiates
// no compression), and each packet carries the socket-unique packet_id
// right after its schema, so the watch finds a watched frame by its
// ,"packet_id":"..." member and reports it when the write that carries the
// frame's last byte has returned without error. Only while a frame is
// watched does a write cost more than one atomic load. Only the sockets of
// a Card that declares IM v1 are watched: under the wrapper, wsconn's
// corked bursts leave in one write(2) per buffer instead of one writev(2),
// which IM v2 connectors need not pay for.

// clientHost returns the host part of a remote address ("" when it has
// none), the key of per-client fairness.
func clientHost(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return remote
	}
	return host
}
