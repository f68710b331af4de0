package feishu

import (
	"context"
	"errors"
	"fmt"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// textLimit is how long one Feishu text message may be.
var textLimit = connector.TextLimit{Max: MaxTextBytes, Unit: connector.TextUnitBytes}

// streamSend sends one text part of an assistant message (§6.1, §6.2).
func (c *Connector) streamSend(ctx context.Context, ch *connector.Channel, part connector.MessagePart, text string) (string, error) {
	cl, t, err := c.clientFor(ctx, ch, part)
	if err != nil {
		return "", err
	}
	return cl.send(ctx, t, "text", textContent(text), part.Key)
}

// streamFile sends one file of a final where the message it answers was
// written (or a tool's to the default chat).
func (c *Connector) streamFile(ctx context.Context, ch *connector.Channel, part connector.MessagePart, f *connector.File) (string, error) {
	cl, t, err := c.clientFor(ctx, ch, part)
	if err != nil {
		return "", err
	}
	return cl.sendFile(ctx, t, f, part.Key)
}

// clientFor returns the channel's client and where part goes.
func (c *Connector) clientFor(ctx context.Context, ch *connector.Channel, part connector.MessagePart) (*appClient, target, error) {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return nil, target{}, err
	}
	t, err := c.partTarget(ctx, ch, part)
	return cl, t, err
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

// SendResult is the result of feishu_message_send: the message ids of the
// text parts, then of the file.
type SendResult = connector.SendResult[string]

// sendArgs reads the send tool's text and file.
func sendArgs(in SendInput) (string, *connector.Upload) { return in.Text, in.File }
