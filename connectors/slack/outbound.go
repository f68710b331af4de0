package slack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// textLimit is how long one posted text may be: Slack counts characters.
var textLimit = connector.TextLimit{Max: MaxTextLen, Unit: connector.TextUnitRunes}

// msgRef is Slack's reference to a posted message: its conversation and
// ts (a file shared with completeUploadExternal has its file id instead).
type msgRef struct {
	Channel string `json:"channel"`
	TS      string `json:"ts,omitempty"`
	File    string `json:"file,omitempty"`
}

// notEditable are chat.update's refusals of a message that can no longer
// be edited (https://api.slack.com/methods/chat.update#errors).
var notEditable = []string{"message_not_found", "cant_update_message", "edit_window_closed", "msg_too_long", "is_inactive"}

// escape escapes &, < and > as Slack asks of message text
// (https://api.slack.com/reference/surfaces/formatting#escaping).
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// target returns where a part of an assistant message goes: the
// conversation and thread of the user message it answers (its reply
// context), else the channel's bound conversation, else the one its last
// message came from.
func (c *Connector) target(ctx context.Context, ch *connector.Channel, b binding, inReplyTo string) (replyTo, error) {
	var rt replyTo
	if inReplyTo != "" {
		if _, err := ch.LoadReplyContext(ctx, inReplyTo, &rt); err != nil {
			c.log.Warn("slack: load reply context", "channel", ch.ID(), "err", err)
		}
	}
	if rt.Channel != "" {
		return rt, nil
	}
	if b.Channel != "" {
		return replyTo{Channel: b.Channel}, nil
	}
	var last string
	if ok, err := ch.LoadState(ctx, lastConvKey, &last); err == nil && ok && last != "" {
		return replyTo{Channel: last}, nil
	}
	return replyTo{}, &protocol.Error{Code: protocol.CodeTargetDeliveryFailed,
		Message: "this Slack channel is bound to no conversation and nobody has written to the bot yet: there is nowhere to post"}
}

// streamSend posts one text part of an assistant message.
func (c *Connector) streamSend(ctx context.Context, ch *connector.Channel, part connector.MessagePart, text string) (msgRef, error) {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return msgRef{}, err
	}
	rt, err := c.target(ctx, ch, cl.b, part.InReplyTo)
	if err != nil {
		return msgRef{}, err
	}
	opts := []slackapi.MsgOption{slackapi.MsgOptionText(escape(text), false)}
	if rt.ThreadTS != "" {
		opts = append(opts, slackapi.MsgOptionTS(rt.ThreadTS))
	}
	var ts string
	err = c.call(ctx, "chat.postMessage", func(ctx context.Context) (err error) {
		_, ts, err = cl.api.PostMessageContext(ctx, rt.Channel, opts...)
		return err
	})
	return msgRef{Channel: rt.Channel, TS: ts}, err
}

// streamEdit edits a posted message with chat.update; a message Slack
// refuses to edit is not editable any more, and the SDK posts the final
// anew.
func (c *Connector) streamEdit(ctx context.Context, ch *connector.Channel, ref msgRef, text string) error {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return err
	}
	if ref.TS == "" {
		return fmt.Errorf("slack: a shared file: %w", connector.ErrNotEditable)
	}
	err = c.call(ctx, "chat.update", func(ctx context.Context) error {
		_, _, _, err := cl.api.UpdateMessageContext(ctx, ref.Channel, ref.TS, slackapi.MsgOptionText(escape(text), false))
		return err
	})
	if slices.Contains(notEditable, codeOf(err)) {
		return fmt.Errorf("%w: %w", connector.ErrNotEditable, err)
	}
	return err
}

// streamDelete removes a streamed message whose final was posted anew.
func (c *Connector) streamDelete(ctx context.Context, ch *connector.Channel, ref msgRef) error {
	cl, err := c.clients.Get(ch)
	if err != nil || ref.TS == "" {
		return err
	}
	return c.call(ctx, "chat.delete", func(ctx context.Context) error {
		_, _, err := cl.api.DeleteMessageContext(ctx, ref.Channel, ref.TS)
		return err
	})
}

// streamFile shares one file of a final in the conversation and thread of
// the message it answers: files.getUploadURLExternal, the upload, then
// files.completeUploadExternal.
func (c *Connector) streamFile(ctx context.Context, ch *connector.Channel, part connector.MessagePart, f *connector.File) (msgRef, error) {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return msgRef{}, err
	}
	rt, err := c.target(ctx, ch, cl.b, part.InReplyTo)
	if err != nil {
		return msgRef{}, err
	}
	if f.Size <= 0 {
		return msgRef{}, &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Message: "Slack takes no empty files: " + f.Filename + " has no bytes"}
	}
	var sum *slackapi.FileSummary
	err = c.call(ctx, "files.uploadV2", func(ctx context.Context) error {
		r, err := f.Open()
		if err != nil {
			return err
		}
		defer r.Close()
		sum, err = cl.api.UploadFileContext(ctx, slackapi.UploadFileParameters{Reader: r, FileSize: int(f.Size),
			Filename: f.Filename, Title: f.Filename, Channel: rt.Channel, ThreadTimestamp: rt.ThreadTS})
		return err
	})
	if err != nil {
		return msgRef{}, err
	}
	return msgRef{Channel: rt.Channel, File: sum.ID}, nil
}

// deliveryError classifies a failed delivery: a token Slack refuses
// revokes the channel; rate limits, Slack's internal errors and network
// failures are retryable; other refusals are not. Messages are secret-free.
func (c *Connector) deliveryError(ctx context.Context, ch *connector.Channel, err error) error {
	c.log.Warn("slack: delivery failed", "channel", ch.ID(), "err", err)
	if perr := protocol.AsError(err); perr != nil {
		return perr
	}
	var ae *APIError
	switch {
	case isRevoked(err):
		if serr := ch.SetStatus(ctx, protocol.StatusRevoked); serr != nil {
			c.log.Warn("slack: set status", "channel", ch.ID(), "err", serr)
		}
		return &protocol.Error{Code: protocol.CodeConnectionNotAuthenticated,
			Message: "Slack no longer accepts the bot token (revoked, or the app was uninstalled): sign in again with a new token"}
	case codeOf(err) == "not_in_channel" || codeOf(err) == "channel_not_found":
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed,
			Message: fmt.Sprintf("Slack %s: %s: invite the bot to the conversation", ae2method(err), codeOf(err))}
	case errors.As(err, &ae):
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: ae.Temporary(), Message: "Slack " + ae.Method + ": " + strings.TrimPrefix(ae.Error(), "slack: "+ae.Method+": ")}
	case isTemporary(err):
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: true, Message: "the Slack Web API is unreachable"}
	}
	return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Message: "Slack delivery failed"}
}

func ae2method(err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Method
	}
	return ""
}

// SendInput is the input of slack_message_send.
type SendInput struct {
	Text string            `json:"text" desc:"Text to post in the Slack conversation of this channel (split into several messages beyond 4,000 characters)."`
	File *connector.Upload `json:"file,omitempty" desc:"Optional file to share after the text: an upload reference."`
}

// SendResult is the result of slack_message_send: the references (channel
// and ts, or the shared file's id) of the text parts, then of the file.
type SendResult = connector.SendResult[msgRef]

// sendArgs reads the send tool's text and file.
func sendArgs(in SendInput) (string, *connector.Upload) { return in.Text, in.File }
