package connector

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/xconn/xconn/protocol"
)

// Encoding channel.open.ack without encoding/json's reflection.
//
// The Descriptor is most of the cost of answering an open: encoding/json
// walks it by reflection and, because each level has a MarshalJSON (for
// extension members), checks and compacts every nested level's bytes once
// more at each enclosing level. A Descriptor built by buildDescriptor has
// no extension members, so the ack payload is appended here directly, with
// the bytes json.Marshal would give (same member order and omitempty
// rules, same string escaping); TestEncodeOpenAckMatchesJSON holds the two
// equal and TestEncodeOpenAckKnowsEveryField fails when protocol adds a
// member, so that this encoder is updated with it. A Descriptor with
// extension members takes encoding/json.

// encodeOpenAck encodes the channel.open.ack payload of channel id with
// Descriptor d: the bytes json.Marshal gives for
// protocol.ChannelOpenAckPayload{ConnectorChannelID: id,
// ConnectionDescriptor: d}.
func encodeOpenAck(id string, d *protocol.Descriptor) (json.RawMessage, error) {
	if d == nil || hasExtensions(d) {
		return json.Marshal(protocol.ChannelOpenAckPayload{ConnectorChannelID: id, ConnectionDescriptor: d})
	}
	return appendOpenAck(make([]byte, 0, 512+128*len(d.Tools)), id, d), nil
}

// appendOpenAck appends the encodeOpenAck payload of d, which has no
// extension members.
func appendOpenAck(b []byte, id string, d *protocol.Descriptor) []byte {
	b = append(b, `{"connector_channel_id":`...)
	b = appendString(b, id)
	b = append(b, `,"connection_descriptor":`...)
	b = appendDescriptor(b, d)
	return append(b, '}')
}

// encodeOpenAckFrame encodes the whole channel.open.ack frame answering
// req for channel id with Descriptor d, which has no extension members:
// the bytes protocol.Envelope.MarshalJSON gives for req.Reply with
// packetID, t, id as its connector_channel_id and the encodeOpenAck
// payload, in one buffer (MarshalJSON would check the payload with
// json.Valid once more; this payload is built here, member by member, so
// the check can only pass). It reports false for an envelope
// protocol.Envelope.AppendTrustedHead leaves to MarshalJSON (ids that need
// escaping). TestEncodeOpenAckFrameMatchesEnvelope holds the two equal.
func encodeOpenAckFrame(req *protocol.Envelope, packetID string, t int64, id string, d *protocol.Descriptor) ([]byte, bool) {
	ack := req.Reply(protocol.TypeChannelOpenAck)
	ack.PacketID, ack.Time, ack.ConnectorChannelID = packetID, t, id
	b, ok := ack.AppendTrustedHead(make([]byte, 0, 768+128*len(d.Tools)+len(req.RequestID)+len(req.PacketID)))
	if !ok {
		return nil, false
	}
	b = append(b, `,"payload":`...)
	b = appendOpenAck(b, id, d)
	return append(b, '}'), true
}

// appendDescriptor appends d, which has no extension members.
func appendDescriptor(b []byte, d *protocol.Descriptor) []byte {
	c := &d.Connection
	b = append(b, `{"schema":`...)
	b = appendString(b, d.Schema)
	b = append(b, `,"connection":{"connector_card_id":`...)
	b = appendString(b, c.ConnectorCardID)
	b = append(b, `,"connector_id":`...)
	b = appendString(b, c.ConnectorID)
	b = append(b, `,"connector_channel_id":`...)
	b = appendString(b, c.ConnectorChannelID)
	b = append(b, `,"target_type":`...)
	b = appendString(b, c.TargetType)
	b = append(b, `,"profiles":`...)
	if c.Profiles == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, p := range c.Profiles {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, p)
		}
		b = append(b, ']')
	}
	b = append(b, `,"status":`...)
	b = appendString(b, c.Status)
	t := &d.Target
	b = append(b, `},"target":{"provider":`...)
	b = appendString(b, t.Provider)
	if t.Label != "" {
		b = append(b, `,"label":`...)
		b = appendString(b, t.Label)
	}
	b = append(b, `,"display_name":`...)
	b = appendString(b, t.DisplayName)
	if t.AccountHint != "" {
		b = append(b, `,"account_hint":`...)
		b = appendString(b, t.AccountHint)
	}
	b = append(b, '}')
	if len(d.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i := range d.Tools {
			ts := &d.Tools[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"tool_id":`...)
			b = appendString(b, ts.ToolID)
			b = append(b, `,"status":`...)
			b = appendString(b, ts.Status)
			if ts.TargetPermissionState != "" {
				b = append(b, `,"target_permission_state":`...)
				b = appendString(b, ts.TargetPermissionState)
			}
			if ts.Reason != "" {
				b = append(b, `,"reason":`...)
				b = appendString(b, ts.Reason)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendString appends s as a JSON string the way json.Marshal writes it:
// printable ASCII other than the characters it escapes is copied; any
// other string is left to json.Marshal itself (HTML escaping, control
// characters, invalid UTF-8, U+2028 and U+2029).
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// hasExtensions reports whether d holds extension members at any level.
func hasExtensions(d *protocol.Descriptor) bool {
	if len(d.Extensions) > 0 || len(d.Connection.Extensions) > 0 || len(d.Target.Extensions) > 0 {
		return true
	}
	for _, t := range d.Tools {
		if len(t.Extensions) > 0 {
			return true
		}
	}
	return false
}
