package host

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/internal/xtrace"
	"github.com/xconn/xconn/protocol"
)

// handleChat processes one inbound chat.message or message.push on its
// channel's ordered worker: catalog filter, inbox dedupe, file download,
// the Agent, then the ack.
func (rt *runtime) handleChat(ctx context.Context, s *session, env *protocol.Envelope) {
	r := s.route(env.ConnectorChannelID)
	if r != nil && r.ucID == "" {
		// A sign-in channel: its sign-in may be binding it right now.
		r = s.awaitBind(ctx, env.ConnectorChannelID)
	}
	if env.Type == protocol.TypeMessagePush {
		rt.handlePush(ctx, s, r, env)
		return
	}
	var p protocol.ChatMessagePayload
	if err := env.DecodePayload(&p); err != nil {
		s.ack(env, delivery.RejectAck(p.MessageID, protocol.Errorf(protocol.CodeInvalidPacket, "chat.message payload does not decode")))
		return
	}
	if r != nil && !r.neg.Allows(env.Type, protocol.ToHost) {
		return // outside the negotiated catalog: filtered silently (IM v2 §10)
	}
	if r == nil || r.ucID == "" {
		s.ack(env, delivery.RejectAck(p.MessageID, &protocol.Error{Code: protocol.CodeChannelNotOpen, Message: "channel is not open for messages", Retryable: true}))
		return
	}
	if vs := protocol.ValidateDecodedPayload(env, protocol.ToHost, &p); len(vs) > 0 {
		s.ack(env, delivery.RejectAck(p.MessageID, &protocol.Error{Code: protocol.CodeInvalidPacket, Message: vs.Error()}))
		return
	}
	content := delivery.ContentOf(&p)
	v, err := rt.h.inbox.Begin(ctx, r.ucID, p.MessageID, content)
	if err != nil {
		s.ack(env, delivery.RejectAck(p.MessageID, err))
		return
	}
	if v != delivery.VerdictNew {
		s.ack(env, v.Ack(p.MessageID))
		return
	}
	msg, err := rt.userMessage(ctx, r, p.MessageID, p.Text, p.Files, protocol.ProfileIMv2)
	if err == nil {
		msg.CreatedAt = time.UnixMilli(p.CreatedAt)
		err = rt.deliver(ctx, msg)
	}
	if err != nil {
		rt.h.inbox.Abort(r.ucID, p.MessageID)
		s.ack(env, delivery.RejectAck(p.MessageID, err))
		return
	}
	// The Agent has taken the message (its reply may be queued already):
	// record that even when the socket or the host is stopping meanwhile,
	// so that the ack says accepted, and a redelivery duplicate.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeGrace)
	cctx, span := rt.h.tracer.Start(cctx, "store.commit inbox", trace.SpanKindInternal, attrUserChan.String(r.ucID), attrMessage.String(p.MessageID))
	v, err = rt.h.inbox.Commit(cctx, r.ucID, p.MessageID, content)
	xtrace.End(span, err)
	cancel()
	if err != nil {
		s.ack(env, delivery.RejectAck(p.MessageID, err))
		return
	}
	s.ack(env, v.Ack(p.MessageID))
}

// userMessage builds the Agent's message, downloading its files.
func (rt *runtime) userMessage(ctx context.Context, r *route, messageID, text string, files []protocol.ChatFile, profile protocol.Profile) (*UserMessage, error) {
	c, err := rt.h.userChannel(ctx, r.userID, rt.cardID, r.ucID)
	if err != nil {
		return nil, &protocol.Error{Code: protocol.CodeChannelNotOpen, Message: "user channel not found", Retryable: true}
	}
	uc := &c.uc // shared with the cache: read only
	base, _, _ := rt.view()
	local, err := rt.h.download(ctx, base, uc.ID, files)
	if err != nil {
		return nil, err
	}
	for i := range local {
		local[i] = rt.h.files.add(uc.UserID, local[i])
	}
	return &UserMessage{CardID: rt.cardID, UserChannelID: uc.ID, ChannelID: r.channelID, UserID: uc.UserID,
		SessionID: uc.SessionID, Profile: profile, MessageID: messageID, Text: text, Files: local}, nil
}

// deliver hands a message to the Agent; on failure its files are removed.
func (rt *runtime) deliver(ctx context.Context, msg *UserMessage) error {
	if rt.h.opts.Agent == nil {
		return nil
	}
	err := rt.h.opts.Agent.HandleMessage(ctx, msg, newAnswerStream(rt.h, msg.UserChannelID, msg.MessageID))
	if err != nil {
		for _, f := range msg.Files {
			_ = os.Remove(f.Path)
		}
		if protocol.AsError(err) == nil {
			return &protocol.Error{Code: protocol.CodeInternal, Message: "agent failed to take the message", Retryable: true}
		}
	}
	return err
}

// Reply returns a reply stream for proactive assistant output on a user
// channel (the Agent receives one with each message).
func (h *Host) Reply(ctx context.Context, userChannelID string) (ReplyStream, error) {
	if _, _, err := h.channelRuntime(ctx, userChannelID); err != nil {
		return nil, err
	}
	return newReplyStream(h, userChannelID), nil
}

// replyStream implements ReplyStream for one user channel.
type replyStream struct {
	h    *Host
	ucID string
	// inReplyTo is the message_id of the user message being answered, or
	// "" for proactive output. With it, the n-th assistant message gets a
	// message_id derived from (ucID, inReplyTo, n): when the host dies
	// after queuing a reply but before it committed the user message, the
	// connector redelivers the message, the Agent answers it again, and the
	// outbox finds the same message_id pending or done, so the user sees
	// the reply once.
	inReplyTo string
	n         int

	mu     chanMutex
	msgID  string
	seq    int64
	broken bool // a delta of the current message was lost: send no more deltas
}

// chanMutex is a mutex whose Lock honours a context.
type chanMutex chan struct{}

func (m *chanMutex) lock(ctx context.Context) error {
	if *m == nil {
		return errors.New("host: reply stream not initialised")
	}
	select {
	case *m <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *chanMutex) unlock() { <-*m }

// live returns the session and route of the channel when it is open now.
func (rs *replyStream) live(ctx context.Context) (*runtime, *session, *route, error) {
	c, rt, err := rs.h.channelByID(ctx, rs.ucID)
	if err != nil {
		return nil, nil, nil, err
	}
	s := rt.session()
	if s == nil {
		return rt, nil, nil, nil
	}
	return rt, s, s.route(c.uc.ChannelID), nil
}

// push sends a best-effort packet (activity, delta) when allowed.
func (rs *replyStream) push(ctx context.Context, typ string, payload any) (bool, error) {
	_, s, r, err := rs.live(ctx)
	if err != nil {
		return false, err
	}
	if s == nil || r == nil || !r.neg.Allows(typ, protocol.ToConnector) {
		return false, nil
	}
	env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: newID("pkt_"), ConnectorChannelID: r.channelID, Type: typ, Time: nowMillis()}
	if err := env.SetPayload(payload); err != nil {
		return false, err
	}
	rs.h.tracer.Inject(ctx, env)
	if err := s.send(ctx, env); err != nil {
		return false, nil // best effort
	}
	return true, nil
}

func (rs *replyStream) Activity(ctx context.Context, status protocol.ActivityStatus, toolName string) error {
	switch {
	case status == protocol.ActivityTool && (toolName == "" || len(toolName) > protocol.MaxActivityToolNameBytes):
		return protocol.Errorf(protocol.CodeInvalidPacket, "chat.activity tool needs a tool_name of 1 to %d bytes", protocol.MaxActivityToolNameBytes)
	case status != protocol.ActivityTool && toolName != "":
		return protocol.Errorf(protocol.CodeInvalidPacket, "chat.activity %s takes no tool_name", status)
	case status != protocol.ActivityThinking && status != protocol.ActivityTool && status != protocol.ActivityIdle:
		return protocol.Errorf(protocol.CodeInvalidPacket, "unknown chat.activity status %q", status)
	}
	_, err := rs.push(ctx, protocol.TypeChatActivity, protocol.ChatActivityPayload{Status: status, ToolName: toolName})
	return err
}

func (rs *replyStream) Delta(ctx context.Context, text string) error {
	if err := rs.mu.lock(ctx); err != nil {
		return err
	}
	defer rs.mu.unlock()
	if rs.msgID == "" {
		rs.msgID, rs.seq, rs.broken = rs.nextID(), 0, false
	}
	if rs.broken {
		return nil
	}
	rs.seq++
	sent, err := rs.push(ctx, protocol.TypeChatMessageDelta, protocol.ChatDeltaPayload{MessageID: rs.msgID, Sequence: rs.seq, Text: text, InReplyTo: rs.inReplyTo})
	if !sent {
		rs.broken = true // a gap would be rejected: the final carries the whole text
	}
	return err
}

func (rs *replyStream) Final(ctx context.Context, text string, files ...OutgoingFile) (string, error) {
	if err := rs.mu.lock(ctx); err != nil {
		return "", err
	}
	defer rs.mu.unlock()
	id := rs.msgID
	if id == "" {
		id = rs.nextID()
	}
	rs.msgID, rs.seq, rs.broken = "", 0, false
	if text == "" && len(files) == 0 {
		return "", protocol.Errorf(protocol.CodeInvalidPacket, "a final message needs text or files")
	}
	c, rt, err := rs.h.channelByID(ctx, rs.ucID)
	if err != nil {
		return "", err
	}
	if !c.parsed || !rt.catalog(c.profiles).Allows(protocol.TypeChatMessage, protocol.ToConnector) {
		return id, nil // outside the negotiated catalog: filtered silently
	}
	p := protocol.ChatMessagePayload{MessageID: id, Text: text, CreatedAt: nowMillis(), InReplyTo: rs.inReplyTo}
	for _, f := range files {
		cf, err := rs.h.upload(ctx, rt, c.uc.ChannelID, f)
		if err != nil {
			return "", err
		}
		p.Files = append(p.Files, cf)
	}
	payload, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	if err := rs.h.enqueueFinal(ctx, rs.ucID, id, payload); err != nil {
		return "", err
	}
	return id, nil
}

// sendFinal is the outbox's SendFunc: one attempt to deliver a pending
// final on the channel's current route, waiting for chat.message.ack.
func (h *Host) sendFinal(ctx context.Context, e delivery.Entry) (err error) {
	c, rt, err := h.channelByID(ctx, e.Channel)
	if err != nil {
		if errors.Is(err, ErrUnknownChannel) {
			return &protocol.Error{Code: protocol.CodeConnectionNotFound, Message: "user channel no longer exists"}
		}
		if errors.Is(err, ErrUnknownConnector) {
			// The record exists but its connector is not loaded (its
			// stored Card did not parse at start): removing a connector
			// deletes its channels, so this one waits, until its TTL.
			return &protocol.Error{Code: CodeOffline, Message: "connector not loaded", Retryable: true}
		}
		return err
	}
	s := rt.session()
	if s == nil {
		return &protocol.Error{Code: CodeOffline, Message: "connector offline", Retryable: true}
	}
	r := s.route(c.uc.ChannelID)
	if r == nil {
		return &protocol.Error{Code: protocol.CodeChannelNotOpen, Message: "channel not open", Retryable: true}
	}
	if !r.neg.Allows(protocol.TypeChatMessage, protocol.ToConnector) {
		return &protocol.Error{Code: protocol.CodeUnsupportedPacket, Message: "chat.message is not negotiated on this channel"}
	}
	env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: newID("pkt_"), ConnectorChannelID: r.channelID,
		Type: protocol.TypeChatMessage, Time: nowMillis(), Payload: e.Payload}
	if h.tracer != nil {
		var span trace.Span
		ctx, span = h.sendSpan(ctx, e, env)
		defer func() { h.endSend(span, e, err) }()
	}
	ch := make(chan *protocol.Envelope, 1)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return &protocol.Error{Code: CodeOffline, Message: "connector offline", Retryable: true}
	}
	s.chatAcks[env.PacketID] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.chatAcks, env.PacketID)
		s.mu.Unlock()
	}()
	// The payload is the outbox's, encoded by Final with encoding/json:
	// the frame is written in one pass, without checking it once more.
	if err := s.sendRequest(ctx, env); err != nil {
		return err
	}
	result := func(ackEnv *protocol.Envelope) error {
		var ack protocol.ChatAckPayload
		if err := ackEnv.DecodePayload(&ack); err != nil || ack.MessageID != e.MessageID || ackEnv.ConnectorChannelID != r.channelID {
			return &protocol.Error{Code: protocol.CodeInvalidPacket, Message: "chat.message.ack does not match the message", Retryable: true}
		}
		return delivery.AckResult(ack)
	}
	select {
	case ackEnv := <-ch:
		return result(ackEnv)
	case <-s.done:
	case <-ctx.Done():
	}
	// An ack read just before the connection closed (or the wait ended)
	// was received: select picks at random among ready cases, and taking
	// it as lost would send an accepted final again (IM v2 section 9).
	select {
	case ackEnv := <-ch:
		return result(ackEnv)
	default:
	}
	if ctx.Err() != nil {
		return &protocol.Error{Code: CodeTimeout, Message: "no chat.message.ack in time", Retryable: true}
	}
	return &protocol.Error{Code: CodeOffline, Message: "data plane closed before the ack", Retryable: true}
}

func newReplyStream(h *Host, ucID string) *replyStream {
	return &replyStream{h: h, ucID: ucID, mu: make(chanMutex, 1)}
}

// newAnswerStream is the reply stream handed to the Agent with the user
// message inReplyTo: its message_ids are derived, see replyStream.
func newAnswerStream(h *Host, ucID, inReplyTo string) *replyStream {
	rs := newReplyStream(h, ucID)
	rs.inReplyTo = inReplyTo
	return rs
}

// nextID returns the message_id of the next assistant message; called
// with rs.mu held.
func (rs *replyStream) nextID() string {
	rs.n++
	if rs.inReplyTo == "" {
		return newID("amsg_")
	}
	return derivedID("amsg_", rs.ucID, rs.inReplyTo, strconv.Itoa(rs.n))
}
