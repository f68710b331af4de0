package telegram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// offsetKey is the channel state key of the next getUpdates offset of
// the channel's bot.
const offsetKey = "telegram.offset"

// inboundFile is one downloaded file of an inbound message.
type inboundFile struct {
	name, mime string
	typ        protocol.FileType
	data       []byte
}

// poll is the getUpdates loop of one bot token, shared by every channel
// of that token (the SDK runs one per token and stops it with the last
// channel). An update is confirmed to Telegram (the next offset) only
// after its message is in the durable outbox of every channel of its chat
// and the offset is saved in their state, so a crash or restart neither
// loses nor replays a message.
//
// The SDK turns the loop's health into the channels' status: an answered
// getUpdates reports m.Connected; a failure returns and the SDK marks the
// channels degraded until the restarted loop is answered again; a token
// Telegram refuses (401) returns connector.ErrRevoked, and the SDK marks
// the channels revoked and stops polling until they sign in again.
func (c *Connector) poll(ctx context.Context, token string, m *connector.Members[binding]) error {
	defer c.api.hc.CloseIdleConnections()
	offset := c.loadOffset(ctx, m)
	for {
		var ups []Update
		params := map[string]any{"timeout": int(c.pollTimeout / time.Second), "allowed_updates": []string{"message", "channel_post"}}
		if offset > 0 {
			params["offset"] = offset
		}
		pctx, cancel := context.WithTimeout(ctx, c.pollTimeout+c.api.timeout)
		err := c.api.call(pctx, token, "getUpdates", params, &ups)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			var ae *APIError
			switch {
			case isUnauthorized(err):
				return fmt.Errorf("telegram: getUpdates: the bot token was revoked: %w", connector.ErrRevoked)
			case errors.As(err, &ae) && ae.Code == http.StatusConflict:
				return fmt.Errorf("telegram: getUpdates conflict: a webhook is set for the bot, or another program polls it: %w", err)
			case errors.As(err, &ae) && ae.Code == http.StatusTooManyRequests:
				if !sleep(ctx, ae.RetryAfter) {
					return nil
				}
				continue
			}
			return err // the SDK marks the channels degraded and restarts the loop with backoff
		}
		m.Connected(ctx)
		for _, u := range ups {
			if err := c.deliver(ctx, token, m, u); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("telegram: update %d not delivered (kept for a retry): %w", u.UpdateID, err)
			}
			offset = u.UpdateID + 1
			c.saveOffset(ctx, m, offset)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(max(d, 100*time.Millisecond))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// loadOffset returns the highest offset any channel of the token saved.
func (c *Connector) loadOffset(ctx context.Context, m *connector.Members[binding]) int64 {
	var best int64
	for _, mb := range m.Channels() {
		var o int64
		if ok, err := mb.Channel.LoadState(ctx, offsetKey, &o); err == nil && ok && o > best {
			best = o
		}
	}
	return best
}

// saveOffset records offset in every channel of the token. A failure is
// logged: Telegram's own confirmation (the next getUpdates) still holds.
func (c *Connector) saveOffset(ctx context.Context, m *connector.Members[binding], offset int64) {
	for _, mb := range m.Channels() {
		if err := mb.Channel.SaveState(ctx, offsetKey, offset); err != nil {
			c.log.Warn("telegram: save offset", "channel", mb.Channel.ID(), "err", err)
		}
	}
}

// deliver publishes one update's message on every channel bound to its
// chat that was signed in before the message was written. Files are
// downloaded first (Telegram's file links expire); each channel gets its
// own copy in the SDK's file cache.
func (c *Connector) deliver(ctx context.Context, token string, m *connector.Members[binding], u Update) error {
	msg := u.Message
	if msg == nil {
		msg = u.ChannelPost
	}
	if msg == nil {
		return nil
	}
	var targets []*connector.Channel
	for _, mb := range m.Channels() {
		if mb.Binding.ChatID == msg.Chat.ID && msg.Date >= mb.Binding.Since && mb.Channel.Authenticated() {
			targets = append(targets, mb.Channel)
		}
	}
	if len(targets) == 0 {
		return nil
	}
	text := msg.Text
	if text == "" {
		text = msg.Caption
	}
	files, notes, err := c.download(ctx, token, msg)
	if err != nil {
		return err
	}
	if len(notes) > 0 {
		text = strings.TrimSpace(text + "\n\n" + strings.Join(notes, "\n"))
	}
	if text == "" && len(files) == 0 {
		return nil // a sticker, a poll, a service message: nothing IM v2 carries
	}
	id := fmt.Sprintf("tg-%d-%d", msg.Chat.ID, msg.MessageID)
	var errs []error
	for _, ch := range targets {
		um := connector.UserMessage{MessageID: id, Text: text, CreatedAt: time.Unix(msg.Date, 0)}
		for _, f := range files {
			um.Files = append(um.Files, connector.OutgoingFile{Name: f.name, MimeType: f.mime, Type: f.typ, Content: bytes.NewReader(f.data)})
		}
		if err := ch.Publish(ctx, um); err != nil {
			if perr := protocol.AsError(err); perr != nil && perr.Code == protocol.CodeConnectionNotAuthenticated {
				continue // signed out meanwhile: nobody to deliver to
			}
			errs = append(errs, fmt.Errorf("channel %s: %w", ch.ID(), err))
		}
	}
	return errors.Join(errs...)
}

// download fetches the message's files (the largest photo size, a
// document, voice, audio, video, video note or animation). A file the
// Bot API will not hand out (too big) becomes a note in the text; a
// transient failure is returned so that the update is tried again.
func (c *Connector) download(ctx context.Context, token string, msg *Message) ([]inboundFile, []string, error) {
	type item struct {
		obj  *fileObject
		typ  protocol.FileType
		name string
	}
	var items []item
	if n := len(msg.Photo); n > 0 {
		items = append(items, item{&msg.Photo[n-1], protocol.FileImage, "photo.jpg"})
	}
	for _, it := range []item{{msg.Document, protocol.FileFile, "document"}, {msg.Voice, protocol.FileAudio, "voice.ogg"},
		{msg.Audio, protocol.FileAudio, "audio"}, {msg.Video, protocol.FileVideo, "video.mp4"},
		{msg.VideoNote, protocol.FileVideo, "video_note.mp4"}, {msg.Animation, protocol.FileVideo, "animation.mp4"}} {
		if it.obj != nil {
			items = append(items, it)
		}
	}
	var files []inboundFile
	var notes []string
	for _, it := range items {
		name := it.obj.FileName
		if name == "" {
			name = it.name
		}
		if it.obj.FileSize > c.maxFileBytes {
			notes = append(notes, fmt.Sprintf("[%s of %d bytes not forwarded: larger than %d bytes]", name, it.obj.FileSize, c.maxFileBytes))
			continue
		}
		var f File
		err := c.api.call(ctx, token, "getFile", map[string]string{"file_id": it.obj.FileID}, &f)
		if err == nil && f.FilePath == "" {
			err = &APIError{Method: "getFile", Code: http.StatusBadRequest, Description: "no file_path"}
		}
		var data []byte
		if err == nil {
			if it.obj.FileName == "" && path.Ext(f.FilePath) != "" {
				name = strings.TrimSuffix(name, path.Ext(name)) + path.Ext(f.FilePath)
			}
			data, err = c.api.download(ctx, token, f.FilePath, c.maxFileBytes)
		}
		if err != nil {
			if isTemporary(err) || isUnauthorized(err) {
				return nil, nil, err
			}
			c.log.Warn("telegram: inbound file not forwarded", "file", name, "err", err)
			notes = append(notes, fmt.Sprintf("[%s not forwarded: Telegram refused the download]", name))
			continue
		}
		mt := it.obj.MimeType
		if mt == "" {
			mt = http.DetectContentType(data)
			if i := strings.IndexByte(mt, ';'); i >= 0 {
				mt = mt[:i]
			}
		}
		files = append(files, inboundFile{name: name, mime: mt, typ: it.typ, data: data})
	}
	return files, notes, nil
}
