package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"strconv"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// textLimit is how Telegram counts a message's length.
var textLimit = connector.TextLimit{Max: MaxTextLen, Unit: connector.TextUnitUTF16}

// replyTo is the reply context of an inbound message (the SDK keeps it per
// message, UserMessage.ReplyContext): the forum topic it was written in,
// where its answer goes too.
type replyTo struct {
	Thread int64 `json:"thread,omitempty"`
}

// threadOf returns the forum topic of the user message inReplyTo (0: the
// chat's general thread, also for proactive output).
func (c *Connector) threadOf(ctx context.Context, ch *connector.Channel, inReplyTo string) int64 {
	var rt replyTo
	if _, err := ch.LoadReplyContext(ctx, inReplyTo, &rt); err != nil {
		c.log.Warn("telegram: load reply context", "channel", ch.ID(), "err", err)
	}
	return rt.Thread
}

// streamSend posts one text part of an assistant message (the stream's
// message, or a part of a final).
func (c *Connector) streamSend(ctx context.Context, ch *connector.Channel, part connector.MessagePart, text string) (int64, error) {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return 0, err
	}
	return cl.sendText(ctx, text, c.threadOf(ctx, ch, part.InReplyTo))
}

// streamFile sends one file of a final, in the topic of the message it
// answers.
func (c *Connector) streamFile(ctx context.Context, ch *connector.Channel, part connector.MessagePart, f *connector.File) (int64, error) {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return 0, err
	}
	return cl.sendFile(ctx, f, "", c.threadOf(ctx, ch, part.InReplyTo))
}

// streamEdit edits a streamed message; a message Telegram refuses to edit
// (400: deleted, too old, not the bot's) is not editable any more, and
// the SDK posts the final anew.
func (c *Connector) streamEdit(ctx context.Context, ch *connector.Channel, id int64, text string) error {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return err
	}
	err = cl.editText(ctx, id, text)
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == http.StatusBadRequest {
		return fmt.Errorf("%w: %w", connector.ErrNotEditable, err)
	}
	return err
}

// deliveryError classifies a failed delivery: a token Telegram refuses
// revokes the channel; flood control, 5xx and network failures are
// retryable; other refusals are not. Messages are secret-free.
func (c *Connector) deliveryError(ctx context.Context, ch *connector.Channel, err error) error {
	c.log.Warn("telegram: delivery failed", "channel", ch.ID(), "err", err)
	if perr := protocol.AsError(err); perr != nil {
		return perr // the SDK's own (the channel's client is not there)
	}
	var ae *APIError
	switch {
	case isUnauthorized(err):
		if serr := ch.SetStatus(ctx, protocol.StatusRevoked); serr != nil {
			c.log.Warn("telegram: set status", "channel", ch.ID(), "err", serr)
		}
		return &protocol.Error{Code: protocol.CodeConnectionNotAuthenticated,
			Message: "Telegram no longer accepts the bot token (revoked): sign in again with the new token"}
	case errors.As(err, &ae):
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: ae.Temporary(),
			Message: fmt.Sprintf("Telegram %s: %d %s", ae.Method, ae.Code, ae.Description)}
	case isTemporary(err):
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: true, Message: "Telegram Bot API unreachable"}
	}
	return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Message: "Telegram delivery failed"}
}

// sendText posts text in the channel's chat (in forum topic thread, when
// not 0) and returns its message id.
func (cl *chatClient) sendText(ctx context.Context, text string, thread int64) (int64, error) {
	params := map[string]any{"chat_id": cl.chatID, "text": text}
	if thread != 0 {
		params["message_thread_id"] = thread
	}
	var sm sentMessage
	err := cl.c.api.call(ctx, cl.token, "sendMessage", params, &sm)
	return sm.MessageID, err
}

// editText replaces the text of message id.
func (cl *chatClient) editText(ctx context.Context, id int64, text string) error {
	err := cl.c.api.call(ctx, cl.token, "editMessageText", map[string]any{"chat_id": cl.chatID, "message_id": id, "text": text}, nil)
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == http.StatusBadRequest && strings.Contains(ae.Description, "message is not modified") {
		return nil // already shows this text
	}
	return err
}

// sendFile uploads f with the method of its type (sendPhoto, sendVideo,
// sendAudio, else sendDocument); a photo Telegram refuses as a photo
// (size, dimensions) is sent as a document.
func (cl *chatClient) sendFile(ctx context.Context, f *connector.File, caption string, thread int64) (int64, error) {
	method, field := "sendDocument", "document"
	switch f.Type {
	case protocol.FileImage:
		if f.Size <= 10<<20 {
			method, field = "sendPhoto", "photo"
		}
	case protocol.FileVideo:
		method, field = "sendVideo", "video"
	case protocol.FileAudio:
		method, field = "sendAudio", "audio"
	}
	fields := map[string]string{"chat_id": chatIDParam(cl.chatID)}
	if caption != "" {
		fields["caption"] = caption
	}
	if thread != 0 {
		fields["message_thread_id"] = strconv.FormatInt(thread, 10)
	}
	open := func() (io.ReadCloser, error) { return f.Open() }
	var sm sentMessage
	err := cl.c.api.upload(ctx, cl.token, method, fields, field, f.Filename, f.MimeType, open, &sm)
	var ae *APIError
	if method == "sendPhoto" && errors.As(err, &ae) && ae.Code == http.StatusBadRequest {
		err = cl.c.api.upload(ctx, cl.token, "sendDocument", fields, "document", f.Filename, f.MimeType, open, &sm)
	}
	return sm.MessageID, err
}

// typingEvery is how often a typing action is repeated while the agent
// works: Telegram shows one for about 5 s.
const typingEvery = 4 * time.Second

// onActivity maps thinking and tool to Telegram's "typing" chat action
// (Telegram has no custom status; the indicator times out by itself after
// ~5 s, which is the local timeout IM v2 asks for). idle sends nothing.
func (c *Connector) onActivity(ctx context.Context, ch *connector.Channel, a connector.Activity) error {
	c.typingMu.Lock()
	if a.Status == protocol.ActivityIdle {
		delete(c.typing, ch.ID())
		c.typingMu.Unlock()
		return nil
	}
	now := time.Now()
	if last, ok := c.typing[ch.ID()]; ok && now.Sub(last) < typingEvery {
		c.typingMu.Unlock()
		return nil
	}
	c.typing[ch.ID()] = now
	if len(c.typing) > connector.DefaultMaxStreams*4 {
		for k, t := range c.typing {
			if now.Sub(t) > typingEvery {
				delete(c.typing, k)
			}
		}
	}
	c.typingMu.Unlock()
	cl, err := c.clients.Get(ch)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, connector.DefaultStreamCallTimeout)
	defer cancel()
	return cl.c.api.call(ctx, cl.token, "sendChatAction", map[string]any{"chat_id": cl.chatID, "action": "typing"}, nil)
}

// SendInput is the input of telegram_message_send.
type SendInput struct {
	Text string            `json:"text" desc:"Text to send to the Telegram chat bound to this channel (split into several messages beyond 4096 characters)."`
	File *connector.Upload `json:"file,omitempty" desc:"Optional file to send after the text: an upload reference (images as photos, videos, audio, anything else as a document)."`
}

// SendResult is the result of telegram_message_send: the message ids of the
// text parts, then of the file.
type SendResult = connector.SendResult[int64]

// sendArgs reads the send tool's text and file.
func sendArgs(in SendInput) (string, *connector.Upload) { return in.Text, in.File }
