package connector

import (
	"bytes"

	"github.com/xconn/xconn/protocol"
)

// process runs one queued packet on a worker goroutine.
func (sess *session) process(w work) {
	s := sess.srv
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("connector: packet handler panicked", "type", typeOf(w.env))
			sess.sendError(w.env, protocol.Errorf(protocol.CodeInternal, "internal error"))
		}
	}()
	env := w.env
	if w.err != nil {
		perr := protocol.AsError(w.err)
		if perr == nil {
			perr = protocol.Errorf(protocol.CodeInvalidPacket, "invalid packet")
		}
		sess.sendError(env, perr)
		return
	}
	if env.Schema != protocol.PacketSchema || env.PacketID == "" || env.Type == "" {
		sess.sendError(env, protocol.Errorf(protocol.CodeInvalidPacket,
			"envelope needs schema %q, packet_id and type", protocol.PacketSchema))
		return
	}
	ctx, span := sess.packetSpan(env)
	defer span.End()
	if env.Type == protocol.TypeHello {
		sess.handleHello(env)
		return
	}
	if !sess.helloDone.Load() {
		if env.Type != protocol.TypeError {
			sess.sendError(env, protocol.Errorf(protocol.CodeHelloRequired, "connector.hello must complete before %s", env.Type))
		}
		return
	}
	spec, known := protocol.LookupPacket(env.Type)
	switch {
	case env.Type == protocol.TypeError:
		s.log.Debug("connector: error packet from xAgent", "code", errCode(env))
		return
	case env.Type == protocol.TypePong:
		return
	case env.Type == protocol.TypePing:
		sess.reply(env, protocol.TypePong, protocol.EmptyPayload{})
		return
	case !known:
		sess.sendError(env, protocol.Errorf(protocol.CodeUnsupportedPacket, "packet type %s is not supported", env.Type))
		return
	case spec.Profile != "" && !sess.negotiated().Allows(env.Type, protocol.ToConnector):
		// A packet of a Profile that is not declared or not negotiated is
		// dropped silently (IM v2 section 10).
		s.metrics.dropped.Inc()
		return
	case spec.Direction&protocol.ToConnector == 0:
		sess.sendError(env, protocol.Errorf(protocol.CodeUnsupportedPacket, "%s is not sent to a Connector", env.Type))
		return
	case spec.UserLevel && env.ConnectorChannelID == "" && env.Type != protocol.TypeChannelOpen:
		sess.sendError(env, protocol.Errorf(protocol.CodeConnectorChannelIDRequired, "%s needs an envelope connector_channel_id", env.Type))
		return
	}
	vs := protocol.ValidateEnvelope(env)
	var invoke *protocol.ToolInvokePayload
	var chat *protocol.ChatMessagePayload
	switch {
	case env.Type == protocol.TypeAuthStart: // form input types are checked as invalid_auth_input
	case env.Type == protocol.TypeToolInvoke && len(vs) == 0 && spec.Profile != protocol.ProfileIMv2:
		// (An IM v2 packet would also need the forbidden identity check.)
		// Parsed once here and handed to the handler; a payload the fast
		// check does not clear gets the full ValidatePayload.
		invoke = decodeToolInvoke(env)
		if invoke == nil {
			vs = append(vs, protocol.ValidatePayload(env, protocol.ToConnector)...)
		}
	case env.Type == protocol.TypeChatMessage:
		// Decoded once, validated as decoded, handed to the handler.
		chat = new(protocol.ChatMessagePayload)
		if env.DecodePayload(chat) != nil {
			chat = nil // ValidatePayload says why
		}
		vs = append(vs, protocol.ValidateDecodedPayload(env, protocol.ToConnector, chat)...)
	default:
		vs = append(vs, protocol.ValidatePayload(env, protocol.ToConnector)...)
	}
	if len(vs) > 0 {
		perr := protocol.Errorf(protocol.CodeInvalidPacket, "%s", vs.Error())
		if env.Type == protocol.TypeChatMessage {
			sess.rejectChat(env, perr)
			return
		}
		sess.sendError(env, perr)
		return
	}
	if env.Type == protocol.TypeChannelOpen {
		sess.handleOpen(env)
		return
	}
	if perr := sess.checkChannel(env.ConnectorChannelID); perr != nil {
		sess.sendError(env, perr)
		return
	}
	switch env.Type {
	case protocol.TypeChannelClose:
		sess.handleClose(env)
	case protocol.TypeDescriptorGet:
		sess.handleDescriptorGet(env)
	case protocol.TypeAuthStart:
		sess.handleAuthStart(env)
	case protocol.TypeAuthStatus:
		sess.handleAuthStatus(env)
	case protocol.TypeAuthCancel:
		sess.handleAuthCancel(env)
	case protocol.TypeAuthLogout:
		sess.handleAuthLogout(env)
	case protocol.TypeToolInvoke:
		if invoke == nil { // valid, but not cleared by the fast check
			invoke = new(protocol.ToolInvokePayload)
			if err := env.DecodePayload(invoke); err != nil {
				sess.replyError(env, protocol.TypeToolInvokeAck, protocol.AsError(err))
				return
			}
		}
		if sess.dispatchTool(env, invoke) { // ToolObserve and ToolAct leave the queue
			return
		}
		sess.handleToolInvoke(ctx, env, invoke)
	case protocol.TypeChatMessage:
		sess.handleChatMessage(ctx, env, chat)
	case protocol.TypeChatMessageDelta:
		sess.handleChatDelta(ctx, env)
	case protocol.TypeChatActivity:
		sess.handleActivity(ctx, env)
	default:
		sess.sendError(env, protocol.Errorf(protocol.CodeUnsupportedPacket, "packet type %s is not supported", env.Type))
	}
}

// decodeToolInvoke decodes a (non IM v2) tool.invoke payload once and
// returns it when it plainly satisfies every rule protocol.ValidatePayload
// has for it (a JSON object with a tool_id and an object arguments, no
// extension members that would need the case-variant check). It returns nil otherwise; the caller
// then runs the full validation, which reports the exact violations.
func decodeToolInvoke(env *protocol.Envelope) *protocol.ToolInvokePayload {
	if p := scanInvoke(env.Payload); p != nil {
		return p // the common shape, read in one pass (wire_invoke.go)
	}
	if !startsObject(env.Payload) {
		return nil
	}
	p := new(protocol.ToolInvokePayload)
	if env.DecodePayload(p) != nil || len(p.Extensions) > 0 || p.ToolID == "" || !startsObject(p.Arguments) {
		return nil
	}
	return p
}

// startsObject reports whether raw (already known to be valid JSON, or
// checked by the decoder) is a JSON object.
func startsObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// checkChannel checks that a channel exists, belongs to this socket's
// connector_id and is open on this socket.
func (sess *session) checkChannel(id string) *protocol.Error {
	s := sess.srv
	cid := sess.connector()
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, ok := s.channels[id]
	switch {
	case !ok:
		return protocol.Errorf(protocol.CodeConnectionNotFound, "channel %s does not exist", id)
	case cs.rec.ConnectorID != cid:
		return protocol.Errorf(protocol.CodeConnectorChannelConnectorMismatch, "channel %s belongs to another connector_id", id)
	case cs.open == nil:
		return protocol.Errorf(protocol.CodeChannelNotOpen, "channel.open must complete before using channel %s", id)
	case cs.open != sess:
		return protocol.Errorf(protocol.CodeConnectorChannelNotOwned, "channel %s is open on another data-plane connection", id)
	}
	return nil
}

func typeOf(env *protocol.Envelope) string {
	if env == nil {
		return ""
	}
	return env.Type
}

func errCode(env *protocol.Envelope) string {
	if env.Error == nil {
		return ""
	}
	return env.Error.Code
}
