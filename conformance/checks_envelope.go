package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/coder/websocket"
	"github.com/xconn/xconn/protocol"
)

// probeEnvelope sends malformed packets, each on its own hello-completed
// connection so that a Connector closing the socket does not hide later
// findings.
func probeEnvelope(ctx context.Context, s *session, r *recorder) {
	if !needPrimary(s, r) {
		return
	}
	isError := func(f frame) bool { return f.env != nil && f.env.Type == protocol.TypeError }

	if r.any("envelope.invalid-json", "envelope.invalid-json-code") {
		withConn(ctx, s, r, []string{"envelope.invalid-json", "envelope.invalid-json-code"}, func(c *wsConn) {
			f, err := sendAwait(ctx, c, []byte(`{"schema": "xagent.connector.packet/v1", "packet_id": `), isError)
			code, _ := rejection(f, err)
			packet := s.redact(string(f.data))
			r.check("envelope.invalid-json", err == nil && isError(f), "an error packet", describe(f, err), packet)
			r.check("envelope.invalid-json-code", code == string(protocol.CodeInvalidPacket), "error code invalid_packet", describe(f, err), packet)
		})
	}
	if r.want("envelope.missing-fields") {
		var bad []string
		packet := ""
		for _, field := range []string{"schema", "packet_id", "type"} {
			withConn(ctx, s, r, []string{"envelope.missing-fields"}, func(c *wsConn) {
				env := c.newEnvelope(protocol.TypeChannelOpen, "", protocol.EmptyPayload{})
				data := envelopeWithout(env, field)
				f, err := sendAwait(ctx, c, data, func(f frame) bool { return f.env != nil && (isError(f) || answers(f, env)) })
				if _, rejected := rejection(f, err); !rejected {
					bad = append(bad, fmt.Sprintf("without %s: %s", field, describe(f, err)))
					packet = s.redact(string(f.data))
				}
			})
		}
		r.check("envelope.missing-fields", len(bad) == 0, "an error packet for each", strings.Join(bad, "; "), packet)
	}
	if r.any("envelope.channel-id-required", "envelope.channel-id-required-code") {
		c := s.primary
		env := c.newEnvelope(protocol.TypeDescriptorGet, "", protocol.EmptyPayload{})
		f, err := c.request(ctx, env)
		code, rejected := rejection(f, err)
		packet := s.redact(string(f.data))
		r.check("envelope.channel-id-required", rejected, "an error", describe(f, err), packet)
		r.check("envelope.channel-id-required-code", code == string(protocol.CodeConnectorChannelIDRequired), "error code connector_channel_id_required", describe(f, err), packet)
	}
	if r.want("envelope.unsupported-type") {
		c := s.primary
		env := c.newEnvelope("conformance.unknown", s.channelID, protocol.EmptyPayload{})
		f, err := c.request(ctx, env)
		code, _ := rejection(f, err)
		r.check("envelope.unsupported-type", code == string(protocol.CodeUnsupportedPacket), "error code unsupported_packet", describe(f, err), s.redact(string(f.data)))
	}
	if r.any("ping.pong", "ping.request-id") {
		c := s.primary
		env := c.newEnvelope(protocol.TypePing, "", protocol.EmptyPayload{})
		if err := c.send(ctx, env); err != nil {
			r.skipRest(err.Error())
			return
		}
		f, err := c.await(ctx, s.opts.timeout(), func(f frame) bool { return f.env != nil && f.env.Type == protocol.TypePong })
		packet := s.redact(string(f.data))
		r.check("ping.pong", err == nil, "pong", describe(f, err), packet)
		if err == nil {
			r.check("ping.request-id", f.env.RequestID == env.RequestID, "request_id "+env.RequestID, fmt.Sprintf("request_id %q", f.env.RequestID), packet)
		}
	}
}

// withConn runs fn on a fresh hello-completed connection, closing it after.
func withConn(ctx context.Context, s *session, r *recorder, ids []string, fn func(c *wsConn)) {
	c, err := s.openHello(ctx, "")
	if err != nil {
		for _, id := range ids {
			r.skip(id, "could not open a connection: "+err.Error())
		}
		return
	}
	defer c.close()
	fn(c)
}

// sendAwait writes data as a text frame and waits for a frame matching m.
func sendAwait(ctx context.Context, c *wsConn, data []byte, m func(frame) bool) (frame, error) {
	if err := c.sendRaw(ctx, websocket.MessageText, data); err != nil {
		return frame{}, err
	}
	return c.await(ctx, c.s.opts.timeout(), m)
}

// envelopeWithout encodes env without one member.
func envelopeWithout(env *protocol.Envelope, member string) []byte {
	data, _ := env.Encode() // envelopes built by the suite always encode
	var members map[string]json.RawMessage
	if json.Unmarshal(data, &members) != nil {
		return data
	}
	delete(members, member)
	out, _ := json.Marshal(members)
	return out
}
