package connector

import (
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/internal/xtrace"
	"github.com/xconn/xconn/protocol"
)

// handleChatMessage delivers one final assistant message to the connector
// (IM v2 section 5): duplicate and conflict are answered from the inbox
// without side effects; accepted is sent only after the handler returned
// nil. p is the payload process decoded and validated.
func (sess *session) handleChatMessage(pctx context.Context, env *protocol.Envelope, p *protocol.ChatMessagePayload) {
	s := sess.srv
	id := env.ConnectorChannelID
	content := delivery.ContentOf(p)
	verdict, err := s.inbox.Begin(pctx, id, p.MessageID, content)
	if err != nil {
		s.log.Error("connector: inbox", "err", err)
		sess.rejectChat(env, &protocol.Error{Code: protocol.CodeInternal, Message: "inbox unavailable", Retryable: true})
		return
	}
	if verdict != delivery.VerdictNew {
		sess.ackChat(env, verdict.Ack(p.MessageID))
		return
	}
	files, perr := s.resolveFiles(pctx, id, p.Files)
	if perr != nil {
		s.inbox.Abort(id, p.MessageID)
		sess.ackChat(env, delivery.RejectAck(p.MessageID, perr))
		return
	}
	// The final text is the complete content: the assembled deltas are
	// dropped.
	s.asm.Final(id, p.MessageID)
	m := &AssistantMessage{MessageID: p.MessageID, Text: p.Text, Files: files, InReplyTo: p.InReplyTo}
	if p.CreatedAt > 0 {
		m.CreatedAt = time.UnixMilli(p.CreatedAt)
	}
	ctx, cancel := context.WithTimeout(pctx, s.opts.ToolTimeout)
	defer cancel()
	ch := &Channel{srv: s, id: id}
	herr := safeCall(func() error { return s.onMessage(ctx, ch, m) })
	if herr != nil {
		s.inbox.Abort(id, p.MessageID)
		sess.ackChat(env, delivery.RejectAck(p.MessageID, s.chatError(herr)))
		return
	}
	// The record is written even when the socket closed meanwhile: the
	// side effects happened, and a redelivery must not repeat them.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(pctx), actRecordTimeout)
	rctx, span := s.tracer.Start(rctx, "store.commit inbox", trace.SpanKindInternal, attrChannel.String(id), attrMessage.String(p.MessageID))
	v, err := s.inbox.Commit(rctx, id, p.MessageID, content)
	xtrace.End(span, err)
	rcancel()
	if err != nil {
		// The side effects happened; the record failed. Accept anyway:
		// a redelivery would repeat them only if the record is missing.
		s.log.Error("connector: inbox commit", "err", err)
		v = delivery.VerdictNew
	}
	sess.ackChat(env, v.Ack(p.MessageID))
}

// chatError classifies a MessageHandler error into a secret-free rejection.
func (s *Server) chatError(err error) *protocol.Error {
	retry := IsTemporary(err)
	if pe := protocol.AsError(err); pe != nil {
		return &protocol.Error{Code: pe.Code, Message: s.secrets.Scrub(pe.Message), Retryable: retry}
	}
	s.log.Warn("connector: assistant message delivery failed", "err", err.Error())
	msg := "target delivery failed"
	if retry {
		msg = "target temporarily unavailable"
	}
	return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Message: msg, Retryable: retry}
}

// rejectChat answers a chat.message that could not be processed: an ack
// rejected when the message_id is readable, else an error packet.
func (sess *session) rejectChat(env *protocol.Envelope, perr *protocol.Error) {
	var p struct {
		MessageID string `json:"message_id"`
	}
	if env.DecodePayload(&p) != nil || p.MessageID == "" {
		sess.sendError(env, perr)
		return
	}
	sess.ackChat(env, delivery.RejectAck(p.MessageID, perr))
}

// ackChat sends chat.message.ack with reply_to = the message's packet_id
// (IM v2 section 7) and the message's request_id unchanged when it had
// one (section 7: "Connector must return it unchanged"); IM v2's examples
// carry none, and then the ack carries none either.
func (sess *session) ackChat(env *protocol.Envelope, ack protocol.ChatAckPayload) {
	ack.Message = sess.srv.secrets.Scrub(ack.Message)
	sess.srv.metrics.chatAcks.WithLabelValues(ack.Status).Inc()
	// Encoded here by encoding/json, so the frame is written in one pass
	// without a second check of the payload.
	if payload, err := json.Marshal(ack); err == nil {
		sess.replyTrusted(env, protocol.TypeChatMessageAck, payload)
		return
	}
	sess.replyEnv(env.Reply(protocol.TypeChatMessageAck), ack)
}

// handleChatDelta checks a delta's sequence and hands it to the delta
// handler (streaming) or keeps it buffered until the final.
func (sess *session) handleChatDelta(pctx context.Context, env *protocol.Envelope) {
	s := sess.srv
	var p protocol.ChatDeltaPayload
	if err := env.DecodePayload(&p); err != nil {
		sess.sendError(env, protocol.AsError(err))
		return
	}
	id := env.ConnectorChannelID
	assembled, added, err := s.asm.Add(id, p.MessageID, p.Sequence, p.Text)
	if err != nil {
		perr := protocol.AsError(err)
		if perr == nil {
			perr = protocol.Errorf(protocol.CodeDeltaSequenceInvalid, "delta rejected")
		}
		sess.sendError(env, perr)
		return
	}
	if !added || s.onDelta == nil {
		return
	}
	ctx, cancel := context.WithTimeout(pctx, s.opts.ToolTimeout)
	defer cancel()
	d := &AssistantDelta{MessageID: p.MessageID, Sequence: p.Sequence, Text: p.Text, Assembled: assembled, InReplyTo: p.InReplyTo}
	if err := safeCall(func() error { return s.onDelta(ctx, &Channel{srv: s, id: id}, d) }); err != nil {
		s.log.Warn("connector: delta handler failed", "channel", id, "err", err.Error())
	}
}

// handleActivity hands an activity snapshot to the connector; failures
// never touch message delivery.
func (sess *session) handleActivity(pctx context.Context, env *protocol.Envelope) {
	s := sess.srv
	if s.onActivity == nil {
		return
	}
	var p protocol.ChatActivityPayload
	if err := env.DecodePayload(&p); err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(pctx, s.opts.ToolTimeout)
	defer cancel()
	a := Activity{Status: p.Status, ToolName: p.ToolName}
	if err := safeCall(func() error { return s.onActivity(ctx, &Channel{srv: s, id: env.ConnectorChannelID}, a) }); err != nil {
		s.log.Debug("connector: activity handler failed", "err", err.Error())
	}
}
