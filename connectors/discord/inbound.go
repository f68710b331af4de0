package discord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// lastIDKey is the channel state key of the id of the last message of
// the bound Discord channel that was published (or skipped) on it.
const lastIDKey = "discord.last_id"

// historyPage is the most messages one GET channels/{id}/messages
// returns; maxCatchUpPages bounds one catch-up round (the next round
// continues).
const (
	historyPage     = 100
	maxCatchUpPages = 50
)

// replyTo is the reply context of an inbound message: the answer is a
// reply to it.
type replyTo struct {
	MessageID string `json:"message_id"`
}

// inbound publishes the messages of one Gateway connection's channels.
// Used by one goroutine only.
type inbound struct {
	c    *Connector
	s    *discordgo.Session
	m    *connector.Members[binding]
	last map[string]string // xconn channel id → last id, read once per connection
}

// lastOf returns the channel's last published id: its saved state, else
// the sign-in snowflake.
func (in *inbound) lastOf(ctx context.Context, mb connector.Member[binding]) string {
	if id, ok := in.last[mb.Channel.ID()]; ok {
		return id
	}
	id := mb.Binding.Since
	var saved string
	if ok, err := mb.Channel.LoadState(ctx, lastIDKey, &saved); err == nil && ok && idLess(id, saved) {
		id = saved
	}
	in.last[mb.Channel.ID()] = id
	return id
}

// mark records id as the channel's last published message, durably.
func (in *inbound) mark(ctx context.Context, ch *connector.Channel, id string) error {
	if err := ch.SaveState(ctx, lastIDKey, id); err != nil {
		return err
	}
	in.last[ch.ID()] = id
	return nil
}

// catchUp fetches, for every channel, the messages after its last
// published id and publishes them in order.
func (in *inbound) catchUp(ctx context.Context) error {
	var errs []error
	for _, mb := range in.m.Channels() {
		if !mb.Channel.Authenticated() {
			continue
		}
		if err := in.catchUpOne(ctx, mb); err != nil {
			if isUnauthorized(err) {
				return err
			}
			errs = append(errs, fmt.Errorf("channel %s: %w", mb.Channel.ID(), err))
		}
	}
	return errors.Join(errs...)
}

func (in *inbound) catchUpOne(ctx context.Context, mb connector.Member[binding]) error {
	for range maxCatchUpPages {
		after := in.lastOf(ctx, mb)
		var msgs []*discordgo.Message
		err := in.c.api.call(ctx, "GET channels/{id}/messages", func(o discordgo.RequestOption) (err error) {
			msgs, err = in.s.ChannelMessages(mb.Binding.ChannelID, historyPage, "", after, "", o)
			return
		})
		if err != nil {
			return err
		}
		// Discord answers newest first: publish oldest first.
		slices.SortFunc(msgs, func(a, b *discordgo.Message) int {
			switch {
			case idLess(a.ID, b.ID):
				return -1
			case idLess(b.ID, a.ID):
				return 1
			}
			return 0
		})
		for _, msg := range msgs {
			if msg.ChannelID == "" {
				msg.ChannelID = mb.Binding.ChannelID
			}
			if err := in.deliver(ctx, msg, &mb); err != nil {
				return err
			}
		}
		if len(msgs) < historyPage {
			return nil
		}
	}
	return nil
}

// published reports whether a message kind carries what a person wrote.
func published(t discordgo.MessageType) bool {
	return t == discordgo.MessageTypeDefault || t == discordgo.MessageTypeReply
}

// deliver publishes msg on every channel bound to its Discord channel
// (only on one, when only is set) whose last published id is older, then
// records it as their last. The bot's own messages and system messages
// are only recorded.
func (in *inbound) deliver(ctx context.Context, msg *discordgo.Message, only *connector.Member[binding]) error {
	var targets []connector.Member[binding]
	if only != nil {
		targets = []connector.Member[binding]{*only}
	} else {
		for _, mb := range in.m.Channels() {
			if mb.Binding.ChannelID == msg.ChannelID && mb.Channel.Authenticated() {
				targets = append(targets, mb)
			}
		}
	}
	var um *connector.UserMessage
	var files []inboundFile
	var errs []error
	built := false
	for _, mb := range targets {
		if !idLess(in.lastOf(ctx, mb), msg.ID) {
			continue // published already
		}
		skip := !published(msg.Type) || msg.Author == nil || msg.Author.ID == mb.Binding.BotID
		if !skip && !built {
			var err error
			if um, files, err = in.c.userMessage(ctx, msg); err != nil {
				return err
			}
			built = true
		}
		if !skip && um != nil {
			m := *um
			for _, f := range files {
				m.Files = append(m.Files, connector.OutgoingFile{Name: f.name, MimeType: f.mime, Type: f.typ, Content: bytes.NewReader(f.data)})
			}
			if _, err := mb.Channel.Publish(ctx, m); err != nil {
				if perr := protocol.AsError(err); perr != nil && perr.Code == protocol.CodeConnectionNotAuthenticated {
					continue // signed out meanwhile
				}
				errs = append(errs, fmt.Errorf("channel %s: %w", mb.Channel.ID(), err))
				continue
			}
		}
		if err := in.mark(ctx, mb.Channel, msg.ID); err != nil {
			errs = append(errs, fmt.Errorf("channel %s: save last id: %w", mb.Channel.ID(), err))
		}
	}
	return errors.Join(errs...)
}

// inboundFile is one downloaded attachment.
type inboundFile struct {
	name, mime string
	typ        protocol.FileType
	data       []byte
}

// userMessage is what a Discord message publishes: its content and its
// attachments (downloaded now: their CDN URLs expire), or nil when it
// carries nothing IM v2 shows (a sticker, an embed only).
func (c *Connector) userMessage(ctx context.Context, msg *discordgo.Message) (*connector.UserMessage, []inboundFile, error) {
	text := msg.Content
	var files []inboundFile
	var notes []string
	for _, a := range msg.Attachments {
		if a == nil {
			continue
		}
		name := a.Filename
		if name == "" {
			name = "attachment"
		}
		if int64(a.Size) > c.maxFileBytes {
			notes = append(notes, fmt.Sprintf("[%s of %d bytes not forwarded: larger than %d bytes]", name, a.Size, c.maxFileBytes))
			continue
		}
		data, err := c.download(ctx, a.URL)
		if err != nil {
			if isTemporary(err) {
				return nil, nil, err
			}
			c.log.Warn("discord: inbound attachment not forwarded", "file", name, "err", err)
			notes = append(notes, fmt.Sprintf("[%s not forwarded: Discord refused the download]", name))
			continue
		}
		mt := a.ContentType
		if mt == "" {
			mt = http.DetectContentType(data)
		}
		if base, _, err := mime.ParseMediaType(mt); err == nil {
			mt = base
		}
		files = append(files, inboundFile{name: name, mime: mt, typ: fileType(mt), data: data})
	}
	if len(notes) > 0 {
		text = strings.TrimSpace(text + "\n\n" + strings.Join(notes, "\n"))
	}
	if text == "" && len(files) == 0 {
		return nil, nil, nil
	}
	return &connector.UserMessage{MessageID: "dc-" + msg.ID, Text: text, CreatedAt: msg.Timestamp,
		ReplyContext: replyTo{MessageID: msg.ID}}, files, nil
}

// fileType maps a MIME type to IM v2's file types.
func fileType(mt string) protocol.FileType {
	switch {
	case strings.HasPrefix(mt, "image/"):
		return protocol.FileImage
	case strings.HasPrefix(mt, "video/"):
		return protocol.FileVideo
	case strings.HasPrefix(mt, "audio/"):
		return protocol.FileAudio
	}
	return protocol.FileFile
}

// download fetches an attachment's URL (Discord's CDN; no token is sent),
// at most MaxFileBytes.
func (c *Connector) download(ctx context.Context, link string) ([]byte, error) {
	const op = "download attachment"
	ctx, cancel := context.WithTimeout(ctx, c.api.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return nil, &APIError{Op: op, Status: http.StatusBadRequest, Message: "bad attachment URL"}
	}
	res, err := c.api.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL: a signed CDN link
		}
		return nil, &transportError{op: op, err: err}
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, &APIError{Op: op, Status: res.StatusCode, Message: http.StatusText(res.StatusCode)}
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, c.maxFileBytes+1))
	if err != nil {
		return nil, &transportError{op: op, err: err}
	}
	if int64(len(data)) > c.maxFileBytes {
		return nil, &APIError{Op: op, Status: http.StatusRequestEntityTooLarge, Message: "attachment larger than the limit"}
	}
	return data, nil
}
