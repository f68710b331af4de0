package host

import (
	"context"
	"fmt"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/protocol"
)

// handlePush receives a legacy IM v1 message.push: validated (section 8.21,
// IM v1 section 5), deduplicated by message_id, files downloaded from
// download_url or url (IM v1 section 9), handed to the Agent. message.push
// has no ack, so nothing it carries is dropped without a trace (IM v1
// section 8): a push that is not handed on is recorded by pushFailed, and
// one that is malformed or on a channel that is not open is also answered
// with an error packet (sections 7 and 8.23).
func (rt *runtime) handlePush(ctx context.Context, s *session, r *route, env *protocol.Envelope) {
	var p protocol.MessagePushPayload
	decodeErr := env.DecodePayload(&p)
	switch {
	case env.ConnectorChannelID == "":
		rt.pushFailed(s, env, p.MessageID, protocol.Errorf(protocol.CodeConnectorChannelIDRequired, "message.push needs a connector_channel_id"), true)
		return
	case r == nil || r.ucID == "":
		rt.pushFailed(s, env, p.MessageID, protocol.Errorf(protocol.CodeChannelNotOpen, "channel %s is not open for messages", env.ConnectorChannelID), true)
		return
	case !r.neg.Allows(env.Type, protocol.ToHost):
		// Not negotiated on this channel: no error packet (IM v2 section
		// 10 drops such a packet silently), but a record.
		rt.pushFailed(s, env, p.MessageID, protocol.Errorf(protocol.CodeUnsupportedPacket, "xagent.im.v1 is not negotiated on channel %s", env.ConnectorChannelID), false)
		return
	case decodeErr != nil:
		rt.pushFailed(s, env, "", protocol.Errorf(protocol.CodeInvalidPacket, "message.push payload does not decode"), true)
		return
	}
	if vs := protocol.ValidateDecodedPayload(env, protocol.ToHost, &p); len(vs) > 0 {
		rt.pushFailed(s, env, p.MessageID, protocol.Errorf(protocol.CodeInvalidPacket, "message.push: %s", vs.Error()), true)
		return
	}
	for i := range p.Files {
		if p.Files[i].SourceURL() == "" {
			rt.pushFailed(s, env, p.MessageID, protocol.Errorf(protocol.CodeInvalidPacket,
				"message.push: payload.files[%d]: download_url or url is required (IM v1 section 9)", i), true)
			return
		}
	}
	text := p.Text
	if text == "" {
		text = p.Content
	}
	if text == "" {
		text = p.Message
	}
	content := delivery.Content{Text: text, Files: p.Files}
	v, err := rt.h.inbox.Begin(ctx, r.ucID, p.MessageID, content)
	switch {
	case err != nil:
		rt.pushFailed(s, env, p.MessageID, asPushError(err), false)
		return
	case v == delivery.VerdictDuplicate:
		return // handed on before: nothing to do
	case v != delivery.VerdictNew:
		rt.pushFailed(s, env, p.MessageID, v.Err(), false) // a conflict, or the same message in progress
		return
	}
	msg, err := rt.userMessage(ctx, r, p.MessageID, text, p.Files, protocol.ProfileIMv1)
	if err == nil {
		msg.Push, msg.TargetSession = &p, targetSessionOf(&p)
		err = rt.deliver(ctx, msg)
	}
	if err != nil {
		rt.h.inbox.Abort(r.ucID, p.MessageID)
		rt.pushFailed(s, env, p.MessageID, asPushError(err), false)
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeGrace)
	defer cancel()
	if _, err := rt.h.inbox.Commit(cctx, r.ucID, p.MessageID, content); err != nil {
		rt.h.log.Warn("host: message.push handed on, its inbox record failed", "card_id", rt.cardID,
			"channel", env.ConnectorChannelID, "message_id", p.MessageID, "err", err)
	}
}

func asPushError(err error) *protocol.Error {
	if pe := protocol.AsError(err); pe != nil {
		return pe
	}
	return &protocol.Error{Code: protocol.CodeInternal, Message: err.Error()}
}

// pushFailed records a message.push that did not reach the Agent: the
// connector's count of failed pushes (Connector.FailedPushes), a warning
// with its ids and reason, and an EventPushFailed. With reply, the
// connector gets an error packet for it.
func (rt *runtime) pushFailed(s *session, env *protocol.Envelope, messageID string, perr *protocol.Error, reply bool) {
	rt.failedPushes.Add(1)
	rt.h.log.Warn("host: message.push not handed to the agent", "card_id", rt.cardID, "channel", env.ConnectorChannelID,
		"packet_id", env.PacketID, "message_id", messageID, "code", perr.Code, "err", perr.Message)
	rt.h.emit(Event{Kind: EventPushFailed, CardID: rt.cardID, ChannelID: env.ConnectorChannelID,
		Detail: fmt.Sprintf("%s %s: %s", messageID, perr.Code, perr.Message)})
	if reply {
		s.sendError(env, perr)
	}
}

// SessionTargetField names the message.push member that named a target
// Session (section 8.21).
type SessionTargetField string

// The members that may name a target Session; at most one appears.
const (
	SessionTargetRef SessionTargetField = "target_session_ref"
	SessionRef       SessionTargetField = "session_ref"
	TargetSessionID  SessionTargetField = "target_session_id"
)

// SessionTarget is the target Session a legacy IM v1 message.push names
// (section 8.21: "target_session_ref, session_ref, or target_session_id
// can identify a target Session, but no more than one"). Ref is the
// connector's opaque value.
type SessionTarget struct {
	Field SessionTargetField
	Ref   string
}

// targetSessionOf maps the target Session members of a validated push
// (at most one is set) to a SessionTarget, nil when none is.
func targetSessionOf(p *protocol.MessagePushPayload) *SessionTarget {
	for _, t := range []SessionTarget{{SessionTargetRef, p.TargetSessionRef}, {SessionRef, p.SessionRef}, {TargetSessionID, p.TargetSessionID}} {
		if t.Ref != "" {
			return &t
		}
	}
	return nil
}
