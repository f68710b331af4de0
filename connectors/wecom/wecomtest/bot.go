package wecomtest

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// The intelligent robots' long connection, as the official SDK
// (@wecom/aibot-node-sdk) speaks it: JSON frames {cmd, headers: {req_id},
// body}; aibot_subscribe {bot_id, secret}; ping; aibot_msg_callback pushed
// to the robot; aibot_respond_msg under a callback's req_id (msgtype
// stream {id, finish, content}); aibot_send_msg {chatid, msgtype, ...};
// aibot_upload_media_init/chunk/finish; every frame the robot sends is
// acknowledged {headers: {req_id}, errcode, errmsg}. A newer connection
// of the same robot replaces the older one, which gets a
// disconnected_event first. What the fake assumes beyond the SDK (the
// codes below, a req_id answerable for ReqIDTTL on any connection of its
// robot) is marked so.

// Codes the fake answers; 846605 and 846608 are the codes reported for an
// invalid req_id and an expired stream by the SDK's users, 40001 for a
// refused subscription is the fake's assumption.
const (
	CodeBadSecret     = 40001
	CodeInvalidReqID  = 846605
	CodeStreamExpired = 846608
	// ReqIDTTL is how long the fake takes answers to a callback's req_id.
	ReqIDTTL = 5 * time.Minute
	// MaxStreamContent is the longest stream content the fake keeps
	// (20480 bytes, as the SDK's users report).
	MaxStreamContent = 20480
)

type wsFrame struct {
	Cmd     string `json:"cmd,omitempty"`
	Headers struct {
		ReqID string `json:"req_id"`
	} `json:"headers"`
	Body    json.RawMessage `json:"body,omitempty"`
	ErrCode *int            `json:"errcode,omitempty"`
	ErrMsg  string          `json:"errmsg,omitempty"`
}

type botSession struct {
	id string
	ws *websocket.Conn
}

type callbackReq struct {
	bot    string
	chat   string
	at     time.Time
	stream string // the stream id answered, once
}

type upload struct {
	typ, name string
	chunks    map[int][]byte
	total     int
}

// AddBot registers an intelligent robot's credentials.
func (s *Server) AddBot(botID, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.botSecrets[botID] = secret
}

// BotConnected reports whether robot botID has a subscribed connection.
func (s *Server) BotConnected(botID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.botLive[botID] != nil
}

func (s *Server) wsSend(ctx context.Context, ws *websocket.Conn, f wsFrame) error {
	b, _ := json.Marshal(f)
	return ws.Write(ctx, websocket.MessageText, b)
}

func ack(ctx context.Context, s *Server, ws *websocket.Conn, reqID string, code int, msg string, body any) {
	var f wsFrame
	f.Headers.ReqID = reqID
	f.ErrCode, f.ErrMsg = &code, msg
	if body != nil {
		f.Body, _ = json.Marshal(body)
	}
	_ = s.wsSend(ctx, ws, f)
}

// serveBot serves one robot connection.
func (s *Server) serveBot(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ws.CloseNow()
		return
	}
	s.botAll[ws] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.botAll, ws)
		s.mu.Unlock()
		ws.CloseNow()
	}()
	ws.SetReadLimit(4 << 20)
	ctx := r.Context()
	var sess *botSession
	defer func() {
		if sess != nil {
			s.mu.Lock()
			if s.botLive[sess.id] == sess {
				delete(s.botLive, sess.id)
			}
			s.mu.Unlock()
		}
	}()
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			return
		}
		var f wsFrame
		if json.Unmarshal(data, &f) != nil {
			continue
		}
		s.mu.Lock()
		s.calls["ws:"+f.Cmd]++
		s.mu.Unlock()
		id := f.Headers.ReqID
		if f.Cmd == "aibot_subscribe" {
			var b struct {
				BotID  string `json:"bot_id"`
				Secret string `json:"secret"`
			}
			_ = json.Unmarshal(f.Body, &b)
			s.mu.Lock()
			secret, ok := s.botSecrets[b.BotID]
			if !ok || secret != b.Secret {
				s.mu.Unlock()
				ack(ctx, s, ws, id, CodeBadSecret, "invalid credential", nil)
				continue
			}
			old := s.botLive[b.BotID]
			sess = &botSession{id: b.BotID, ws: ws}
			s.botLive[b.BotID] = sess
			s.mu.Unlock()
			if old != nil {
				var ev wsFrame
				ev.Cmd, ev.Headers.ReqID = "aibot_event_callback", "evt"+randHex(8)
				ev.Body, _ = json.Marshal(map[string]any{"msgtype": "event", "event": map[string]string{"eventtype": "disconnected_event"}})
				_ = s.wsSend(ctx, old.ws, ev)
				_ = old.ws.Close(websocket.StatusNormalClosure, "replaced")
			}
			ack(ctx, s, ws, id, 0, "ok", nil)
			continue
		}
		if sess == nil {
			ack(ctx, s, ws, id, CodeBadSecret, "not subscribed", nil)
			continue
		}
		code, msg, body := s.botCommand(sess.id, f)
		ack(ctx, s, ws, id, code, msg, body)
	}
}

// botCommand runs one frame of a subscribed robot and returns its ack.
func (s *Server) botCommand(bot string, f wsFrame) (int, string, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := f.Headers.ReqID
	switch f.Cmd {
	case "ping":
		return 0, "ok", nil
	case "aibot_respond_msg":
		var b struct {
			MsgType string `json:"msgtype"`
			Stream  struct {
				ID      string `json:"id"`
				Finish  bool   `json:"finish"`
				Content string `json:"content"`
			} `json:"stream"`
		}
		_ = json.Unmarshal(f.Body, &b)
		cr := s.botReqs[id]
		if cr == nil || cr.bot != bot || time.Since(cr.at) > ReqIDTTL || b.MsgType != "stream" || b.Stream.ID == "" {
			return CodeInvalidReqID, "invalid req_id", nil
		}
		if cr.stream != "" && cr.stream != b.Stream.ID {
			return CodeInvalidReqID, "req_id already answered", nil
		}
		content := b.Stream.Content
		if len(content) > MaxStreamContent {
			content = content[:MaxStreamContent]
		}
		for i := range s.sent {
			m := &s.sent[i]
			if m.BotID == bot && m.MsgType == "stream" && m.ID == b.Stream.ID {
				if m.Finished {
					return CodeStreamExpired, "stream message update expired", nil
				}
				m.Content, m.Finished = content, b.Stream.Finish
				m.Updates++
				return 0, "ok", nil
			}
		}
		cr.stream = b.Stream.ID
		s.record(Sent{ID: b.Stream.ID, BotID: bot, ToUser: cr.chat, MsgType: "stream", Content: content, Finished: b.Stream.Finish})
		return 0, "ok", nil
	case "aibot_send_msg":
		var b struct {
			ChatID   string `json:"chatid"`
			MsgType  string `json:"msgtype"`
			Markdown struct {
				Content string `json:"content"`
			} `json:"markdown"`
			Image struct {
				MediaID string `json:"media_id"`
			} `json:"image"`
			File struct {
				MediaID string `json:"media_id"`
			} `json:"file"`
		}
		_ = json.Unmarshal(f.Body, &b)
		m := Sent{ID: id, BotID: bot, ToUser: b.ChatID, MsgType: b.MsgType}
		switch b.MsgType {
		case "markdown":
			m.Content = b.Markdown.Content
		case "image":
			m.MediaID = b.Image.MediaID
		case "file":
			m.MediaID = b.File.MediaID
		default:
			return 40008, "invalid message type", nil
		}
		if m.ChatID() == "" {
			return 40003, "invalid chatid", nil
		}
		if m.MediaID != "" {
			if _, ok := s.media[m.MediaID]; !ok {
				return 40007, "invalid media_id", nil
			}
		}
		s.record(m)
		return 0, "ok", nil
	case "aibot_upload_media_init":
		var b struct {
			Type        string `json:"type"`
			Filename    string `json:"filename"`
			TotalChunks int    `json:"total_chunks"`
		}
		_ = json.Unmarshal(f.Body, &b)
		if b.TotalChunks < 1 || b.TotalChunks > 100 {
			return 40009, "invalid chunk count", nil
		}
		u := "up" + randHex(8)
		s.uploads[u] = &upload{typ: b.Type, name: b.Filename, chunks: map[int][]byte{}, total: b.TotalChunks}
		return 0, "ok", map[string]string{"upload_id": u}
	case "aibot_upload_media_chunk":
		var b struct {
			UploadID   string `json:"upload_id"`
			ChunkIndex int    `json:"chunk_index"`
			Data       string `json:"base64_data"`
		}
		_ = json.Unmarshal(f.Body, &b)
		up := s.uploads[b.UploadID]
		data, err := base64.StdEncoding.DecodeString(b.Data)
		if up == nil || err != nil || b.ChunkIndex < 0 || b.ChunkIndex >= up.total {
			return 40009, "invalid chunk", nil
		}
		up.chunks[b.ChunkIndex] = data
		return 0, "ok", nil
	case "aibot_upload_media_finish":
		var b struct {
			UploadID string `json:"upload_id"`
		}
		_ = json.Unmarshal(f.Body, &b)
		up := s.uploads[b.UploadID]
		if up == nil || len(up.chunks) != up.total {
			return 40009, "upload incomplete", nil
		}
		delete(s.uploads, b.UploadID)
		var all []byte
		for i := range up.total {
			all = append(all, up.chunks[i]...)
		}
		mid := s.addMediaLocked(Media{Type: up.typ, Name: up.name, Data: all})
		return 0, "ok", map[string]string{"media_id": mid, "type": up.typ, "created_at": "1380000000"}
	}
	return 40008, "unknown cmd", nil
}

// ChatID is the chat a robot's message went to (ToUser).
func (m Sent) ChatID() string { return m.ToUser }

// BotMessage is a user's message to a robot.
type BotMessage struct {
	From string
	// ChatID is a group's chatid ("" a single chat with From).
	ChatID  string
	MsgType string // default text
	Content string
	// Image, when set, is sent as an image message: its bytes are served
	// encrypted at a URL the message carries, with its aeskey.
	Image []byte
}

// SendBot pushes a user's message to robot botID over its connection
// (aibot_msg_callback) and returns its msgid and req_id.
func (s *Server) SendBot(ctx context.Context, botID string, m BotMessage) (msgID, reqID string, err error) {
	s.mu.Lock()
	sess := s.botLive[botID]
	s.seq++
	msgID = fmt.Sprintf("botmsg%d%s", s.seq, randHex(4))
	reqID = "cb" + randHex(12)
	chat, chatType := m.ChatID, "group"
	if chat == "" {
		chat, chatType = m.From, "single"
	}
	if sess != nil {
		s.botReqs[reqID] = &callbackReq{bot: botID, chat: chat, at: time.Now()}
		if len(s.botReqs) > MaxSent {
			for k, v := range s.botReqs {
				if time.Since(v.at) > ReqIDTTL {
					delete(s.botReqs, k)
				}
			}
		}
	}
	s.mu.Unlock()
	if sess == nil {
		return "", "", errors.New("wecomtest: robot " + botID + " is not connected")
	}
	body := map[string]any{"msgid": msgID, "aibotid": botID, "chattype": chatType, "from": map[string]string{"userid": m.From}}
	if m.ChatID != "" {
		body["chatid"] = m.ChatID
	}
	switch {
	case m.Image != nil:
		url, key, err := s.serveEncrypted(m.Image)
		if err != nil {
			return "", "", err
		}
		body["msgtype"] = "image"
		body["image"] = map[string]string{"url": url, "aeskey": key}
	default:
		body["msgtype"] = "text"
		body["text"] = map[string]string{"content": m.Content}
	}
	var f wsFrame
	f.Cmd, f.Headers.ReqID = "aibot_msg_callback", reqID
	f.Body, _ = json.Marshal(body)
	return msgID, reqID, s.wsSend(ctx, sess.ws, f)
}

// serveEncrypted stores data encrypted under a fresh aeskey (AES-256-CBC,
// IV the key's first 16 bytes, PKCS#7 to 32 bytes) at a URL of the fake.
func (s *Server) serveEncrypted(data []byte) (string, string, error) {
	key := make([]byte, 32)
	copy(key, randHex(16))
	pad := 32 - len(data)%32
	buf := append([]byte(nil), data...)
	for range pad {
		buf = append(buf, byte(pad))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return "", "", err
	}
	cipher.NewCBCEncrypter(block, key[:16]).CryptBlocks(buf, buf)
	id := s.AddMedia(Media{Type: "encrypted", Name: "image.png", Data: buf})
	return s.hs.URL + BotFilePath + id, base64.StdEncoding.EncodeToString(key), nil
}

// BotFilePath serves the robots' encrypted files.
const BotFilePath = "/aibot-file/"

func (s *Server) serveBotFile(w http.ResponseWriter, r *http.Request) {
	m, ok := s.Media(strings.TrimPrefix(r.URL.Path, BotFilePath))
	if !ok || m.Type != "encrypted" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(m.Data)
}

// DropBot cuts robot botID's connection without a close frame, as a
// network failure does.
func (s *Server) DropBot(botID string) {
	s.mu.Lock()
	sess := s.botLive[botID]
	delete(s.botLive, botID)
	s.mu.Unlock()
	if sess != nil {
		sess.ws.CloseNow()
	}
}

// KickBot ends robot botID's connection as a newer connection of the same
// robot does: a disconnected_event, then the close.
func (s *Server) KickBot(ctx context.Context, botID string) {
	s.mu.Lock()
	sess := s.botLive[botID]
	delete(s.botLive, botID)
	s.mu.Unlock()
	if sess == nil {
		return
	}
	var ev wsFrame
	ev.Cmd, ev.Headers.ReqID = "aibot_event_callback", "evt"+randHex(8)
	ev.Body, _ = json.Marshal(map[string]any{"msgtype": "event", "event": map[string]string{"eventtype": "disconnected_event"}})
	_ = s.wsSend(ctx, sess.ws, ev)
	_ = sess.ws.Close(websocket.StatusNormalClosure, "replaced")
}
