package feishu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Channel state keys.
const (
	// seenKey holds the message_ids already published (durable dedupe).
	seenKey = "feishu.seen"
	// lastKey is the latest inbound message: where proactive output (and
	// an answer whose reply context is gone) goes.
	lastKey = "feishu.last"
	// chatKey is the default chat: the latest p2p chat (the tool's target).
	chatKey = "feishu.chat"
	// maxSeen bounds seenKey (the oldest ids are dropped).
	maxSeen = 256
)

// event is the schema 2.0 envelope (§3.1) with the im.message.receive_v1
// body (§4); only the fields the connector reads.
type event struct {
	Schema string `json:"schema"`
	Header struct {
		EventID   string `json:"event_id"`
		EventType string `json:"event_type"`
		AppID     string `json:"app_id"`
		Token     string `json:"token"`
	} `json:"header"`
	Event struct {
		Sender struct {
			SenderID struct {
				OpenID string `json:"open_id"`
			} `json:"sender_id"`
			SenderType string `json:"sender_type"`
		} `json:"sender"`
		Message struct {
			MessageID   string    `json:"message_id"`
			RootID      string    `json:"root_id"`
			CreateTime  string    `json:"create_time"`
			ChatID      string    `json:"chat_id"`
			ThreadID    string    `json:"thread_id"`
			ChatType    string    `json:"chat_type"`
			MessageType string    `json:"message_type"`
			Content     string    `json:"content"`
			Mentions    []mention `json:"mentions"`
		} `json:"message"`
	} `json:"event"`
}

type mention struct {
	Key  string `json:"key"`
	Name string `json:"name"`
	ID   struct {
		OpenID string `json:"open_id"`
	} `json:"id"`
}

// lastMessage is where an answer goes: the reply context of each inbound
// message (the SDK keeps it per message id), and the latest one (lastKey).
type lastMessage struct {
	MessageID string `json:"message_id"`
	ChatID    string `json:"chat_id"`
	ChatType  string `json:"chat_type"`
}

// defaultChat is the channel's default chat (chatKey).
type defaultChat struct {
	ChatID string `json:"chat_id"`
	OpenID string `json:"open_id"`
}

// handleEvent publishes one pushed event (long connection or webhook) on
// the app's channel. It returns nil for events it deliberately ignores;
// an error makes Feishu push the event again.
func (c *Connector) handleEvent(ctx context.Context, m *connector.Members[binding], payload []byte) error {
	var ev event
	if err := json.Unmarshal(payload, &ev); err != nil {
		c.log.Warn("feishu: event is not JSON; dropped", "err", err)
		return nil
	}
	if ev.Header.EventType != "im.message.receive_v1" {
		return nil
	}
	msg := ev.Event.Message
	if msg.MessageID == "" || msg.ChatID == "" {
		return nil
	}
	// Only sender_type "user" is documented (§4); anything else (the
	// bot's own messages, should they ever arrive) is not published.
	if st := ev.Event.Sender.SenderType; st != "" && st != "user" {
		return nil
	}
	p2p := msg.ChatType == "p2p"
	if !p2p && len(msg.Mentions) == 0 {
		// In groups only messages that @ the bot are for it; with the
		// scope im:message.group_at_msg:readonly Feishu sends nothing
		// else (§4), and a broader scope is narrowed here.
		return nil
	}
	var errs []error
	for _, mb := range m.Channels() {
		if !mb.Channel.Authenticated() {
			if st := mb.Channel.Status(); st == protocol.StatusCreated || st == protocol.StatusAuthenticating {
				// Its sign-in holds the app's connection but has not
				// completed yet: fail the event so Feishu pushes it again
				// rather than losing it (the others dedupe the re-push).
				errs = append(errs, fmt.Errorf("channel %s: sign-in still in progress", mb.Channel.ID()))
			}
			continue // expired or revoked: not this channel's message
		}
		if err := c.publishOn(ctx, mb, &ev, p2p); err != nil {
			errs = append(errs, fmt.Errorf("channel %s: %w", mb.Channel.ID(), err))
		}
	}
	return errors.Join(errs...)
}

func (c *Connector) publishOn(ctx context.Context, mb connector.Member[binding], ev *event, p2p bool) error {
	ch, msg := mb.Channel, ev.Event.Message
	var seen []string
	if _, err := ch.LoadState(ctx, seenKey, &seen); err != nil {
		return fmt.Errorf("feishu: load dedupe records: %w", err)
	}
	for _, id := range seen {
		if id == msg.MessageID {
			return nil // a re-push of a message already published
		}
	}
	text, files, err := c.content(ctx, mb.Binding.cred(), msg.MessageID, msg.MessageType, msg.Content, msg.Mentions)
	if err != nil {
		return err
	}
	if strings.TrimSpace(text) == "" && len(files) == 0 {
		return nil
	}
	here := lastMessage{MessageID: msg.MessageID, ChatID: msg.ChatID, ChatType: msg.ChatType}
	um := connector.UserMessage{MessageID: msg.MessageID, Text: text, Files: files, CreatedAt: msTime(msg.CreateTime),
		ReplyContext: here} // its answer goes here, whatever comes meanwhile
	if p2p {
		// The chat is saved before the message is published: the agent may
		// answer it with a tool call (feishu_message_send) before Publish
		// returns here, and that call needs the chat.
		if err := ch.SaveState(ctx, chatKey, defaultChat{ChatID: msg.ChatID, OpenID: ev.Event.Sender.SenderID.OpenID}); err != nil {
			return fmt.Errorf("feishu: save the chat: %w", err)
		}
	}
	isNew, err := ch.Publish(ctx, um)
	if err != nil {
		if perr := protocol.AsError(err); perr != nil && perr.Code == protocol.CodeConnectionNotAuthenticated {
			return nil
		}
		return err
	}
	// The message is in the durable outbox: remember it and, when it is
	// new, where its answer goes.
	seen = append(seen, msg.MessageID)
	if len(seen) > maxSeen {
		seen = seen[len(seen)-maxSeen:]
	}
	errs := []error{ch.SaveState(ctx, seenKey, seen)}
	if isNew {
		errs = append(errs, ch.SaveState(ctx, lastKey, here))
	}
	if err := errors.Join(errs...); err != nil {
		c.log.Warn("feishu: save channel state", "channel", ch.ID(), "err", err)
	}
	return nil
}

func msTime(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// resolveMentions replaces the @_user_N placeholders with @Name (§4).
func resolveMentions(text string, ms []mention) string {
	// Longest keys first, so @_user_1 does not eat into @_user_10.
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Key != "" {
			text = strings.ReplaceAll(text, ms[i].Key, "@"+ms[i].Name)
		}
	}
	return text
}

// content turns a message's content into text and files. Only text and
// image are verified receive-side shapes (§11); post, file, audio and
// media are read tolerantly with the documented key names, and anything
// unknown becomes a short note.
func (c *Connector) content(ctx context.Context, cr cred, msgID, typ, raw string, ms []mention) (string, []connector.OutgoingFile, error) {
	var obj map[string]json.RawMessage
	_ = json.Unmarshal([]byte(raw), &obj)
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(obj[k], &s)
		return s
	}
	switch typ {
	case "text":
		return resolveMentions(str("text"), ms), nil, nil
	case "post":
		return c.post(ctx, cr, msgID, obj, ms)
	case "image":
		f, note, err := c.fetch(ctx, cr, msgID, str("image_key"), "image", "image", protocol.FileImage)
		return note, f, err
	case "file", "audio", "media":
		name := str("file_name")
		if name == "" {
			name = typ
		}
		ft := protocol.FileFile
		switch typ {
		case "audio":
			ft = protocol.FileAudio
		case "media":
			ft = protocol.FileVideo
		}
		f, note, err := c.fetch(ctx, cr, msgID, str("file_key"), "file", name, ft)
		return note, f, err
	}
	return fmt.Sprintf("[a Feishu %s message, not forwarded]", typ), nil, nil
}

// post flattens rich text (§6.1's element tags): a title line, then each
// row's elements joined; images inside are downloaded.
func (c *Connector) post(ctx context.Context, cr cred, msgID string, obj map[string]json.RawMessage, ms []mention) (string, []connector.OutgoingFile, error) {
	type elem struct {
		Tag      string `json:"tag"`
		Text     string `json:"text"`
		Href     string `json:"href"`
		UserID   string `json:"user_id"`
		UserName string `json:"user_name"`
		ImageKey string `json:"image_key"`
		FileKey  string `json:"file_key"`
		Emoji    string `json:"emoji_type"`
	}
	type body struct {
		Title   string   `json:"title"`
		Content [][]elem `json:"content"`
	}
	var b body
	// Receive side: either {title, content} or keyed by locale (§11).
	if _, ok := obj["content"]; ok {
		raw, _ := json.Marshal(obj)
		_ = json.Unmarshal(raw, &b)
	} else {
		for _, loc := range []string{"zh_cn", "en_us", "ja_jp"} {
			if v, ok := obj[loc]; ok {
				_ = json.Unmarshal(v, &b)
				break
			}
		}
		if b.Content == nil {
			for _, v := range obj {
				_ = json.Unmarshal(v, &b)
				break
			}
		}
	}
	var lines []string
	if b.Title != "" {
		lines = append(lines, b.Title)
	}
	var files []connector.OutgoingFile
	for _, row := range b.Content {
		var sb strings.Builder
		for _, e := range row {
			switch e.Tag {
			case "text", "md":
				sb.WriteString(e.Text)
			case "a":
				if e.Text != "" && e.Text != e.Href {
					fmt.Fprintf(&sb, "[%s](%s)", e.Text, e.Href)
				} else {
					sb.WriteString(e.Href)
				}
			case "at":
				name := e.UserName
				if name == "" {
					name = e.UserID
				}
				sb.WriteString("@" + name)
			case "emotion":
				sb.WriteString(":" + e.Emoji + ":")
			case "img":
				f, note, err := c.fetch(ctx, cr, msgID, e.ImageKey, "image", "image", protocol.FileImage)
				if err != nil {
					return "", nil, err
				}
				files = append(files, f...)
				sb.WriteString(note)
			case "media":
				f, note, err := c.fetch(ctx, cr, msgID, e.FileKey, "file", "video", protocol.FileVideo)
				if err != nil {
					return "", nil, err
				}
				files = append(files, f...)
				sb.WriteString(note)
			default:
				sb.WriteString(e.Text)
			}
		}
		lines = append(lines, sb.String())
	}
	return resolveMentions(strings.TrimSpace(strings.Join(lines, "\n")), ms), files, nil
}

// fetch downloads one resource (§6.7). A refusal that a retry will not
// fix becomes a note in the text; a transient one is returned so that the
// event is pushed again.
func (c *Connector) fetch(ctx context.Context, cr cred, msgID, key, typ, name string, ft protocol.FileType) ([]connector.OutgoingFile, string, error) {
	if key == "" {
		return nil, "", nil
	}
	data, fname, err := c.api.download(ctx, cr, msgID, key, typ, c.maxFileBytes)
	if err != nil {
		if isTemporary(err) {
			return nil, "", err
		}
		c.log.Warn("feishu: inbound file not forwarded", "message_id", msgID, "err", err)
		return nil, fmt.Sprintf("[%s not forwarded: Feishu refused the download]", name), nil
	}
	if fname == "" {
		fname = name
	}
	mt := http.DetectContentType(data)
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	if ft == protocol.FileImage && !strings.HasPrefix(mt, "image/") {
		ft = protocol.FileFile
	}
	return []connector.OutgoingFile{{Name: fname, MimeType: mt, Type: ft, Content: bytes.NewReader(data)}}, "", nil
}
