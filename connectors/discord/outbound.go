package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// textLimit is how Discord counts a message's length: 2,000 characters.
var textLimit = connector.TextLimit{Max: MaxTextLen, Unit: connector.TextUnitRunes}

// Discord's error codes the connector acts on
// (https://discord.com/developers/docs/topics/opcodes-and-status-codes#json-json-error-codes).
const (
	codeUnknownMessage      = 10008
	codeCannotEditOthers    = 50005
	codeMissingAccess       = 50001
	codeMissingPermissions  = 50013
	codeInvalidFormBody     = 50035
	codeCannotSendEmptyText = 50006
)

// createMessage is the body of POST channels/{id}/messages the connector
// sends: discordgo v0.28.1's MessageSend has no nonce, and the nonce with
// enforce_nonce is what makes a post repeated after a crash return the
// message Discord already created instead of a second one.
type createMessage struct {
	Content          string                            `json:"content,omitempty"`
	Nonce            string                            `json:"nonce,omitempty"`
	EnforceNonce     bool                              `json:"enforce_nonce,omitempty"`
	MessageReference *discordgo.MessageReference       `json:"message_reference,omitempty"`
	AllowedMentions  *discordgo.MessageAllowedMentions `json:"allowed_mentions,omitempty"`
}

// mentions: an answer pings the person it replies to, and never
// @everyone, @here or roles it happens to quote.
var mentions = &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{discordgo.AllowedMentionTypeUsers}, RepliedUser: true}

// nonce is Discord's nonce of a part: at most 25 characters.
func nonce(key string) string {
	if len(key) > 25 {
		return key[:25]
	}
	return key
}

// replyRef returns the reference an answer's first part replies with: the
// user message it answers (Discord drops the reply, not the message, when
// that message is gone: fail_if_not_exists false).
func (c *Connector) replyRef(ctx context.Context, ch *connector.Channel, cl *chatClient, part connector.MessagePart) *discordgo.MessageReference {
	if part.Index != 0 || part.InReplyTo == "" {
		return nil
	}
	var rt replyTo
	if ok, err := ch.LoadReplyContext(ctx, part.InReplyTo, &rt); err != nil || !ok || rt.MessageID == "" {
		if err != nil {
			c.log.Warn("discord: load reply context", "channel", ch.ID(), "err", err)
		}
		return nil
	}
	no := false
	return &discordgo.MessageReference{MessageID: rt.MessageID, ChannelID: cl.channelID, FailIfNotExists: &no}
}

// streamSend posts one text part of an assistant message.
func (c *Connector) streamSend(ctx context.Context, ch *connector.Channel, part connector.MessagePart, text string) (string, error) {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return "", err
	}
	body := createMessage{Content: text, Nonce: nonce(part.Key), EnforceNonce: part.Key != "",
		MessageReference: c.replyRef(ctx, ch, cl, part), AllowedMentions: mentions}
	var m discordgo.Message
	endpoint := discordgo.EndpointChannelMessages(cl.channelID)
	err = c.api.call(ctx, "POST channels/{id}/messages", func(o discordgo.RequestOption) error {
		raw, err := cl.s.RequestWithBucketID(http.MethodPost, endpoint, body, endpoint, o)
		if err == nil {
			err = json.Unmarshal(raw, &m)
		}
		return err
	})
	return m.ID, err
}

// streamFile sends one file of a final as an attachment (multipart).
func (c *Connector) streamFile(ctx context.Context, ch *connector.Channel, part connector.MessagePart, f *connector.File) (string, error) {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return "", err
	}
	var m *discordgo.Message
	err = c.api.call(ctx, "POST channels/{id}/messages", func(o discordgo.RequestOption) error {
		r, err := f.Open()
		if err != nil {
			return err
		}
		defer r.Close()
		send := &discordgo.MessageSend{AllowedMentions: mentions, Reference: c.replyRef(ctx, ch, cl, part),
			Files: []*discordgo.File{{Name: f.Filename, ContentType: f.MimeType, Reader: io.Reader(r)}}}
		m, err = cl.s.ChannelMessageSendComplex(cl.channelID, send, o)
		return err
	})
	if err != nil {
		return "", err
	}
	return m.ID, nil
}

// streamEdit edits a streamed message; one Discord will not edit (gone,
// or not the bot's) is not editable any more, and the SDK posts the
// final anew.
func (c *Connector) streamEdit(ctx context.Context, ch *connector.Channel, id string, text string) error {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return err
	}
	err = c.api.call(ctx, "PATCH channels/{id}/messages/{id}", func(o discordgo.RequestOption) error {
		_, err := cl.s.ChannelMessageEditComplex(&discordgo.MessageEdit{ID: id, Channel: cl.channelID, Content: &text, AllowedMentions: mentions}, o)
		return err
	})
	if code := apiCode(err); code == codeUnknownMessage || code == codeCannotEditOthers {
		return fmt.Errorf("%w: %w", connector.ErrNotEditable, err)
	}
	return err
}

// deliveryError classifies a failed delivery: a token Discord refuses
// revokes the channel; rate limits, 5xx and network failures are
// retryable; other refusals are not. Messages are secret-free.
func (c *Connector) deliveryError(ctx context.Context, ch *connector.Channel, err error) error {
	c.log.Warn("discord: delivery failed", "channel", ch.ID(), "err", err)
	if perr := protocol.AsError(err); perr != nil {
		return perr
	}
	var ae *APIError
	switch {
	case isUnauthorized(err):
		if serr := ch.SetStatus(ctx, protocol.StatusRevoked); serr != nil {
			c.log.Warn("discord: set status", "channel", ch.ID(), "err", serr)
		}
		return &protocol.Error{Code: protocol.CodeConnectionNotAuthenticated,
			Message: "Discord no longer accepts the bot token (revoked or reset): sign in again with the new token"}
	case connector.IsTemporary(err) && !errors.As(err, &ae):
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: true, Message: "Discord rate-limits the channel: try again later"}
	case errors.As(err, &ae):
		msg := fmt.Sprintf("Discord %s: %d %s", ae.Op, ae.Status, ae.Message)
		if ae.Code == codeMissingAccess || ae.Code == codeMissingPermissions {
			msg += " (give the bot View Channel, Send Messages and Attach Files in this channel)"
		}
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: ae.Temporary(), Message: msg}
	case isTemporary(err):
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: true, Message: "Discord API unreachable"}
	}
	return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Message: "Discord delivery failed"}
}

// typingEvery is how often the typing indicator is repeated while the
// agent works: Discord shows it for 10 s.
const typingEvery = 8 * time.Second

// onActivity maps thinking and tool to the typing indicator (POST
// channels/{id}/typing); idle sends nothing (the indicator ends by
// itself, or with the bot's next message).
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
	return c.api.call(ctx, "POST channels/{id}/typing", func(o discordgo.RequestOption) error { return cl.s.ChannelTyping(cl.channelID, o) })
}

// SendInput is the input of discord_message_send.
type SendInput struct {
	Text string            `json:"text" desc:"Text to send to the Discord channel bound to this channel (Markdown; split into several messages beyond 2000 characters)."`
	File *connector.Upload `json:"file,omitempty" desc:"Optional file to send after the text, as an attachment: an upload reference."`
}

// SendResult is the result of discord_message_send: the message ids of
// the text parts, then of the file.
type SendResult = connector.SendResult[string]

// sendArgs reads the send tool's text and file.
func sendArgs(in SendInput) (string, *connector.Upload) { return in.Text, in.File }
