package dingtalk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Channel state keys.
const (
	// seenKey holds the msgIds already published (durable dedupe).
	seenKey = "dingtalk.seen"
	// lastKey is the latest inbound message: where proactive output (and
	// an answer whose reply context is gone) goes.
	lastKey = "dingtalk.last"
	// chatKey is the default conversation: the latest 1:1 chat.
	chatKey = "dingtalk.chat"
	// maxSeen bounds seenKey (the oldest ids are dropped).
	maxSeen = 256
)

// botMessage is the data of a bot message push (§4, receive message);
// only the fields the connector reads.
type botMessage struct {
	ConversationID            string `json:"conversationId"`
	ConversationType          string `json:"conversationType"` // "1" 1:1, "2" group
	MsgID                     string `json:"msgId"`
	MsgType                   string `json:"msgtype"`
	SenderNick                string `json:"senderNick"`
	SenderStaffID             string `json:"senderStaffId"`
	SenderID                  string `json:"senderId"`
	SessionWebhook            string `json:"sessionWebhook"`
	SessionWebhookExpiredTime int64  `json:"sessionWebhookExpiredTime"`
	CreateAt                  int64  `json:"createAt"`
	RobotCode                 string `json:"robotCode"`
	Text                      struct {
		Content string `json:"content"`
	} `json:"text"`
	Content json.RawMessage `json:"content"`
}

// replyContext is where an answer goes: the reply context of each
// inbound message (the SDK keeps it per message id), and the latest one
// (lastKey).
type replyContext struct {
	ConversationID   string `json:"conversation_id"`
	ConversationType string `json:"conversation_type"`
	// StaffID is the 1:1 sender, the receiver of oToMessages/batchSend.
	StaffID string `json:"staff_id"`
	// SessionWebhook and SessionExpires (Unix ms) are the message's
	// session webhook, used while valid.
	SessionWebhook string `json:"session_webhook,omitempty"`
	SessionExpires int64  `json:"session_expires,omitempty"`
}

func (r replyContext) group() bool { return r.ConversationType == "2" }

// defaultChat is the channel's default conversation (chatKey): the
// latest 1:1 chat.
type defaultChat struct {
	StaffID        string `json:"staff_id"`
	ConversationID string `json:"conversation_id"`
}

// handleBotMessage publishes one bot message on the app's channel. It
// returns nil for messages it deliberately ignores.
func (c *Connector) handleBotMessage(ctx context.Context, m *connector.Members[binding], data []byte) error {
	var msg botMessage
	if err := json.Unmarshal(data, &msg); err != nil {
		c.log.Warn("dingtalk: bot message is not JSON; dropped", "err", err)
		return nil
	}
	if msg.MsgID == "" || msg.ConversationID == "" {
		return nil
	}
	// Group messages arrive only when they @-mention the robot (§4), so
	// every message here is for it.
	var errs []error
	for _, mb := range m.Channels() {
		if !mb.Channel.Authenticated() {
			if st := mb.Channel.Status(); st == protocol.StatusCreated || st == protocol.StatusAuthenticating {
				errs = append(errs, fmt.Errorf("channel %s: sign-in still in progress", mb.Channel.ID()))
			}
			continue
		}
		if err := c.publishOn(ctx, mb, &msg); err != nil {
			errs = append(errs, fmt.Errorf("channel %s: %w", mb.Channel.ID(), err))
		}
	}
	return errors.Join(errs...)
}

func (c *Connector) publishOn(ctx context.Context, mb connector.Member[binding], msg *botMessage) error {
	ch := mb.Channel
	var seen []string
	if _, err := ch.LoadState(ctx, seenKey, &seen); err != nil {
		return fmt.Errorf("dingtalk: load dedupe records: %w", err)
	}
	for _, id := range seen {
		if id == msg.MsgID {
			return nil // a repeated push of a message already published
		}
	}
	text, files, err := c.content(ctx, mb.Binding.cred(), msg)
	if err != nil {
		return err
	}
	if strings.TrimSpace(text) == "" && len(files) == 0 {
		return nil
	}
	here := replyContext{ConversationID: msg.ConversationID, ConversationType: msg.ConversationType, StaffID: msg.SenderStaffID}
	if c.validWebhook(msg.SessionWebhook) {
		here.SessionWebhook, here.SessionExpires = msg.SessionWebhook, msg.SessionWebhookExpiredTime
		if u, err := url.Parse(msg.SessionWebhook); err == nil {
			c.srv.Redact(u.Query().Get("session"))
		}
	}
	um := connector.UserMessage{MessageID: msg.MsgID, Text: text, Files: files, CreatedAt: msTime(msg.CreateAt),
		ReplyContext: here}
	isNew, err := ch.Publish(ctx, um)
	if err != nil {
		if perr := protocol.AsError(err); perr != nil && perr.Code == protocol.CodeConnectionNotAuthenticated {
			return nil
		}
		return err
	}
	seen = append(seen, msg.MsgID)
	if len(seen) > maxSeen {
		seen = seen[len(seen)-maxSeen:]
	}
	errs := []error{ch.SaveState(ctx, seenKey, seen)}
	if isNew {
		errs = append(errs, ch.SaveState(ctx, lastKey, here))
	}
	if isNew && !here.group() && msg.SenderStaffID != "" {
		errs = append(errs, ch.SaveState(ctx, chatKey, defaultChat{StaffID: msg.SenderStaffID, ConversationID: msg.ConversationID}))
	}
	if err := errors.Join(errs...); err != nil {
		c.log.Warn("dingtalk: save channel state", "channel", ch.ID(), "err", err)
	}
	return nil
}

// validWebhook reports a session webhook on the old API's host over
// https (or the configured http host of a test): no other URL is posted
// to.
func (c *Connector) validWebhook(s string) bool {
	u, err := url.Parse(s)
	if err != nil || s == "" {
		return false
	}
	base, err := url.Parse(c.api.oapi)
	return err == nil && u.Scheme == base.Scheme && u.Host == base.Host && u.User == nil
}

func msTime(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// content turns a bot message into text and files (§4): text, picture,
// richText, file, audio (its transcript) and video; anything else
// becomes a short note.
func (c *Connector) content(ctx context.Context, cr cred, msg *botMessage) (string, []connector.OutgoingFile, error) {
	var body struct {
		DownloadCode        string `json:"downloadCode"`
		PictureDownloadCode string `json:"pictureDownloadCode"`
		FileName            string `json:"fileName"`
		Recognition         string `json:"recognition"`
		RichText            []struct {
			Text         string `json:"text"`
			Type         string `json:"type"`
			DownloadCode string `json:"downloadCode"`
		} `json:"richText"`
	}
	_ = json.Unmarshal(msg.Content, &body)
	if msg.RobotCode != "" {
		cr.RobotCode = msg.RobotCode
	}
	switch msg.MsgType {
	case "text", "":
		return strings.TrimSpace(msg.Text.Content), nil, nil
	case "picture":
		f, note, err := c.fetch(ctx, cr, msg.MsgID, body.DownloadCode, "image", protocol.FileImage)
		return note, f, err
	case "file":
		name := body.FileName
		if name == "" {
			name = "file"
		}
		f, note, err := c.fetch(ctx, cr, msg.MsgID, body.DownloadCode, name, protocol.FileFile)
		return note, f, err
	case "video":
		f, note, err := c.fetch(ctx, cr, msg.MsgID, body.DownloadCode, "video.mp4", protocol.FileVideo)
		return note, f, err
	case "audio":
		if t := strings.TrimSpace(body.Recognition); t != "" {
			return t, nil, nil
		}
		f, note, err := c.fetch(ctx, cr, msg.MsgID, body.DownloadCode, "voice", protocol.FileAudio)
		return note, f, err
	case "richText":
		var sb strings.Builder
		var files []connector.OutgoingFile
		for _, p := range body.RichText {
			if p.Type == "picture" || (p.Text == "" && p.DownloadCode != "") {
				f, note, err := c.fetch(ctx, cr, msg.MsgID, p.DownloadCode, "image", protocol.FileImage)
				if err != nil {
					return "", nil, err
				}
				files = append(files, f...)
				sb.WriteString(note)
				continue
			}
			sb.WriteString(p.Text)
		}
		return strings.TrimSpace(sb.String()), files, nil
	}
	return fmt.Sprintf("[a DingTalk %s message, not forwarded]", msg.MsgType), nil, nil
}

// fetch downloads one user file (§6.3). A refusal a retry will not fix
// becomes a note in the text; a transient one is returned.
func (c *Connector) fetch(ctx context.Context, cr cred, msgID, code, name string, ft protocol.FileType) ([]connector.OutgoingFile, string, error) {
	if code == "" {
		return nil, "", nil
	}
	data, err := c.api.download(ctx, cr, code, c.maxFileBytes)
	if err != nil {
		if isTemporary(err) {
			return nil, "", err
		}
		c.log.Warn("dingtalk: inbound file not forwarded", "msg_id", msgID, "err", err)
		return nil, fmt.Sprintf("[%s not forwarded: DingTalk refused the download]", name), nil
	}
	mt := http.DetectContentType(data)
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	if ft == protocol.FileImage && !strings.HasPrefix(mt, "image/") {
		ft = protocol.FileFile
	}
	if ft == protocol.FileImage && !strings.Contains(name, ".") {
		if ext := strings.TrimPrefix(mt, "image/"); ext != "" {
			name += "." + ext
		}
	}
	return []connector.OutgoingFile{{Name: name, MimeType: mt, Type: ft, Content: bytes.NewReader(data)}}, "", nil
}
