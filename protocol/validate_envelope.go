package protocol

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/xconn/xconn/internal/jsonbytes"
)

// ValidateEnvelope checks the envelope rules of sections 7 and 8: schema,
// packet_id and type are present; time is not negative; connector_channel_id
// is present on user-level packets (the first channel.open may leave it
// empty); request_id is present on common requests and acks; reply_to is
// present on chat.message.ack; an error object has a code and a packet of
// type "error" carries one; a payload, when present, is a JSON object.
// Unknown members whose names differ from a declared one only in case
// ("Type" next to "type") are violations. Unknown types get the generic
// rules only. It is pure and safe for
// concurrent use.
func ValidateEnvelope(e *Envelope) Violations {
	var vs Violations
	if e == nil {
		vs.add("", "packet is missing")
		return vs
	}
	if e.Schema != PacketSchema {
		vs.add("schema", "must be %q", PacketSchema)
	}
	if e.PacketID == "" {
		vs.add("packet_id", "is required")
	}
	if e.Type == "" {
		vs.add("type", "is required")
	}
	if e.Time < 0 {
		vs.add("time", "must not be negative")
	}
	if spec, ok := LookupPacket(e.Type); ok {
		if spec.UserLevel && e.ConnectorChannelID == "" && e.Type != TypeChannelOpen {
			vs.add("connector_channel_id", "is required on the user-level packet %s", e.Type)
		}
		if spec.Profile == "" && (spec.Request || spec.IsAck) && e.RequestID == "" {
			vs.add("request_id", "is required on %s", e.Type)
		}
	}
	if e.Type == TypeChatMessageAck && e.ReplyTo == "" {
		vs.add("reply_to", "is required on %s and must be the packet_id of the acknowledged chat.message", e.Type)
	}
	checkCaseVariants(e, e.Extensions, "", &vs)
	if e.Error != nil {
		checkCaseVariants(e.Error, e.Error.Extensions, "error", &vs)
	}
	if e.Error != nil && e.Error.Code == "" {
		vs.add("error.code", "is required")
	}
	if e.Type == TypeError && e.Error == nil {
		vs.add("error", "is required on a packet of type error")
	}
	if len(e.Payload) > 0 && !isJSONObject(e.Payload) {
		vs.add("payload", payloadNotObject)
	}
	return vs
}

const payloadNotObject = "must be a JSON object"

// ValidatePacketJSON decodes one packet and validates it against the
// official envelope schema, [ValidateEnvelope] and [ValidatePayload] for
// direction d. It returns the envelope whenever it decodes. It is safe for
// concurrent use.
func ValidatePacketJSON(data []byte, d Direction) (*Envelope, Violations) {
	schema := ValidateSchema(SchemaPacket, data)
	e, err := DecodeEnvelope(data)
	if err != nil {
		var vs Violations
		vs.add("", "%v", err)
		return nil, mergeSchemaAndRules(vs, schema)
	}
	rules := ValidateEnvelope(e)
	rules = append(rules, ValidatePayload(e, d)...)
	return e, mergeSchemaAndRules(rules, schema)
}

// payloadObject returns the payload's members, or false when the payload is
// present but not a JSON object. An absent payload is an empty object.
// The map is only read: an empty object is a nil map, and member values
// share raw's bytes.
func payloadObject(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	if len(jsonbytes.TrimSpace(raw)) == 0 {
		return nil, true
	}
	if !isJSONObject(raw) {
		return nil, false
	}
	// One walk of the object, already known valid; encoding/json (several
	// µs even for {}, 14 % of the SDK's CPU when a host reopens its
	// channels) only when a member name has escapes to decode.
	var m map[string]json.RawMessage
	if jsonbytes.EachMember(raw, func(key, val []byte) bool {
		if !utf8.Valid(key) {
			return false // encoding/json turns bad bytes into U+FFFD
		}
		if m == nil {
			m = make(map[string]json.RawMessage, 4)
		}
		m[string(key)] = json.RawMessage(val)
		return true
	}) {
		return m, true
	}
	m = nil
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return m, true
}
