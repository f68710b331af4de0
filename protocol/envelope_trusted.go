package protocol

import (
	"strconv"

	"github.com/xconn/xconn/internal/jsonbytes"
)

// AppendTrusted appends the encoding of e to b, byte for byte what
// [Envelope.MarshalJSON] writes, in one pass and without checking
// e.Payload: the caller vouches that it is valid, compact JSON (for
// example the output of encoding/json). It reports false, having appended
// nothing, for an envelope it leaves to MarshalJSON: one with an error body,
// extensions, or a string member that needs escaping. It is for the hot
// send paths of the SDK and the host, which build their payloads themselves.
func (e *Envelope) AppendTrusted(b []byte) ([]byte, bool) {
	if b == nil {
		// The members' names, quotes and the time take under 128 bytes.
		b = make([]byte, 0, 128+len(e.Schema)+len(e.PacketID)+len(e.RequestID)+len(e.ReplyTo)+
			len(e.ConnectorChannelID)+len(e.Type)+len(e.Payload))
	}
	b, ok := e.AppendTrustedHead(b)
	if !ok {
		return b, false
	}
	if len(e.Payload) > 0 {
		b = append(b, `,"payload":`...)
		b = append(b, e.Payload...)
	}
	return append(b, '}'), true
}

// AppendTrustedHead appends what [Envelope.AppendTrusted] appends for e up
// to, not including, its payload member and closing brace, with the same
// conditions; e.Payload is not read. It is for a caller that writes the
// payload straight into b: it then appends `,"payload":`, the payload it
// vouches for and '}'.
func (e *Envelope) AppendTrustedHead(b []byte) ([]byte, bool) {
	if e.Error != nil || len(e.Extensions) > 0 ||
		!jsonbytes.Plain(e.Schema) || !jsonbytes.Plain(e.PacketID) || !jsonbytes.Plain(e.RequestID) ||
		!jsonbytes.Plain(e.ReplyTo) || !jsonbytes.Plain(e.ConnectorChannelID) || !jsonbytes.Plain(e.Type) {
		return b, false
	}
	b = jsonbytes.AppendMember(b, `{"schema":`, e.Schema)
	b = jsonbytes.AppendMember(b, `,"packet_id":`, e.PacketID)
	if e.RequestID != "" {
		b = jsonbytes.AppendMember(b, `,"request_id":`, e.RequestID)
	}
	if e.ReplyTo != "" {
		b = jsonbytes.AppendMember(b, `,"reply_to":`, e.ReplyTo)
	}
	if e.ConnectorChannelID != "" {
		b = jsonbytes.AppendMember(b, `,"connector_channel_id":`, e.ConnectorChannelID)
	}
	b = jsonbytes.AppendMember(b, `,"type":`, e.Type)
	if e.Time != 0 {
		b = append(b, `,"time":`...)
		b = strconv.AppendInt(b, e.Time, 10)
	}
	return b, true
}
