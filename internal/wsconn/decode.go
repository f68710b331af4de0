package wsconn

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/xconn/xconn/protocol"
)

// decodeEnvelope decodes one inbound frame with protocol.DecodeEnvelope's
// result. The common envelope (only the members of section 7 other than
// error, plain strings, an integer time, a non-null payload) is read in one
// pass after one validity check; any other frame goes to
// protocol.DecodeEnvelope, which also reports the errors.
func decodeEnvelope(data []byte) (*protocol.Envelope, error) {
	if env := scanEnvelope(data); env != nil {
		return env, nil
	}
	return protocol.DecodeEnvelope(data)
}

// Indexes of the string members of an envelope in scanEnvelope's spans.
const (
	fSchema = iota
	fPacketID
	fRequestID
	fReplyTo
	fChannel
	fType
	nFields
)

// scanEnvelope returns the envelope of data when it has the common shape,
// else nil. The schema and a known type take no allocation; the other
// string members share one.
func scanEnvelope(data []byte) *protocol.Envelope {
	var (
		spans [nFields][]byte
		seen  [nFields]bool
		env   = new(protocol.Envelope)
	)
	field := func(i int, val []byte) bool {
		body, ok := plainString(val)
		spans[i], seen[i] = body, ok
		return ok
	}
	// One pass checks the frame (as json.Valid) and splits its members.
	ok := eachValidMember(data, func(key, val []byte) bool {
		switch string(key) {
		case "schema":
			return field(fSchema, val)
		case "packet_id":
			return field(fPacketID, val)
		case "request_id":
			return field(fRequestID, val)
		case "reply_to":
			return field(fReplyTo, val)
		case "connector_channel_id":
			return field(fChannel, val)
		case "type":
			return field(fType, val)
		case "time":
			n, ok := smallInt(val)
			env.Time = n
			return ok
		case "payload":
			if string(val) == "null" {
				return false
			}
			env.Payload = append(json.RawMessage(nil), val...)
			return true
		}
		return false // error, an extension, an escaped name
	})
	if !ok {
		return nil
	}
	dst := [nFields]*string{&env.Schema, &env.PacketID, &env.RequestID, &env.ReplyTo, &env.ConnectorChannelID, &env.Type}
	if seen[fSchema] && string(spans[fSchema]) == protocol.PacketSchema {
		env.Schema, seen[fSchema] = protocol.PacketSchema, false
	}
	if seen[fType] {
		if t, ok := knownType(spans[fType]); ok {
			env.Type, seen[fType] = t, false
		}
	}
	n := 0
	for i := range spans {
		if seen[i] {
			n += len(spans[i])
		}
	}
	if n == 0 {
		return env
	}
	var sb strings.Builder
	sb.Grow(n)
	for i := range spans {
		if seen[i] {
			sb.Write(spans[i])
		}
	}
	all, off := sb.String(), 0
	for i := range spans {
		if seen[i] {
			*dst[i] = all[off : off+len(spans[i])]
			off += len(spans[i])
		}
	}
	return env
}

// knownType returns the constant of a packet type, so that decoding it
// allocates nothing.
func knownType(b []byte) (string, bool) {
	switch string(b) {
	case protocol.TypePing:
		return protocol.TypePing, true
	case protocol.TypePong:
		return protocol.TypePong, true
	case protocol.TypeToolInvoke:
		return protocol.TypeToolInvoke, true
	case protocol.TypeToolInvokeAck:
		return protocol.TypeToolInvokeAck, true
	case protocol.TypeChatMessage:
		return protocol.TypeChatMessage, true
	case protocol.TypeChatMessageAck:
		return protocol.TypeChatMessageAck, true
	case protocol.TypeChatMessageDelta:
		return protocol.TypeChatMessageDelta, true
	case protocol.TypeChatActivity:
		return protocol.TypeChatActivity, true
	case protocol.TypeToolProgressPush:
		return protocol.TypeToolProgressPush, true
	case protocol.TypeChannelOpen:
		return protocol.TypeChannelOpen, true
	case protocol.TypeChannelOpenAck:
		return protocol.TypeChannelOpenAck, true
	case protocol.TypeDescriptorPush:
		return protocol.TypeDescriptorPush, true
	case protocol.TypeError:
		return protocol.TypeError, true
	}
	return "", false
}

// smallInt parses a JSON integer of at most 18 digits (no fraction, no
// exponent), which always fits an int64.
func smallInt(val []byte) (int64, bool) {
	neg := len(val) > 0 && val[0] == '-'
	digits := val
	if neg {
		digits = val[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// plainString returns the body of the JSON string val when it has no
// escapes and is valid UTF-8 (what encoding/json would decode unchanged).
func plainString(val []byte) ([]byte, bool) {
	if len(val) < 2 || val[0] != '"' || val[len(val)-1] != '"' {
		return nil, false
	}
	body := val[1 : len(val)-1]
	for _, c := range body {
		if c == '\\' || c == '"' || c < 0x20 {
			return nil, false
		}
	}
	if !utf8.Valid(body) {
		return nil, false
	}
	return body, true
}
