package wecom

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Channel state keys.
const (
	// lastKey is where the latest inbound message came from: where
	// proactive output, the send tool and an answer whose reply context
	// is gone go.
	lastKey = "wecom.last"
)

// appMessage is a decrypted application callback (消息格式): the members
// of the text, image, voice, video, location and link messages; events
// (MsgType event) carry Event instead.
type appMessage struct {
	ToUserName   string  `xml:"ToUserName"`
	FromUserName string  `xml:"FromUserName"`
	CreateTime   int64   `xml:"CreateTime"`
	MsgType      string  `xml:"MsgType"`
	Content      string  `xml:"Content"`
	MsgID        string  `xml:"MsgId"`
	AgentID      string  `xml:"AgentID"`
	PicURL       string  `xml:"PicUrl"`
	MediaID      string  `xml:"MediaId"`
	Format       string  `xml:"Format"`
	LocationX    float64 `xml:"Location_X"`
	LocationY    float64 `xml:"Location_Y"`
	Label        string  `xml:"Label"`
	Title        string  `xml:"Title"`
	Description  string  `xml:"Description"`
	URL          string  `xml:"Url"`
	Event        string  `xml:"Event"`
}

// recipient is where an answer goes: the user (UserID) of an application,
// or a robot's chat (bot.go fills ChatID, ChatType and ReqID).
type recipient struct {
	User     string `json:"user,omitempty"`
	ChatID   string `json:"chat_id,omitempty"`
	ChatType string `json:"chat_type,omitempty"`
	ReqID    string `json:"req_id,omitempty"`
	// At is when the message arrived (a robot's req_id expires).
	At time.Time `json:"at,omitzero"`
}

// handleAppMessage publishes one decrypted callback on the application's
// channel. Events and messages it does not forward return nil (the
// callback is acked); an error makes WeCom retry.
func (c *Connector) handleAppMessage(ctx context.Context, mb connector.Member[binding], plain []byte) error {
	var m appMessage
	if err := xml.Unmarshal(plain, &m); err != nil {
		c.log.Warn("wecom: callback message is not XML; dropped", "channel", mb.Channel.ID())
		return nil
	}
	if m.MsgType == "event" || m.MsgType == "" || m.MsgID == "" || m.FromUserName == "" {
		return nil // events (enter_agent, ...) carry no user message
	}
	if m.ToUserName != "" && m.ToUserName != mb.Binding.CorpID {
		c.log.Warn("wecom: callback for another corp; dropped", "channel", mb.Channel.ID())
		return nil
	}
	text, files, err := c.appContent(ctx, mb.Binding, &m)
	if err != nil {
		return err
	}
	if strings.TrimSpace(text) == "" && len(files) == 0 {
		return nil
	}
	here := recipient{User: m.FromUserName}
	var at time.Time
	if m.CreateTime > 0 {
		at = time.Unix(m.CreateTime, 0)
	}
	// The latest sender is recorded before the message can reach xAgent
	// (a retry of the same message records the same sender).
	if err := mb.Channel.SaveState(ctx, lastKey, here); err != nil {
		return fmt.Errorf("wecom: save channel state: %w", err)
	}
	_, err = mb.Channel.Publish(ctx, connector.UserMessage{MessageID: m.MsgID, Text: text, Files: files, CreatedAt: at, ReplyContext: here})
	return err
}

// appContent turns a message into text and files: text as it is, an
// image or a file (voice, video) fetched with media/get, a location and a
// link as text.
func (c *Connector) appContent(ctx context.Context, b binding, m *appMessage) (string, []connector.OutgoingFile, error) {
	switch m.MsgType {
	case "text":
		return m.Content, nil, nil
	case "image":
		return c.fetchMedia(ctx, b, m.MediaID, "image", protocol.FileImage)
	case "voice":
		name := "voice"
		if m.Format != "" {
			name += "." + strings.ToLower(m.Format)
		}
		return c.fetchMedia(ctx, b, m.MediaID, name, protocol.FileAudio)
	case "video":
		return c.fetchMedia(ctx, b, m.MediaID, "video", protocol.FileVideo)
	case "location":
		return fmt.Sprintf("[location: %s (%.6f, %.6f)]", m.Label, m.LocationX, m.LocationY), nil, nil
	case "link":
		return strings.TrimSpace(fmt.Sprintf("%s\n%s\n%s", m.Title, m.Description, m.URL)), nil, nil
	}
	return fmt.Sprintf("[a WeCom %s message, not forwarded]", m.MsgType), nil, nil
}

// fetchMedia downloads a user's file. A refusal a retry will not fix
// becomes a note in the text; a transient one is returned, so that WeCom
// retries the callback.
func (c *Connector) fetchMedia(ctx context.Context, b binding, mediaID, name string, ft protocol.FileType) (string, []connector.OutgoingFile, error) {
	if mediaID == "" {
		return "", nil, nil
	}
	data, fname, err := c.api.download(ctx, b.cred(), mediaID, c.maxFileBytes)
	if err != nil {
		if isTemporary(err) {
			return "", nil, err
		}
		c.log.Warn("wecom: inbound file not forwarded", "err", err)
		return fmt.Sprintf("[%s not forwarded: WeCom refused the download]", name), nil, nil
	}
	return "", []connector.OutgoingFile{outgoing(data, fname, name, ft)}, nil
}

// outgoing is a received file: its name, sniffed type and kind.
func outgoing(data []byte, fname, name string, ft protocol.FileType) connector.OutgoingFile {
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
	return connector.OutgoingFile{Name: fname, MimeType: mt, Type: ft, Content: bytes.NewReader(data)}
}

var errNoRecipient = errors.New("no WeCom user yet: someone must message the application or robot once")
