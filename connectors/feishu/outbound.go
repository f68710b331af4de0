package feishu

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// textLimit is how long one Feishu text message may be.
var textLimit = connector.TextLimit{Max: MaxTextBytes, Unit: connector.TextUnitBytes}

// uuidOf is the idempotency key of one step of a tool call.
func uuidOf(channel, msgID string, step int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d", channel, msgID, step)))
	return hex.EncodeToString(h[:16])
}

// streamSend sends one text part of an assistant message (§6.1, §6.2).
func (c *Connector) streamSend(ctx context.Context, ch *connector.Channel, part connector.MessagePart, text string) (string, error) {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return "", err
	}
	t, err := c.replyTarget(ctx, ch, part.InReplyTo)
	if err != nil {
		return "", err
	}
	return cl.send(ctx, t, "text", textContent(text), part.Key)
}

// streamFile sends one file of a final where the message it answers was
// written.
func (c *Connector) streamFile(ctx context.Context, ch *connector.Channel, part connector.MessagePart, f *connector.File) error {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return err
	}
	t, err := c.replyTarget(ctx, ch, part.InReplyTo)
	if err != nil {
		return err
	}
	return cl.sendFile(ctx, t, f, part.Key)
}

// streamEdit edits a streamed message (§6.3). A refusal that is neither
// temporary nor about the token (the edit cap 230072, a recalled or too
// old message) means the message cannot be edited: the SDK sends the
// final anew.
func (c *Connector) streamEdit(ctx context.Context, ch *connector.Channel, id, text string) error {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return err
	}
	err = c.api.update(ctx, cl.cr, id, text)
	var ae *APIError
	if errors.As(err, &ae) && !ae.Temporary() && !tokenInvalid(ae.Code) {
		return fmt.Errorf("%w: %w", connector.ErrNotEditable, err)
	}
	return err
}

// deliveryError classifies a failed delivery: refused credentials make
// the channel expired; frequency limits, 5xx and network failures are
// retryable; other refusals are not. Messages are secret-free.
func (c *Connector) deliveryError(ctx context.Context, ch *connector.Channel, err error) error {
	c.log.Warn("feishu: delivery failed", "channel", ch.ID(), "err", err)
	if perr := protocol.AsError(err); perr != nil {
		return perr
	}
	var ae *APIError
	switch {
	case errors.As(err, &ae) && ae.Op == "tenant token" && !ae.Temporary():
		if serr := ch.SetStatus(ctx, protocol.StatusExpired); serr != nil {
			c.log.Warn("feishu: set status", "channel", ch.ID(), "err", serr)
		}
		return &protocol.Error{Code: protocol.CodeConnectionNotAuthenticated,
			Message: "Feishu no longer accepts the app's credentials: sign in again"}
	case errors.As(err, &ae):
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: ae.Temporary(),
			Message: fmt.Sprintf("Feishu %s: code %d %s", ae.Op, ae.Code, ae.Msg)}
	case isTemporary(err):
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: true, Message: "Feishu Open Platform unreachable"}
	}
	return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Message: "Feishu delivery failed"}
}

// SendInput is the input of feishu_message_send.
type SendInput struct {
	Text string            `json:"text" desc:"Text to send to the channel's default Feishu chat (the latest direct chat with the bot)."`
	File *connector.Upload `json:"file,omitempty" desc:"Optional file to send after the text: an upload reference (images as images, anything else as a file)."`
}

// SendResult is the result of feishu_message_send.
type SendResult struct {
	Status     string   `json:"status" enum:"sent"`
	MessageIDs []string `json:"message_ids"`
}

// sendTool is feishu_message_send. The SDK makes it idempotent by tool
// call id; Feishu's uuid covers a retry after a crash.
func (c *Connector) sendTool(ctx context.Context, call *connector.Call, in SendInput) (SendResult, error) {
	parts := textLimit.Split(in.Text)
	if len(parts) == 0 && in.File == nil {
		return SendResult{}, protocol.Errorf(protocol.CodeInvalidArguments, "text must not be empty")
	}
	cl, err := c.clients.Get(call.Channel)
	if err != nil {
		return SendResult{}, err
	}
	t, err := c.defaultTarget(ctx, call.Channel)
	if err != nil {
		return SendResult{}, err
	}
	res := SendResult{Status: "sent", MessageIDs: []string{}}
	// Feishu drops a second message with the same uuid for an hour: the
	// key of the call, or a fresh one for a call nothing identifies.
	key := call.IdempotencyKey
	if key == "" {
		key = connector.NewID("call_")
	}
	for i, p := range parts {
		id, err := cl.send(ctx, t, "text", textContent(p), uuidOf(call.Channel.ID(), "tool:"+key, i))
		if err != nil {
			return SendResult{}, c.deliveryError(ctx, call.Channel, err)
		}
		res.MessageIDs = append(res.MessageIDs, id)
	}
	if in.File != nil && in.File.File != nil {
		if err := cl.sendFile(ctx, t, in.File.File, uuidOf(call.Channel.ID(), "tool:"+key, len(parts))); err != nil {
			return SendResult{}, c.deliveryError(ctx, call.Channel, err)
		}
	}
	return res, nil
}
