package protocol

import (
	"encoding/json"
	"fmt"
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

func (e *Envelope) UnmarshalJSON(b []byte) error {
	type plain Envelope
	return decodeWithExtensions(b, (*plain)(e), &e.Extensions)
}
func (e Envelope) MarshalJSON() ([]byte, error) {
	type plain Envelope
	return encodeWithExtensions((*plain)(&e), e.Extensions)
}
func (e *ErrorBody) UnmarshalJSON(b []byte) error {
	type plain ErrorBody
	return decodeWithExtensions(b, (*plain)(e), &e.Extensions)
}
func (e ErrorBody) MarshalJSON() ([]byte, error) {
	type plain ErrorBody
	return encodeWithExtensions((*plain)(&e), e.Extensions)
}
