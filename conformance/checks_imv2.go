package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/xconn/xconn/protocol"
)

// runTag is a per-run suffix for message ids, so that a rerun against a
// Connector with durable idempotency records does not collide.
func runTag(s *session) string {
	if s.tag == "" {
		s.tag = fmt.Sprint(time.Now().UnixNano())
	}
	return s.tag
}

// chatAck sends a chat.message and waits for its ack.
func (s *session) chatAck(ctx context.Context, c *wsConn, p protocol.ChatMessagePayload) (*protocol.Envelope, frame, protocol.ChatAckPayload, error) {
	env := c.newEnvelope(protocol.TypeChatMessage, s.channelID, p)
	var a protocol.ChatAckPayload
	f, err := c.request(ctx, env)
	if err == nil && f.env.Type == protocol.TypeChatMessageAck {
		_ = f.env.DecodePayload(&a) // an undecodable ack fails the caller's checks
	}
	return env, f, a, err
}

// probeIMv2Chat delivers assistant messages on the signed-in channel.
func probeIMv2Chat(ctx context.Context, s *session, r *recorder) {
	if !needPrimary(s, r) {
		return
	}
	if ok, why := s.has(CapHasAuthenticatedChannel); !ok {
		r.skipRest(why)
		return
	}
	if !s.card.DeclaresProfile(protocol.ProfileIMv2) || !oneOf(protocol.ProfileIMv2, s.authDesc.Connection.Profiles...) {
		r.skipRest("xagent.im.v2 is not enabled on the signed-in channel")
		return
	}
	c := s.primary
	tag := runTag(s)
	m1 := protocol.ChatMessagePayload{MessageID: "conf-" + tag + "-1", Text: "xconn conformance check: final without deltas"}
	ackOK := func(env *protocol.Envelope, f frame, a protocol.ChatAckPayload, err error, msgID string) (bool, string) {
		if err != nil || f.env.Type != protocol.TypeChatMessageAck {
			return false, describe(f, err)
		}
		got := fmt.Sprintf("reply_to %q, channel %q, message_id %q, status %q", f.env.ReplyTo, f.env.ConnectorChannelID, a.MessageID, a.Status)
		return f.env.ReplyTo == env.PacketID && f.env.ConnectorChannelID == s.channelID && a.MessageID == msgID, got
	}
	env, f, a, err := s.chatAck(ctx, c, m1)
	if err == nil && a.Status == protocol.AckRejected && s.primeConversation(ctx, c) {
		// A target whose bot cannot write first (Feishu, WeChat) refuses a
		// reply before a person opened the conversation: open it through
		// Options.Inbound, as in real use, and send the final again.
		m1.MessageID += "-after-inbound"
		env, f, a, err = s.chatAck(ctx, c, m1)
	}
	if err == nil && a.Status == protocol.AckRejected && a.Code == string(protocol.CodeTargetDeliveryFailed) &&
		s.opts.Inbound == nil && len(s.obs.inbound) == 0 {
		// Without a conversation such a target has nowhere to deliver, and
		// without the hook the suite cannot open one: the outbound chat
		// checks do not apply to this run.
		r.skipRest(fmt.Sprintf("the Connector rejected the first final with target_delivery_failed (%q) and no user message opened a conversation: "+
			"a target whose bot cannot write first needs one; run the suite with an inbound hook (conformance.Options.Inbound) or after a user wrote to the bot",
			s.redact(a.Message)))
		return
	}
	ok, got := ackOK(env, f, a, err, m1.MessageID)
	r.check("imv2.ack-accepted", ok && a.Status == protocol.AckAccepted, "chat.message.ack accepted with reply_to "+env.PacketID+" and message_id "+m1.MessageID, got, s.redact(string(f.data)))
	accepted := ok && a.Status == protocol.AckAccepted

	if r.want("imv2.ack-request-id") {
		// The suite's chat packets carry no request_id, as in IM v2's
		// examples; an xAgent may still set one, and section 7 has the
		// Connector return it unchanged.
		m := protocol.ChatMessagePayload{MessageID: "conf-" + tag + "-request-id", Text: "xconn conformance check: a final with a request_id"}
		env := c.newEnvelope(protocol.TypeChatMessage, s.channelID, m)
		env.RequestID = "req_conf_chat_" + tag
		f, err := c.request(ctx, env)
		ok := err == nil && f.env.ReplyTo == env.PacketID && f.env.RequestID == env.RequestID
		got := describe(f, err)
		if err == nil {
			got = fmt.Sprintf("%s with request_id %q, reply_to %q", f.env.Type, f.env.RequestID, f.env.ReplyTo)
		}
		r.check("imv2.ack-request-id", ok, "chat.message.ack with request_id "+env.RequestID+" and reply_to "+env.PacketID, got, s.redact(string(f.data)))
	}
	if r.want("imv2.ack-duplicate") {
		if !accepted {
			r.skip("imv2.ack-duplicate", "the first message was not accepted")
		} else {
			env, f, a, err := s.chatAck(ctx, c, m1)
			ok, got := ackOK(env, f, a, err, m1.MessageID)
			r.check("imv2.ack-duplicate", ok && a.Status == protocol.AckDuplicate, "chat.message.ack duplicate", got, s.redact(string(f.data)))
		}
	}
	if r.want("imv2.ack-conflict") {
		if !accepted {
			r.skip("imv2.ack-conflict", "the first message was not accepted")
		} else {
			other := m1
			other.Text = "xconn conformance check: other content under the same message_id"
			env, f, a, err := s.chatAck(ctx, c, other)
			ok, got := ackOK(env, f, a, err, m1.MessageID)
			ok = ok && a.Status == protocol.AckRejected && a.Code != "" && a.Retryable != nil && !*a.Retryable
			r.check("imv2.ack-conflict", ok, "chat.message.ack rejected with a code and retryable=false", got+fmt.Sprintf(", code %q, retryable %v", a.Code, boolString(a.Retryable)), s.redact(string(f.data)))
		}
	}
	if r.want("imv2.ack-invalid-payload") {
		_, f, a, err := s.chatAck(ctx, c, protocol.ChatMessagePayload{MessageID: "conf-" + tag + "-empty"})
		_, rejectedErr := rejection(f, err)
		ok := err == nil && ((f.env.Type == protocol.TypeError && rejectedErr) ||
			(f.env.Type == protocol.TypeChatMessageAck && a.Status == protocol.AckRejected && a.Retryable != nil && !*a.Retryable))
		r.check("imv2.ack-invalid-payload", ok, "an error packet or chat.message.ack rejected with retryable=false", describe(f, err)+fmt.Sprintf(" status %q retryable %v", a.Status, boolString(a.Retryable)), s.redact(string(f.data)))
	}
	if r.want("imv2.final-with-file") {
		if s.upload.fileRef == "" {
			r.skip("imv2.final-with-file", "no file_ref from a successful upload (see transfer.upload)")
		} else {
			m := protocol.ChatMessagePayload{MessageID: "conf-" + tag + "-file", Text: "xconn conformance check: final with a file",
				Files: []protocol.ChatFile{{Type: protocol.FileFile, FileRef: s.upload.fileRef, Filename: "conformance.txt", MimeType: "text/plain"}}}
			env, f, a, err := s.chatAck(ctx, c, m)
			ok, got := ackOK(env, f, a, err, m.MessageID)
			r.check("imv2.final-with-file", ok && a.Status == protocol.AckAccepted, "chat.message.ack accepted", got+fmt.Sprintf(", code %q", a.Code), s.redact(string(f.data)))
		}
	}
	if r.want("imv2.delta-final") {
		id := "conf-" + tag + "-2"
		var deltas []*protocol.Envelope
		for i, text := range []string{"xconn conformance ", "check: deltas then final"} {
			d := c.newEnvelope(protocol.TypeChatMessageDelta, s.channelID, protocol.ChatDeltaPayload{MessageID: id, Sequence: int64(i + 1), Text: text})
			deltas = append(deltas, d)
			if err := c.send(ctx, d); err != nil {
				r.skip("imv2.delta-final", err.Error())
				return
			}
		}
		final := c.newEnvelope(protocol.TypeChatMessage, s.channelID, protocol.ChatMessagePayload{MessageID: id, Text: "xconn conformance check: deltas then final"})
		if err := c.send(ctx, final); err != nil {
			r.skip("imv2.delta-final", err.Error())
			return
		}
		var deltaAnswer *frame
		f, err := c.await(ctx, s.opts.timeout(), func(f frame) bool {
			for _, d := range deltas {
				if answers(f, d) && deltaAnswer == nil {
					g := f
					deltaAnswer = &g
				}
			}
			return answers(f, final)
		})
		var a protocol.ChatAckPayload
		if err == nil {
			_ = f.env.DecodePayload(&a)
		}
		switch {
		case deltaAnswer != nil:
			r.fail("imv2.delta-final", "no answer to a delta", describe(*deltaAnswer, nil), s.redact(string(deltaAnswer.data)))
		default:
			ok := err == nil && f.env.Type == protocol.TypeChatMessageAck && a.Status == protocol.AckAccepted && a.MessageID == id
			r.check("imv2.delta-final", ok, "chat.message.ack accepted for the final", describe(f, err)+fmt.Sprintf(" status %q", a.Status), s.redact(string(f.data)))
		}
	}
	if r.want("imv2.delta-gap") {
		id := "conf-" + tag + "-3"
		d1 := c.newEnvelope(protocol.TypeChatMessageDelta, s.channelID, protocol.ChatDeltaPayload{MessageID: id, Sequence: 1, Text: "xconn "})
		d3 := c.newEnvelope(protocol.TypeChatMessageDelta, s.channelID, protocol.ChatDeltaPayload{MessageID: id, Sequence: 3, Text: "gap"})
		if err := c.send(ctx, d1); err != nil {
			r.skip("imv2.delta-gap", err.Error())
			return
		}
		if err := c.send(ctx, d3); err != nil {
			r.skip("imv2.delta-gap", err.Error())
			return
		}
		f, err := c.await(ctx, s.opts.timeout(), func(f frame) bool { return answers(f, d3) || answers(f, d1) })
		_, rejected := rejection(f, err)
		ok := err == nil && rejected && answers(f, d3)
		r.check("imv2.delta-gap", ok, "an error packet with reply_to "+d3.PacketID, describe(f, err), s.redact(string(f.data)))
		// Complete the message so that the Connector can drop its delta state.
		_, _, _, _ = s.chatAck(ctx, c, protocol.ChatMessagePayload{MessageID: id, Text: "xconn conformance check: after a delta gap"})
	}
}

func boolString(b *bool) string {
	if b == nil {
		return "absent"
	}
	return fmt.Sprint(*b)
}
