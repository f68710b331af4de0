package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xconn/xconn/protocol"
)

// inboundState is what the run knows about the inbound messages it asked
// for through Options.Inbound and acknowledged.
type inboundState struct {
	hookFailed bool     // the hook failed, or no message followed it
	why        string   // why no inbound message is available, for skips
	accepted   []string // message_ids the suite acknowledged accepted
	primed     bool     // the conversation-opening message was asked for
}

// primeConversation gives an IM target whose bot cannot write first (a
// Feishu or WeChat bot answers only in a conversation a person opened) its
// conversation, when the Connector refused the suite's first final: with
// Options.Inbound the user's message comes first, as in real use. It is
// acknowledged here and judged by no check; the inbound checks ask for
// messages of their own. Once per run; it reports whether a message came.
func (s *session) primeConversation(ctx context.Context, c *wsConn) bool {
	if s.opts.Inbound == nil || s.inbound.primed || s.inbound.hookFailed {
		return false
	}
	s.inbound.primed = true
	_, in, err := s.requestInbound(ctx, c)
	// A missing message here must not decide the inbound checks.
	s.inbound.hookFailed, s.inbound.why = false, ""
	if err != nil {
		return false
	}
	_, _ = s.ackInbound(ctx, c, in)
	s.inbound.accepted = slices.DeleteFunc(s.inbound.accepted, func(id string) bool { return id == in.payload.MessageID })
	return true
}

// unavailableError means no inbound message can be asked for: the hook
// failed, now or earlier in the run, or an earlier message never came. It
// skips the checks that need the message; it is not the Connector's fault,
// or was already reported.
type unavailableError struct{ why string }

func (e *unavailableError) Error() string { return e.why }

func inboundIDs() []string {
	return []string{"imv2.inbound-delivered", "imv2.inbound-message-id", "imv2.redelivery", "imv2.inbound-acked-not-resent"}
}

// chatOn decodes f when it is a chat.message with a message_id on channel ch.
func chatOn(f frame, ch string) (protocol.ChatMessagePayload, bool) {
	var p protocol.ChatMessagePayload
	if f.env == nil || f.env.Type != protocol.TypeChatMessage || f.env.ConnectorChannelID != ch {
		return p, false
	}
	return p, f.env.DecodePayload(&p) == nil && p.MessageID != ""
}

// unacked returns the message_ids of the chat.messages seen on the
// signed-in channel that the suite has not acknowledged accepted.
func (s *session) unacked() []string {
	var ids []string
	for _, in := range s.obs.inbound {
		id := in.payload.MessageID
		if in.env.ConnectorChannelID == s.channelID && id != "" && !slices.Contains(s.inbound.accepted, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// requestInbound calls Options.Inbound for the signed-in channel and waits
// on c for the chat.message it causes: the first one on the channel that is
// not a message seen before and still unacknowledged. An
// *unavailableError means the hook failed, now or before; any other error
// means the Connector sent no message.
func (s *session) requestInbound(ctx context.Context, c *wsConn) (frame, inboundChat, error) {
	if s.inbound.hookFailed {
		return frame{}, inboundChat{}, &unavailableError{s.inbound.why}
	}
	waiting := s.unacked()
	hctx, cancel := context.WithTimeout(ctx, s.opts.timeout())
	err := s.opts.Inbound(hctx, s.channelID)
	cancel()
	if err != nil {
		s.inbound.hookFailed, s.inbound.why = true, "Options.Inbound: "+err.Error()
		return frame{}, inboundChat{}, &unavailableError{s.inbound.why}
	}
	var p protocol.ChatMessagePayload
	f, err := c.await(ctx, 2*s.opts.timeout(), func(f frame) bool {
		var ok bool
		p, ok = chatOn(f, s.channelID)
		return ok && !slices.Contains(waiting, p.MessageID)
	})
	if err != nil {
		s.inbound.hookFailed, s.inbound.why = true, "no chat.message arrived after Options.Inbound (see imv2.inbound-delivered): "+err.Error()
		return f, inboundChat{}, err
	}
	return f, inboundChat{env: f.env, payload: p, packet: s.redact(string(f.data))}, nil
}

// ackInbound acknowledges in as accepted on c, then makes sure the
// Connector has read the ack: it sends connection.descriptor.get for the
// channel, which the Connector handles after the ack, and waits for the
// answer. It returns the Connector's refusal of the ack (a packet answering
// it with an error), or "".
func (s *session) ackInbound(ctx context.Context, c *wsConn, in inboundChat) (string, error) {
	ack := in.env.Reply(protocol.TypeChatMessageAck)
	ack.PacketID = "pkt_conf_ack_" + fmt.Sprint(s.seq.Add(1))
	ack.RequestID = "" // IM v2 correlates chat packets by reply_to only
	ack.Time = time.Now().UnixMilli()
	if err := ack.SetPayload(protocol.ChatAckPayload{MessageID: in.payload.MessageID, Status: protocol.AckAccepted}); err != nil {
		return "", err
	}
	if err := c.send(ctx, ack); err != nil {
		return "", err
	}
	s.inbound.accepted = append(s.inbound.accepted, in.payload.MessageID)
	barrier := c.newEnvelope(protocol.TypeDescriptorGet, in.env.ConnectorChannelID, protocol.EmptyPayload{})
	if err := c.send(ctx, barrier); err != nil {
		return "", err
	}
	refused := ""
	f, err := c.await(ctx, s.opts.timeout(), func(f frame) bool {
		if f.env != nil && f.env.ReplyTo == ack.PacketID && (f.env.Error != nil || f.env.Type == protocol.TypeError) {
			refused = describe(f, nil) + ": " + s.redact(string(f.data))
		}
		return answers(f, barrier)
	})
	if err != nil {
		return refused, fmt.Errorf("connection.descriptor.get after the ack: %w", err)
	}
	s.observeAnswer(barrier, f)
	return refused, nil
}

// reopen closes the main connection, reconnects with the same connector_id
// and sends channel.open for the signed-in channel; the new connection
// becomes the main one. It returns the channel.open packet, whose answer
// the caller awaits together with what the Connector redelivers.
func (s *session) reopen(ctx context.Context) (*wsConn, *protocol.Envelope, error) {
	connectorID := s.primary.helloAck.ConnectorID
	s.primary.close()
	s.primary = nil
	c, err := s.openHello(ctx, connectorID)
	if err != nil {
		return nil, nil, fmt.Errorf("reconnect: %w", err)
	}
	s.primary = c
	open := c.newEnvelope(protocol.TypeChannelOpen, s.channelID, protocol.EmptyPayload{})
	if err := c.send(ctx, open); err != nil {
		return nil, nil, fmt.Errorf("channel.open: %w", err)
	}
	return c, open, nil
}

// probeInbound checks messages from the target: one asked for through
// Options.Inbound arrives and is acknowledged (imv2.inbound-delivered); a
// second one gets another message_id (imv2.inbound-message-id) and, left
// unacknowledged, comes again after a reconnect and reopen
// (imv2.redelivery); what was acknowledged accepted does not come again
// (imv2.inbound-acked-not-resent). Without the hook the redelivery checks
// use a message the Connector published on its own.
func probeInbound(ctx context.Context, s *session, r *recorder) {
	if !needPrimary(s, r) {
		return
	}
	if s.authDesc != nil && (!s.card.DeclaresProfile(protocol.ProfileIMv2) || !oneOf(protocol.ProfileIMv2, s.authDesc.Connection.Profiles...)) {
		r.skipRest("xagent.im.v2 is not enabled on the signed-in channel")
		return
	}
	hook := s.opts.Inbound != nil && s.authDesc != nil
	var first *inboundChat
	if hook && r.any("imv2.inbound-delivered", "imv2.inbound-message-id", "imv2.inbound-acked-not-resent") {
		first = checkDelivered(ctx, s, r)
	}

	var pending *inboundChat
	switch {
	case hook && r.any("imv2.inbound-message-id", "imv2.redelivery"):
		f, in, err := s.requestInbound(ctx, s.primary)
		var unavailable *unavailableError
		switch {
		case errors.As(err, &unavailable):
			r.skip("imv2.inbound-message-id", err.Error())
			r.skip("imv2.redelivery", err.Error())
		case err != nil:
			r.skip("imv2.inbound-message-id", "no second inbound message: "+err.Error())
			r.fail("imv2.redelivery", "a chat.message on channel "+s.channelID+" after Options.Inbound", describe(f, err), "")
		default:
			if first == nil {
				r.skip("imv2.inbound-message-id", "no first inbound message (see imv2.inbound-delivered)")
			} else {
				r.check("imv2.inbound-message-id", in.payload.MessageID != first.payload.MessageID,
					"a message_id other than "+first.payload.MessageID, fmt.Sprintf("message_id %q again for another message", in.payload.MessageID), in.packet)
			}
			pending = &in
		}
	case r.want("imv2.redelivery"):
		for i := range s.obs.inbound {
			in := &s.obs.inbound[i]
			if in.env.ConnectorChannelID == s.channelID && in.payload.MessageID != "" && !slices.Contains(s.inbound.accepted, in.payload.MessageID) {
				pending = in
				break
			}
		}
		if pending == nil {
			r.skip("imv2.redelivery", "no unacknowledged chat.message with a message_id arrived on the signed-in channel (an inbound message is needed: set Options.Inbound from go test, or have the target send one right after sign-in)")
		}
	}

	var resent []string // accepted message_ids the Connector sent again
	if pending != nil {
		if r.want("imv2.redelivery") {
			resent = checkRedelivery(ctx, s, r, *pending)
		} else {
			_, _ = s.ackInbound(ctx, s.primary, *pending) // asked for only to compare message_ids
		}
	}
	if r.want("imv2.inbound-acked-not-resent") {
		checkNotResent(ctx, s, r, resent)
	}
}

// checkDelivered asks for one inbound message, checks it against IM v2
// §5 and acknowledges it accepted. It returns the message, or nil.
func checkDelivered(ctx context.Context, s *session, r *recorder) *inboundChat {
	const id = "imv2.inbound-delivered"
	f, in, err := s.requestInbound(ctx, s.primary)
	var unavailable *unavailableError
	switch {
	case errors.As(err, &unavailable):
		r.skip(id, err.Error())
		return nil
	case err != nil:
		r.fail(id, "a chat.message on channel "+s.channelID+" after Options.Inbound", describe(f, err), "")
		return nil
	}
	var problems []string
	_, vs := protocol.ValidatePacketJSON(f.data, protocol.ToHost)
	for _, v := range vs {
		problems = append(problems, v.String())
	}
	if slices.Contains(s.inbound.accepted, in.payload.MessageID) {
		problems = append(problems, fmt.Sprintf("message_id %q of a message already acknowledged", in.payload.MessageID))
	}
	refused, err := s.ackInbound(ctx, s.primary, in)
	switch {
	case err != nil:
		problems = append(problems, "after chat.message.ack accepted: "+err.Error())
	case refused != "":
		problems = append(problems, "chat.message.ack accepted refused with "+refused)
	}
	r.check(id, len(problems) == 0, "a valid chat.message (IM v2 §5) whose ack accepted is taken", strings.Join(problems, "; "), in.packet)
	return &in
}

// checkRedelivery leaves pending unacknowledged, reconnects with the same
// connector_id, reopens the channel and expects pending again; then it
// acknowledges it. It returns the accepted message_ids the Connector sent
// again meanwhile.
func checkRedelivery(ctx context.Context, s *session, r *recorder, pending inboundChat) []string {
	const id = "imv2.redelivery"
	c, open, err := s.reopen(ctx)
	if err != nil {
		r.fail(id, "a reconnect and channel.open", err.Error(), "")
		return nil
	}
	var resent []string
	var again protocol.ChatMessagePayload
	f, err := c.await(ctx, 2*s.opts.timeout(), func(f frame) bool {
		if answers(f, open) {
			s.observeAnswer(open, f)
			s.adoptFrom(open, f)
		}
		p, ok := chatOn(f, s.channelID)
		if ok && p.MessageID != pending.payload.MessageID && slices.Contains(s.inbound.accepted, p.MessageID) && !slices.Contains(resent, p.MessageID) {
			resent = append(resent, p.MessageID)
		}
		again = p
		return ok && p.MessageID == pending.payload.MessageID
	})
	r.check(id, err == nil, "chat.message "+pending.payload.MessageID+" again", describe(f, err), "")
	if err == nil {
		_, _ = s.ackInbound(ctx, c, inboundChat{env: f.env, payload: again, packet: s.redact(string(f.data))}) // the Connector may now drop it
	}
	return resent
}

// checkNotResent reconnects once more, reopens the channel and waits one
// timeout for a chat.message the suite acknowledged accepted; resent are
// such messages already seen.
func checkNotResent(ctx context.Context, s *session, r *recorder, resent []string) {
	const id = "imv2.inbound-acked-not-resent"
	const expected = "no chat.message that was acknowledged accepted"
	if len(resent) > 0 {
		r.fail(id, expected, "chat.message "+quoteList(resent)+" again after a reconnect and channel reopen", "")
		return
	}
	if len(s.inbound.accepted) == 0 {
		r.skip(id, "no inbound chat.message was acknowledged accepted (see imv2.inbound-delivered and imv2.redelivery)")
		return
	}
	c, open, err := s.reopen(ctx)
	if err != nil {
		r.skip(id, "cannot reconnect to look: "+err.Error())
		return
	}
	opened := false
	f, err := c.await(ctx, s.opts.timeout(), func(f frame) bool {
		if answers(f, open) {
			s.observeAnswer(open, f)
			opened = f.env.Type == protocol.TypeChannelOpenAck && f.env.Error == nil
			s.adoptFrom(open, f)
		}
		p, ok := chatOn(f, s.channelID)
		return ok && slices.Contains(s.inbound.accepted, p.MessageID)
	})
	switch {
	case err == nil:
		r.fail(id, expected, describe(f, nil)+" again after a reconnect and channel reopen", s.redact(string(f.data)))
	case !errors.Is(err, errNoAnswer):
		r.skip(id, "cannot look for redeliveries: "+err.Error())
	case !opened:
		r.skip(id, "the channel was not reopened (no channel.open.ack), so redeliveries cannot be seen")
	default:
		r.pass(id)
	}
}

// adoptFrom adopts the channel id a channel.open.ack answering open names,
// when the Connector reissued it (section 8.3).
func (s *session) adoptFrom(open *protocol.Envelope, f frame) {
	if f.env == nil || f.env.Type != protocol.TypeChannelOpenAck || f.env.Error != nil {
		return
	}
	var ack protocol.ChannelOpenAckPayload
	if f.env.DecodePayload(&ack) == nil && ack.ConnectorChannelID != "" && open.ConnectorChannelID == s.channelID {
		s.adopt(s.channelID, ack.ConnectorChannelID)
	}
}
