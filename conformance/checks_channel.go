package conformance

import (
	"context"
	"fmt"

	"github.com/xconn/xconn/protocol"
)

// probeChannels checks unknown channels, close, reconnection with the same
// connector_id, channel reuse and channels of another connector_id.
func probeChannels(ctx context.Context, s *session, r *recorder) {
	if !needPrimary(s, r) {
		return
	}
	c := s.primary
	unknown := "cch_conformance_unknown_" + fmt.Sprint(s.seq.Add(1))
	if r.any("channel.unknown", "channel.unknown-code") {
		f, err := c.request(ctx, c.newEnvelope(protocol.TypeDescriptorGet, unknown, protocol.EmptyPayload{}))
		code, rejected := rejection(f, err)
		packet := s.redact(string(f.data))
		r.check("channel.unknown", rejected, "an error", describe(f, err), packet)
		r.check("channel.unknown-code", oneOf(code, string(protocol.CodeChannelNotOpen), string(protocol.CodeConnectionNotFound)),
			"error code channel_not_open or connection_not_found", describe(f, err), packet)
	}
	if r.want("channel.close") {
		// Close a second channel, so that the main one stays open.
		id, err := s.newChannel(ctx, c)
		if err != nil {
			r.skip("channel.close", err.Error())
		} else {
			f, err := c.request(ctx, c.newEnvelope(protocol.TypeChannelClose, id, protocol.EmptyPayload{}))
			var st protocol.StatusPayload
			ok := err == nil && f.env.Type == protocol.TypeChannelCloseAck && f.env.Error == nil && f.env.DecodePayload(&st) == nil && st.Status == "ok"
			r.check("channel.close", ok, `channel.close.ack {"status":"ok"}`, describe(f, err), s.redact(string(f.data)))
			s.closedChannel = id
		}
	}
	first := c.helloAck.ConnectorID
	if r.any("ws.hello-reconnect", "ws.hello-reconnect-same-id", "channel.reuse", "channel.not-owned") {
		c2, err := s.openHello(ctx, first)
		if err != nil {
			r.fail("ws.hello-reconnect", "connector.hello.ack", err.Error(), "")
			r.skip("ws.hello-reconnect-same-id", "reconnect failed (see ws.hello-reconnect)")
			r.skip("channel.reuse", "reconnect failed (see ws.hello-reconnect)")
			r.skip("channel.not-owned", "reconnect failed (see ws.hello-reconnect)")
		} else {
			r.pass("ws.hello-reconnect")
			r.check("ws.hello-reconnect-same-id", c2.helloAck.ConnectorID == first, "connector_id "+first,
				fmt.Sprintf("connector_id %q", c2.helloAck.ConnectorID), "")
			old := s.channelID
			f, ack, err := s.openChannel(ctx, c2, old)
			packet := s.redact(string(f.data))
			switch {
			case ack == nil:
				r.fail("channel.reuse", "channel.open.ack for "+old, describe(f, err), packet)
			case ack.ConnectorChannelID == "" || f.env.ConnectorChannelID != ack.ConnectorChannelID:
				r.fail("channel.reuse", "channel.open.ack naming the same channel id in envelope and payload",
					fmt.Sprintf("envelope %q, payload %q", f.env.ConnectorChannelID, ack.ConnectorChannelID), packet)
			case ack.ConnectorChannelID == old:
				r.pass("channel.reuse")
			default:
				// Section 8.3: a Connector may answer a reopen with a new id.
				// xAgent adopts it; so does the suite.
				s.adopt(old, ack.ConnectorChannelID)
				r.pass("channel.reuse")
				r.note("channel.reuse", fmt.Sprintf("the Connector reissued channel %s as %s on reopen (§8.3 allows it); the suite adopted %s", old, ack.ConnectorChannelID, ack.ConnectorChannelID))
			}
			if r.want("channel.not-owned") {
				switch {
				case ack == nil:
					r.skip("channel.not-owned", "the channel was not reopened on a second connection (see channel.reuse)")
				case s.channelID != old:
					r.skip("channel.not-owned", "the Connector reissued the channel on reopen (see channel.reuse), so no one channel id was opened on two connections")
				default:
					// The channel is now routed to c2: c does not own it.
					f, err := c.request(ctx, c.newEnvelope(protocol.TypeDescriptorGet, s.channelID, protocol.EmptyPayload{}))
					code, _ := rejection(f, err)
					r.check("channel.not-owned", code == string(protocol.CodeConnectorChannelNotOwned),
						"error code connector_channel_not_owned for channel "+s.channelID+" on the connection it was reopened away from",
						describe(f, err), s.redact(string(f.data)))
				}
			}
			c2.close()
			// A channel routes to the connection that opened it last: take
			// the main channel back to the main connection.
			if !s.reopenOn(ctx, c) {
				r.skipRest("no main channel: " + s.primaryLost)
				return
			}
		}
	}
	if r.any("channel.foreign-instance", "ws.hello-unknown-connector-id") {
		// This hello also narrows supported_profiles to the Card's first
		// Profile when the Card has several, so that the channel opened
		// below shows whether the Connector intersects them.
		p := s.helloPayload("conn_conformance_unknown_" + fmt.Sprint(s.seq.Add(1)))
		if len(s.card.Supports.Profiles) > 1 {
			p.SupportedProfiles = s.card.Supports.Profiles[:1]
		}
		c3, err := s.openHelloWith(ctx, p)
		if err != nil {
			r.fail("ws.hello-unknown-connector-id", "connector.hello.ack with a connector_id", err.Error(), "")
			r.skip("channel.foreign-instance", "no second connector instance")
			return
		}
		defer c3.close()
		r.check("ws.hello-unknown-connector-id", c3.helloAck.ConnectorID != "", "a non-empty connector_id", "empty connector_id", "")
		if c3.helloAck.ConnectorID == first {
			r.skip("channel.foreign-instance", "the Connector gave the second hello the same connector_id "+first)
			return
		}
		f, err := c3.request(ctx, c3.newEnvelope(protocol.TypeDescriptorGet, s.channelID, protocol.EmptyPayload{}))
		_, rejected := rejection(f, err)
		r.check("channel.foreign-instance", rejected, "an error for a channel opened under connector_id "+first, describe(f, err), s.redact(string(f.data)))
		_, _, _ = s.openChannel(ctx, c3, "") // its Descriptor is judged by descriptor.profiles-negotiated
	}
}

// probeAuthBasics checks auth packets that need no sign-in.
func probeAuthBasics(ctx context.Context, s *session, r *recorder) {
	if !needPrimary(s, r) {
		return
	}
	c := s.primary
	reject := func(id string, env *protocol.Envelope) {
		f, err := c.request(ctx, env)
		_, rejected := rejection(f, err)
		r.check(id, rejected, "an error", describe(f, err), s.redact(string(f.data)))
	}
	if r.want("auth.unknown-flow") {
		reject("auth.unknown-flow", c.newEnvelope(protocol.TypeAuthStart, s.channelID, protocol.AuthStartPayload{FlowID: "conformance_no_such_flow"}))
	}
	if r.want("auth.not-open") {
		flow := "conformance_no_such_flow"
		if len(s.card.AuthFlows) > 0 {
			flow = s.card.AuthFlows[0].ID
		}
		reject("auth.not-open", c.newEnvelope(protocol.TypeAuthStart, "cch_conformance_not_open", protocol.AuthStartPayload{FlowID: flow}))
	}
	if r.want("auth.unknown-session") {
		f, err := c.request(ctx, c.newEnvelope(protocol.TypeAuthStatus, s.channelID, protocol.AuthStatusPayload{AuthSessionID: "auth_conformance_unknown"}))
		code, _ := rejection(f, err)
		r.check("auth.unknown-session", code == string(protocol.CodeAuthSessionNotFound), "error code auth_session_not_found", describe(f, err), s.redact(string(f.data)))
	}
	if r.any("auth.qr-start", "auth.qr-refresh", "auth.cancel") {
		flow := s.flowOfType(protocol.AuthFlowQRLogin)
		// Use a channel of its own, so that the main channel stays unauthenticated.
		ch, err := s.newChannel(ctx, c)
		if err != nil {
			r.skipRest(err.Error())
			return
		}
		f, err := c.request(ctx, c.newEnvelope(protocol.TypeAuthStart, ch, protocol.AuthStartPayload{FlowID: flow.ID}))
		packet := s.redact(string(f.data))
		var st protocol.AuthStatePayload
		ok := err == nil && f.env.Type == protocol.TypeAuthStartAck && f.env.Error == nil && f.env.DecodePayload(&st) == nil
		valid := ok && st.AuthSessionID != "" && oneOf(st.Status, protocol.AuthPending, protocol.AuthScanned, protocol.AuthAuthenticated,
			protocol.AuthExpired, protocol.AuthQRRefreshRequired, protocol.AuthFailed) &&
			(st.Status != protocol.AuthPending || st.QRCodeText != "" || st.QRCodeImage != "")
		r.check("auth.qr-start", valid, "auth.start.ack with auth_session_id, a valid status and qr_code_text or qr_code_image",
			describe(f, err)+fmt.Sprintf(" status %q session %q", st.Status, st.AuthSessionID), packet)
		if !ok || st.AuthSessionID == "" {
			r.skip("auth.qr-refresh", "no auth session to refresh (see auth.qr-start)")
			r.skip("auth.cancel", "no auth session to cancel")
			return
		}
		if r.want("auth.qr-refresh") {
			if st.Status == protocol.AuthAuthenticated {
				r.skip("auth.qr-refresh", "the QR session was signed in at once")
			} else {
				f, err = c.request(ctx, c.newEnvelope(protocol.TypeAuthStatus, ch, protocol.AuthStatusPayload{FlowID: flow.ID, AuthSessionID: st.AuthSessionID, Refresh: true}))
				var rs protocol.AuthStatePayload
				ok := err == nil && f.env.Type == protocol.TypeAuthStatusAck && f.env.Error == nil && f.env.DecodePayload(&rs) == nil &&
					oneOf(rs.Status, protocol.AuthPending, protocol.AuthScanned, protocol.AuthAuthenticated, protocol.AuthUnauthenticated,
						protocol.AuthExpired, protocol.AuthQRRefreshRequired, protocol.AuthFailed) &&
					(!oneOf(rs.Status, protocol.AuthPending, protocol.AuthQRRefreshRequired) || rs.QRCodeText != "" || rs.QRCodeImage != "")
				r.check("auth.qr-refresh", ok, "auth.status.ack without an error, a valid status and, while pending, qr_code_text or qr_code_image",
					describe(f, err)+fmt.Sprintf(" status %q", rs.Status), s.redact(string(f.data)))
			}
		}
		f, err = c.request(ctx, c.newEnvelope(protocol.TypeAuthCancel, ch, protocol.AuthCancelPayload{AuthSessionID: st.AuthSessionID}))
		var ca protocol.AuthCancelAckPayload
		ok = err == nil && f.env.Type == protocol.TypeAuthCancelAck && f.env.Error == nil && f.env.DecodePayload(&ca) == nil &&
			oneOf(ca.Status, protocol.CancelCanceled, protocol.CancelIgnored, protocol.CancelNotFound)
		r.check("auth.cancel", ok, "auth.cancel.ack with status canceled, ignored or not_found", describe(f, err)+fmt.Sprintf(" status %q", ca.Status), s.redact(string(f.data)))
	}
}

// probeToolsUnauth checks tool.invoke rejections before sign-in.
func probeToolsUnauth(ctx context.Context, s *session, r *recorder) {
	if !needPrimary(s, r) {
		return
	}
	c := s.primary
	if r.want("tool.unknown") {
		f, err := c.request(ctx, c.newEnvelope(protocol.TypeToolInvoke, s.channelID, protocol.ToolInvokePayload{
			ToolID: "conformance_no_such_tool", Arguments: channelArgs(s.channelID)}))
		_, rejected := rejection(f, err)
		r.check("tool.unknown", rejected, "tool.invoke.ack with an error, or an error packet", describe(f, err), s.redact(string(f.data)))
	}
	if r.any("tool.unauthenticated", "tool.unauthenticated-code") {
		// Not signed in, the channel must be refused before any argument
		// matters, so no argument is invented here either.
		id, args := s.unauthTool(s.channelID)
		f, err := c.request(ctx, c.newEnvelope(protocol.TypeToolInvoke, s.channelID, protocol.ToolInvokePayload{
			ToolID: id, Arguments: args, Context: &protocol.ToolContext{ToolCallID: "call_conformance_unauth"}}))
		code, rejected := rejection(f, err)
		packet := s.redact(string(f.data))
		r.check("tool.unauthenticated", rejected, "an error", describe(f, err), packet)
		r.check("tool.unauthenticated-code", code == string(protocol.CodeConnectionNotAuthenticated), "error code connection_not_authenticated", describe(f, err), packet)
	}
}

// probeIMv2NotOpen sends chat.message on a channel that is not open.
func probeIMv2NotOpen(ctx context.Context, s *session, r *recorder) {
	if !needPrimary(s, r) {
		return
	}
	c := s.primary
	ch := s.closedChannel
	if ch == "" {
		ch = "cch_conformance_not_open"
	}
	env := c.newEnvelope(protocol.TypeChatMessage, ch, protocol.ChatMessagePayload{MessageID: "conf-not-open", Text: "xconn conformance check"})
	f, err := c.request(ctx, env)
	code, _ := rejection(f, err)
	if err == nil && f.env.Type == protocol.TypeChatMessageAck {
		var a protocol.ChatAckPayload
		if f.env.DecodePayload(&a) == nil && a.Status == protocol.AckRejected {
			code = a.Code
		}
	}
	r.check("imv2.channel-not-open", code == string(protocol.CodeChannelNotOpen), "code channel_not_open (error packet or rejected ack)", describe(f, err), s.redact(string(f.data)))
}

// adopt makes id the main channel in place of old: the Connector reissued
// it on reopen (section 8.3).
func (s *session) adopt(old, id string) {
	if old == id || id == "" {
		return
	}
	s.reissued = append(s.reissued, old+" → "+id)
	if s.channelID == old {
		s.channelID = id
	}
	if s.signIn.channel == old {
		s.signIn.channel = id
	}
}

// reopenOn sends channel.open for the main channel on c and adopts the id
// the answer names. It reports false, with s.primaryLost set to the cause,
// when the channel could not be reopened.
func (s *session) reopenOn(ctx context.Context, c *wsConn) bool {
	old := s.channelID
	f, ack, err := s.openChannel(ctx, c, old)
	if err != nil || ack == nil || ack.ConnectorChannelID == "" {
		s.primaryLost = fmt.Sprintf("channel.open of main channel %s on the main connection was answered by %s", old, describe(f, err))
		s.channelID = ""
		return false
	}
	s.adopt(old, ack.ConnectorChannelID)
	return true
}
