package webchat

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// errChannelGone: the channel of a browser session no longer works.
var errChannelGone = errors.New("webchat: chat is no longer connected")

// upload is a file a browser posts with a message.
type upload struct {
	Filename string
	MimeType string
	Body     io.Reader
}

// postUserMessage publishes a browser's message to xAgent through the
// SDK's durable outbox and returns it as the browser will see it.
func (c *Connector) postUserMessage(ctx context.Context, channel, text string, file *upload) (MessageEvent, error) {
	ch, err := c.srv.Channel(channel)
	if err != nil || !ch.Authenticated() {
		return MessageEvent{}, errChannelGone
	}
	now := time.Now()
	msg := connector.UserMessage{MessageID: connector.NewID("wcm_"), Text: text, CreatedAt: now}
	ev := MessageEvent{MessageID: msg.MessageID, From: "user", Text: text, CreatedAt: now.UnixMilli()}
	if file != nil {
		body := bufio.NewReaderSize(file.Body, 512)
		mt := file.MimeType
		if mt == "" || mt == "application/octet-stream" {
			head, _ := body.Peek(512)
			mt = http.DetectContentType(head)
		}
		if i := strings.IndexByte(mt, ';'); i >= 0 && !strings.HasPrefix(mt, "text/") {
			mt = strings.TrimSpace(mt[:i])
		}
		ft := fileTypeOf(mt)
		var content io.Reader = body
		fe := FileEvent{Type: ft, Filename: file.Filename, MimeType: mt}
		if rs, ok := file.Body.(io.ReadSeeker); ok && inlineSafe(mt) {
			// Media the browser sent gets a copy on the transfer plane of
			// its own, so that the history shows it as media after a
			// reload (the copy xAgent fetches may be gone by then).
			if _, err := rs.Seek(0, io.SeekStart); err != nil {
				return MessageEvent{}, fmt.Errorf("webchat: rewind upload: %w", err)
			}
			cf, err := ch.CacheFile(ctx, connector.OutgoingFile{Name: file.Filename, MimeType: mt, Type: ft, Content: rs})
			if err != nil {
				return MessageEvent{}, fmt.Errorf("webchat: keep upload: %w", err)
			}
			if _, err := rs.Seek(0, io.SeekStart); err != nil {
				return MessageEvent{}, fmt.Errorf("webchat: rewind upload: %w", err)
			}
			content, fe.URL, fe.Size = rs, c.mediaURL(cf.FileRef), cf.ByteSize
		}
		msg.Files = []connector.OutgoingFile{{Name: file.Filename, MimeType: mt, Type: ft, Content: content}}
		ev.Files = []FileEvent{fe}
	}
	if err := ch.Publish(ctx, msg); err != nil {
		return MessageEvent{}, fmt.Errorf("webchat: publish: %w", err)
	}
	return ev, nil
}

// fileTypeOf maps a media type to an IM v2 file type.
func fileTypeOf(mt string) protocol.FileType {
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

// mediaURL is the browser URL of a file of a channel.
func (c *Connector) mediaURL(ref string) string {
	return c.base + "/media/" + url.PathEscape(ref)
}

// onAssistantMessage shows a final assistant message on the page; it
// replaces the message's deltas. Delivery is complete once the message is
// in the channel's history and on every open stream, so it never fails
// (a history write that fails is logged).
func (c *Connector) onAssistantMessage(ctx context.Context, ch *connector.Channel, m *connector.AssistantMessage) error {
	ev := MessageEvent{MessageID: m.MessageID, From: "assistant", Text: m.Text, CreatedAt: m.CreatedAt.UnixMilli()}
	if m.CreatedAt.IsZero() {
		ev.CreatedAt = time.Now().UnixMilli()
	}
	for _, f := range m.Files {
		ev.Files = append(ev.Files, FileEvent{Type: f.Type, Filename: f.Filename, MimeType: f.MimeType, Size: f.Size, URL: c.mediaURL(f.Ref)})
	}
	return c.publishMessage(ctx, ch.ID(), ev)
}

// onAssistantDelta streams a fragment to the page.
func (c *Connector) onAssistantDelta(_ context.Context, ch *connector.Channel, d *connector.AssistantDelta) error {
	e, err := newEvent(EventDelta, DeltaEvent{MessageID: d.MessageID, Sequence: d.Sequence, Text: d.Text})
	if err != nil {
		return fmt.Errorf("webchat: encode delta: %w", err)
	}
	c.hub.publish(ch.ID(), e)
	return nil
}

// onActivity shows "thinking…" / "using <tool>…" on the page.
func (c *Connector) onActivity(_ context.Context, ch *connector.Channel, a connector.Activity) error {
	e, err := newEvent(EventActivity, ActivityEvent{Status: a.Status, ToolName: a.ToolName})
	if err != nil {
		return fmt.Errorf("webchat: encode activity: %w", err)
	}
	c.hub.publish(ch.ID(), e)
	return nil
}

// SendInput is the input of the webchat_message_send tool: text, a file,
// or both.
type SendInput struct {
	Text string `json:"text,omitempty" desc:"The text to show on the web chat page, as the assistant."`
	// File is an upload reference: xAgent shows the model a file_ref of a
	// conversation file and uploads it to this connector before the call.
	File *connector.Upload `json:"file,omitempty" desc:"A file of the conversation to show on the page with the text."`
}

// SendResult is the result of the webchat_message_send tool.
type SendResult struct {
	Status    string `json:"status" enum:"sent"`
	MessageID string `json:"message_id"`
}

// errEmptyText rejects a send without text or file.
var errEmptyText = errors.New("text or file is required")

// sendTool is webchat_message_send: a proactive assistant message to the
// channel's page. The SDK makes it idempotent by tool call id and has
// already resolved the file to this channel's upload.
func (c *Connector) sendTool(ctx context.Context, call *connector.Call, in SendInput) (SendResult, error) {
	text := strings.TrimSpace(in.Text)
	if text == "" && in.File == nil {
		return SendResult{}, protocol.Errorf(protocol.CodeInvalidArguments, "%v", errEmptyText)
	}
	if len(text) > DefaultMaxTextBytes {
		return SendResult{}, protocol.Errorf(protocol.CodeInvalidArguments, "text longer than %d bytes", DefaultMaxTextBytes)
	}
	id := toolMessageID(call.Channel.ID(), call.IdempotencyKey)
	ev := MessageEvent{MessageID: id, From: "assistant", Text: text, CreatedAt: time.Now().UnixMilli()}
	if f := in.File; f != nil {
		ev.Files = []FileEvent{{Type: f.Type, Filename: f.Filename, MimeType: f.MimeType, Size: f.Size, URL: c.mediaURL(f.Ref)}}
	}
	if err := c.publishMessage(ctx, call.Channel.ID(), ev); err != nil {
		return SendResult{}, err
	}
	return SendResult{Status: "sent", MessageID: id}, nil
}

// toolMessageID is the page message id of a webchat_message_send call: a
// digest of the channel and the call's idempotency key, so that a call
// executed again (its result was lost to a crash before the SDK recorded
// it) shows the same message, which the page and the history keep once. A
// call without a key gets a random one.
func toolMessageID(channel, key string) string {
	if key == "" {
		return connector.NewID("wcm_")
	}
	sum := sha256.Sum256([]byte(channel + "\x00" + key))
	return "wcm_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16]))
}
