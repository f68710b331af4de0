package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"

	"github.com/xconn/xconn/internal/jsonbytes"
)

// Envelope is the data-plane packet envelope (section 7). Every WebSocket text
// frame carries exactly one. Payload stays raw until the receiver knows the
// type; decode it with [Envelope.DecodePayload] into the matching payload
// struct of this package.
type Envelope struct {
	Schema             string          `json:"schema"`
	PacketID           string          `json:"packet_id"`
	RequestID          string          `json:"request_id,omitempty"`
	ReplyTo            string          `json:"reply_to,omitempty"`
	ConnectorChannelID string          `json:"connector_channel_id,omitempty"`
	Type               string          `json:"type"`
	Time               int64           `json:"time,omitempty"`
	Payload            json.RawMessage `json:"payload,omitempty"`
	Error              *ErrorBody      `json:"error,omitempty"`
	Extensions         Extensions      `json:"-"`
}

// ErrorBody is the envelope's "error" object: a stable machine-readable code
// and a message for developers that never contains a secret.
type ErrorBody struct {
	Code       string     `json:"code"`
	Message    string     `json:"message,omitempty"`
	Extensions Extensions `json:"-"`
}

// DecodeEnvelope decodes one packet. It fails only on malformed JSON or
// mistyped fields; call [ValidateEnvelope] for the envelope rules.
func DecodeEnvelope(data []byte) (*Envelope, error) {
	if isNull(jsonbytes.TrimSpace(data)) { // UnmarshalJSON takes null as "no value"; a packet is an object
		return nil, &Error{Code: CodeInvalidPacket, Message: "malformed packet: a packet is a JSON object, not null"}
	}
	var e Envelope
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, &Error{Code: CodeInvalidPacket, Message: "malformed packet: " + err.Error()}
	}
	return &e, nil
}

// Encode returns the JSON encoding of the envelope.
func (e *Envelope) Encode() ([]byte, error) { return json.Marshal(e) }

// DecodePayload decodes the payload into v. An absent payload decodes as an
// empty object.
func (e *Envelope) DecodePayload(v any) error {
	if len(e.Payload) == 0 || string(e.Payload) == "null" {
		return json.Unmarshal([]byte("{}"), v)
	}
	if err := json.Unmarshal(e.Payload, v); err != nil {
		return &Error{Code: CodeInvalidPacket, Message: fmt.Sprintf("%s payload: %v", e.Type, err)}
	}
	return nil
}

// SetPayload encodes v as the payload.
func (e *Envelope) SetPayload(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s payload: %w", e.Type, err)
	}
	e.Payload = b
	return nil
}

// Reply returns a new envelope of type typ that answers e: it carries e's
// request_id, reply_to = e's packet_id, and e's channel. The caller sets
// PacketID, Time and the payload.
func (e *Envelope) Reply(typ string) *Envelope {
	return &Envelope{
		Schema:             PacketSchema,
		RequestID:          e.RequestID,
		ReplyTo:            e.PacketID,
		ConnectorChannelID: e.ConnectorChannelID,
		Type:               typ,
	}
}

// UnmarshalJSON decodes an envelope in one pass over its members; unknown
// members go to Extensions. It has the semantics of encoding/json for the
// declared members (null leaves a field unset, a mistyped value is an error)
// and for the whole value (null leaves e as it is; [DecodeEnvelope] refuses
// it, a packet being an object).
func (e *Envelope) UnmarshalJSON(b []byte) error {
	if isNull(jsonbytes.TrimSpace(b)) {
		return nil // the encoding/json convention: null leaves the value as it is
	}
	if !json.Valid(b) {
		var v any
		return json.Unmarshal(b, &v) // the same syntax error encoding/json reports
	}
	*e = Envelope{}
	err := eachMember(b, func(key, val []byte) error {
		k := key[1 : len(key)-1]
		if bytes.IndexByte(k, '\\') >= 0 {
			k = []byte(rawKeyString(key))
		}
		switch string(k) {
		case "schema":
			return decodeString(val, &e.Schema)
		case "packet_id":
			return decodeString(val, &e.PacketID)
		case "request_id":
			return decodeString(val, &e.RequestID)
		case "reply_to":
			return decodeString(val, &e.ReplyTo)
		case "connector_channel_id":
			return decodeString(val, &e.ConnectorChannelID)
		case "type":
			return decodeString(val, &e.Type)
		case "time":
			if isNull(val) {
				return nil
			}
			return json.Unmarshal(val, &e.Time)
		case "payload":
			if isNull(val) {
				e.Payload = nil
				return nil
			}
			e.Payload = cloneRaw(val)
			return nil
		case "error":
			if isNull(val) {
				e.Error = nil
				return nil
			}
			e.Error = new(ErrorBody)
			return json.Unmarshal(val, e.Error)
		}
		if e.Extensions == nil {
			e.Extensions = Extensions{}
		}
		e.Extensions[rawKeyString(key)] = cloneRaw(val)
		return nil
	})
	if err == errNotObject {
		return &json.UnmarshalTypeError{Value: "non-object", Type: reflect.TypeOf(e).Elem()}
	}
	return err
}

// MarshalJSON encodes the envelope without reflection, in the member order
// of the spec, followed by extensions in sorted order.
func (e Envelope) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 128+len(e.Payload))
	b = append(b, `{"schema":`...)
	b = appendJSONString(b, e.Schema)
	b = append(b, `,"packet_id":`...)
	b = appendJSONString(b, e.PacketID)
	if e.RequestID != "" {
		b = append(b, `,"request_id":`...)
		b = appendJSONString(b, e.RequestID)
	}
	if e.ReplyTo != "" {
		b = append(b, `,"reply_to":`...)
		b = appendJSONString(b, e.ReplyTo)
	}
	if e.ConnectorChannelID != "" {
		b = append(b, `,"connector_channel_id":`...)
		b = appendJSONString(b, e.ConnectorChannelID)
	}
	b = append(b, `,"type":`...)
	b = appendJSONString(b, e.Type)
	if e.Time != 0 {
		b = append(b, `,"time":`...)
		b = strconv.AppendInt(b, e.Time, 10)
	}
	if len(e.Payload) > 0 {
		if !json.Valid(e.Payload) {
			return nil, fmt.Errorf("envelope %s: payload is not valid JSON", e.Type)
		}
		b = append(b, `,"payload":`...)
		b = append(b, e.Payload...)
	}
	if e.Error != nil {
		eb, err := json.Marshal(e.Error)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"error":`...)
		b = append(b, eb...)
	}
	b = append(b, '}')
	if len(e.Extensions) == 0 {
		return b, nil
	}
	type plain Envelope
	return appendExtensions(b, reflect.TypeOf(plain{}), e.Extensions), nil
}

func (e *ErrorBody) UnmarshalJSON(b []byte) error {
	type plain ErrorBody
	return decodeWithExtensions(b, (*plain)(e), &e.Extensions)
}
func (e ErrorBody) MarshalJSON() ([]byte, error) {
	type plain ErrorBody
	return encodeWithExtensions((*plain)(&e), e.Extensions)
}
