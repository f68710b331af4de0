package feishu

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Where a reply goes and how one message is sent there: a reply to the
// group message it answers, or a new message in a p2p chat, with text or
// an uploaded file.

// target is where a reply goes: a reply to a group message, or a new
// message in a p2p chat (§6.1, §6.2).
type target struct {
	replyTo string
	chatID  string
}

// replyTarget is where the answer to user message inReplyTo goes: its
// reply context (Publish recorded it), else the latest inbound message (an
// answer whose context is gone, or proactive output), else the default
// chat.
func (c *Connector) replyTarget(ctx context.Context, ch *connector.Channel, inReplyTo string) (target, error) {
	var last lastMessage
	ok, err := ch.LoadReplyContext(ctx, inReplyTo, &last)
	if err == nil && !ok {
		ok, err = ch.LoadState(ctx, lastKey, &last)
	}
	switch {
	case err != nil:
		return target{}, fmt.Errorf("feishu: load reply context: %w", err)
	case ok && last.ChatType != "" && last.ChatType != "p2p" && last.MessageID != "":
		return target{replyTo: last.MessageID}, nil
	case ok && last.ChatID != "":
		return target{chatID: last.ChatID}, nil
	}
	return c.defaultTarget(ctx, ch)
}

// partTarget is where one call of a message goes: a tool's post to the
// default chat, an answer where the message it answers was written.
func (c *Connector) partTarget(ctx context.Context, ch *connector.Channel, part connector.MessagePart) (target, error) {
	if part.ToolCallID != "" {
		return c.defaultTarget(ctx, ch)
	}
	return c.replyTarget(ctx, ch, part.InReplyTo)
}

func (c *Connector) defaultTarget(ctx context.Context, ch *connector.Channel) (target, error) {
	var dc defaultChat
	ok, err := ch.LoadState(ctx, chatKey, &dc)
	if err != nil {
		return target{}, fmt.Errorf("feishu: load default chat: %w", err)
	}
	if !ok || dc.ChatID == "" {
		return target{}, &protocol.Error{Code: protocol.CodeTargetDeliveryFailed,
			Message: "no Feishu chat yet: the user must message the bot directly once"}
	}
	return target{chatID: dc.ChatID}, nil
}

// send posts one message to t.
func (cl *appClient) send(ctx context.Context, t target, msgType, content, uuid string) (string, error) {
	var m sentMessage
	var err error
	if t.replyTo != "" {
		m, err = cl.c.api.reply(ctx, cl.cr, t.replyTo, msgType, content, uuid)
	} else {
		m, err = cl.c.api.create(ctx, cl.cr, t.chatID, msgType, content, uuid)
	}
	return m.MessageID, err
}

// sendFile uploads f (an image ≤ 10 MB through im/v1/images, anything
// else through im/v1/files), sends it and returns its message_id.
func (cl *appClient) sendFile(ctx context.Context, t target, f *connector.File, uuid string) (string, error) {
	open := func() (io.ReadCloser, error) { return f.Open() }
	name := f.Filename
	if name == "" {
		name = "file"
	}
	if f.Type == protocol.FileImage && f.Size <= 10<<20 {
		key, err := cl.c.api.uploadImage(ctx, cl.cr, name, open)
		if err != nil {
			return "", err
		}
		b, _ := json.Marshal(map[string]string{"image_key": key})
		return cl.send(ctx, t, "image", string(b), uuid)
	}
	key, err := cl.c.api.uploadFile(ctx, cl.cr, fileType(name), name, open)
	if err != nil {
		return "", err
	}
	b, _ := json.Marshal(map[string]string{"file_key": key})
	return cl.send(ctx, t, "file", string(b), uuid)
}
