package delivery

import (
	"context"
	"errors"

	"github.com/xconn/xconn/protocol"
)

// AckResult converts a received chat.message.ack into the value a
// [SendFunc] returns: nil for accepted and duplicate, a *protocol.Error
// carrying the code and retryable flag for rejected. A rejection without a
// retryable flag is treated as retryable=false (a deterministic failure must
// not be retried forever), and an unknown status is a non-retryable
// invalid_packet error.
func AckResult(ack protocol.ChatAckPayload) error {
	switch ack.Status {
	case protocol.AckAccepted, protocol.AckDuplicate:
		return nil
	case protocol.AckRejected:
		code := protocol.Code(ack.Code)
		if code == "" {
			code = protocol.CodeInvalidPacket
		}
		retry := ack.Retryable != nil && *ack.Retryable
		return &protocol.Error{Code: code, Message: ack.Message, Retryable: retry}
	}
	return &protocol.Error{Code: protocol.CodeInvalidPacket, Message: "unknown chat.message.ack status"}
}

// IsTemporary reports whether a send error leaves the entry pending for a
// retry (IM v1 §7.3, IM v2 §7): every error except a *protocol.Error with
// Retryable false, and channel_busy and channel_not_open are temporary
// whatever their flag. A nil error is not temporary.
func IsTemporary(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	pe := protocol.AsError(err)
	if pe == nil || pe.Retryable {
		return true
	}
	switch pe.Code {
	case protocol.CodeChannelBusy, protocol.CodeChannelNotOpen:
		return true
	}
	return false
}
