package protocol

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error code carried on the wire.
type Code string

// Common error codes of section 8.23.
const (
	CodeInvalidPacket                     Code = "invalid_packet"
	CodeHelloRequired                     Code = "hello_required"
	CodeConnectorCardIDMismatch           Code = "connector_card_id_mismatch"
	CodeConnectorIDMismatch               Code = "connector_id_mismatch"
	CodeChannelNotOpen                    Code = "channel_not_open"
	CodeConnectorChannelIDRequired        Code = "connector_channel_id_required"
	CodeConnectorChannelNotOwned          Code = "connector_channel_not_owned"
	CodeConnectorChannelConnectorMismatch Code = "connector_channel_connector_mismatch"
	CodeConnectorChannelUnavailable       Code = "connector_channel_unavailable"
	CodeConnectionNotFound                Code = "connection_not_found"
	CodeConnectionNotAuthenticated        Code = "connection_not_authenticated"
	CodeAuthSessionNotFound               Code = "auth_session_not_found"
	CodeToolInvokeFailed                  Code = "tool_invoke_failed"
	CodeUnsupportedPacket                 Code = "unsupported_packet"
)

// Codes used by xconn beyond the list of section 8.23. The protocol names
// target_delivery_failed (IM v2 section 7) and channel_busy (IM v1 section
// 7.3); it leaves the others to implementations, so xconn fixes them here.
const (
	// CodeUnsupportedProtocolVersion rejects a hello without a version or
	// below the admission floor.
	CodeUnsupportedProtocolVersion Code = "unsupported_protocol_version"
	// CodeTargetDeliveryFailed: the target system refused or failed a delivery.
	CodeTargetDeliveryFailed Code = "target_delivery_failed"
	// CodeChannelBusy: a temporary failure; the sender retries later.
	CodeChannelBusy Code = "channel_busy"
	// CodeCapacityExceeded: a bounded table or queue is full (IM v1
	// section 8 names it as the reason recorded for an eviction). xconn
	// also answers it to a hello for a new connector_id when the
	// Connector's instance table holds only connector_ids within their
	// reconnection grace (section 8.2 forbids evicting them).
	CodeCapacityExceeded Code = "capacity_exceeded"
	// CodeMessageConflict: a message_id seen before arrived with other content.
	CodeMessageConflict Code = "message_conflict"
	// CodeDeltaSequenceInvalid: a delta skipped a sequence number or conflicts
	// with one already received.
	CodeDeltaSequenceInvalid Code = "delta_sequence_invalid"
	// CodeUnknownTool: tool_id is not in the Card.
	CodeUnknownTool Code = "unknown_tool"
	// CodeInvalidArguments: tool arguments fail the tool's input_schema.
	CodeInvalidArguments Code = "invalid_arguments"
	// CodeToolCallConflict: a tool_call_id was reused with other arguments.
	CodeToolCallConflict Code = "tool_call_conflict"
	// CodeToolTimeout: the tool handler did not finish in time.
	CodeToolTimeout Code = "tool_timeout"
	// CodeAuthFlowNotFound: auth.start names a flow the Card lacks.
	CodeAuthFlowNotFound Code = "auth_flow_not_found"
	// CodeInvalidAuthInput: form input fails the flow's fields.
	CodeInvalidAuthInput Code = "invalid_auth_input"
	// CodeInternal: an unexpected failure inside the peer.
	CodeInternal Code = "internal_error"
)

// Error is a protocol error that carries its wire code. Functions of xconn
// return *Error (possibly wrapped) for every failure that has a wire
// representation; use [AsError] or errors.As to recover it. Message must
// never contain a secret.
type Error struct {
	Code    Code
	Message string
	// Retryable is meaningful for chat.message.ack rejections: whether a
	// resend of the same message can succeed.
	Retryable bool
}

// Errorf returns an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Message
}

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, &protocol.Error{Code: protocol.CodeChannelNotOpen}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Wire returns the envelope error object for e.
func (e *Error) Wire() *ErrorBody { return &ErrorBody{Code: string(e.Code), Message: e.Message} }

// ErrorFromWire converts an envelope error object into an *Error. It returns
// nil for nil.
func ErrorFromWire(b *ErrorBody) *Error {
	if b == nil {
		return nil
	}
	return &Error{Code: Code(b.Code), Message: b.Message}
}

// AsError returns the *Error in err's chain, or nil.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// CodeOf returns the wire code of err: its *Error's code, or fallback when the
// chain holds none.
func CodeOf(err error, fallback Code) Code {
	if e := AsError(err); e != nil {
		return e.Code
	}
	return fallback
}
