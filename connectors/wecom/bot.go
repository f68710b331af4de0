package wecom

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// An intelligent robot's long connection (智能机器人 长连接): a WebSocket
// to WSURL carrying JSON frames {cmd, headers: {req_id}, body}. The
// connector subscribes with aibot_subscribe {bot_id, secret}, pings every
// 30 seconds, receives aibot_msg_callback (a user's message) and
// aibot_event_callback (events) frames, and answers a message with
// aibot_respond_msg frames under the message's own req_id: msgtype
// "stream" {id, finish, content}, the same id updated with the whole text
// so far and finish true on the last. Each frame the connector sends is
// acknowledged by a frame {headers: {req_id}, errcode, errmsg} with the
// same req_id; frames of one req_id are sent one at a time. Proactive
// messages (the send tool, an answer whose req_id is gone) are
// aibot_send_msg {chatid, msgtype: markdown}. The shapes follow the
// official SDK (@wecom/aibot-node-sdk) and the long connection page
// (developer.work.weixin.qq.com/document/path/101463); what neither says
// (req_id lifetime across connections, error codes) is tolerated as
// README.md describes.

const (
	// BotPingInterval is the heartbeat of a robot's connection (the
	// official SDK's 30 s).
	BotPingInterval = 30 * time.Second
	// botAckTimeout bounds the wait for a frame's acknowledgement (the
	// official SDK's 5 s).
	botAckTimeout = 5 * time.Second
	// botReplyWindow is how long after a message its req_id is used to
	// answer it; later answers are sent proactively. Unknown on the
	// documents' side: the SDK's users report about 5 minutes.
	botReplyWindow = 5 * time.Minute
	// maxBotFrame bounds one frame read.
	maxBotFrame = 1 << 20
	// maxBotQueue bounds the inbound frames waiting for the channel.
	maxBotQueue = 256
	// maxOpenStreams bounds the robot streams tracked until their finish.
	maxOpenStreams = 1024
)

// frame is one long-connection frame, both ways.
type frame struct {
	Cmd     string `json:"cmd,omitempty"`
	Headers struct {
		ReqID string `json:"req_id"`
	} `json:"headers"`
	Body    json.RawMessage `json:"body,omitempty"`
	ErrCode *int            `json:"errcode,omitempty"`
	ErrMsg  string          `json:"errmsg,omitempty"`
}

// botMessage is an aibot_msg_callback body (only what the connector
// reads).
type botMessage struct {
	MsgID    string `json:"msgid"`
	AIBotID  string `json:"aibotid"`
	ChatID   string `json:"chatid"`
	ChatType string `json:"chattype"` // single, group
	From     struct {
		UserID string `json:"userid"`
	} `json:"from"`
	MsgType string `json:"msgtype"`
	Text    struct {
		Content string `json:"content"`
	} `json:"text"`
	Voice struct {
		Content string `json:"content"`
	} `json:"voice"`
	Image botMedia `json:"image"`
	File  botMedia `json:"file"`
	Video botMedia `json:"video"`
	Mixed struct {
		Items []struct {
			MsgType string `json:"msgtype"`
			Text    struct {
				Content string `json:"content"`
			} `json:"text"`
			Image botMedia `json:"image"`
		} `json:"msg_item"`
	} `json:"mixed"`
}

type botMedia struct {
	URL    string `json:"url"`
	AESKey string `json:"aeskey"`
}

// BotError is a refusal in an acknowledgement frame.
type BotError struct {
	Op   string
	Code int
	Msg  string
}

func (e *BotError) Error() string {
	return fmt.Sprintf("wecom robot %s: errcode %d: %s", e.Op, e.Code, e.Msg)
}

var (
	errBotOffline = errors.New("the robot's long connection is down")
	errNoStream   = errors.New("no stream for this answer (its req_id is gone): the final is sent once")
)

// botConn is one robot's live connection.
type botConn struct {
	ws *websocket.Conn

	mu      sync.Mutex
	pending map[string]chan frame // req_id → its acknowledgement
	locks   map[string]*reqLock   // req_id → held while a frame of it awaits its ack
}

// reqLock serializes the frames of one req_id; n counts its users, so
// that it leaves the map only when nobody holds or waits for it.
type reqLock struct {
	ch chan struct{}
	n  int
}

// botConns are the live connections by consumer key, and the robot
// streams not yet finished.
type botConns struct {
	mu      sync.Mutex
	live    map[string]*botConn
	streams map[string]openStream // channel id + message id → stream
	order   []string
}

type openStream struct {
	r        ref
	finished bool
}

func newBotConns() *botConns {
	return &botConns{live: map[string]*botConn{}, streams: map[string]openStream{}}
}

func (b *botConns) get(key string) *botConn {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.live[key]
}

func (b *botConns) set(key string, c *botConn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c == nil {
		delete(b.live, key)
		return
	}
	b.live[key] = c
}

// track records the state of a robot stream (what Final needs to close it).
func (b *botConns) track(key string, s openStream) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.streams[key]; !ok {
		b.order = append(b.order, key)
		if len(b.order) > maxOpenStreams {
			delete(b.streams, b.order[0])
			b.order = b.order[1:]
		}
	}
	b.streams[key] = s
}

func (b *botConns) take(key string) (openStream, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.streams[key]
	delete(b.streams, key)
	return s, ok
}

func reqID(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s_%d_%s", prefix, time.Now().UnixMilli(), hex.EncodeToString(b))
}

// request sends one frame under req_id id and waits for its
// acknowledgement; frames of one req_id go one at a time.
func (bc *botConn) request(ctx context.Context, cmd, id string, body any) (frame, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return frame{}, err
	}
	var f frame
	f.Cmd, f.Headers.ReqID, f.Body = cmd, id, raw
	out, _ := json.Marshal(f)

	ctx, cancel := context.WithTimeout(ctx, botAckTimeout)
	defer cancel()
	bc.mu.Lock()
	lock, ok := bc.locks[id]
	if !ok {
		lock = &reqLock{ch: make(chan struct{}, 1)}
		bc.locks[id] = lock
	}
	lock.n++
	bc.mu.Unlock()
	release := func(held bool) {
		bc.mu.Lock()
		if held {
			delete(bc.pending, id)
			<-lock.ch
		}
		if lock.n--; lock.n == 0 {
			delete(bc.locks, id)
		}
		bc.mu.Unlock()
	}
	select {
	case lock.ch <- struct{}{}:
	case <-ctx.Done():
		release(false)
		return frame{}, fmt.Errorf("wecom robot %s: %w", cmd, ctx.Err())
	}
	ack := make(chan frame, 1)
	bc.mu.Lock()
	bc.pending[id] = ack
	bc.mu.Unlock()
	defer release(true)
	if err := bc.ws.Write(ctx, websocket.MessageText, out); err != nil {
		return frame{}, fmt.Errorf("wecom robot %s: %w", cmd, errBotOffline)
	}
	select {
	case a := <-ack:
		if a.ErrCode != nil && *a.ErrCode != 0 {
			return a, &BotError{Op: cmd, Code: *a.ErrCode, Msg: a.ErrMsg}
		}
		return a, nil
	case <-ctx.Done():
		return frame{}, fmt.Errorf("wecom robot %s: no acknowledgement: %w", cmd, ctx.Err())
	}
}

// acked hands an acknowledgement to its waiter; false when none waits.
func (bc *botConn) acked(f frame) bool {
	bc.mu.Lock()
	ch, ok := bc.pending[f.Headers.ReqID]
	bc.mu.Unlock()
	if ok {
		select {
		case ch <- f:
		default:
		}
	}
	return ok
}

// runBot is a robot's consumer: connect, subscribe, then read frames
// until ctx ends or the connection fails (the SDK restarts it with
// backoff). A refused subscription is terminal: the channel expires.
func (c *Connector) runBot(ctx context.Context, key string, m *connector.Members[binding]) error {
	chans := m.Channels()
	if len(chans) == 0 {
		return nil
	}
	b := chans[0].Binding
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	ws, _, err := websocket.Dial(dctx, c.wsURL, &websocket.DialOptions{HTTPClient: c.wsDial})
	cancel()
	if err != nil {
		return fmt.Errorf("wecom robot %s: dial: %w", b.BotID, scrubURL(err))
	}
	ws.SetReadLimit(maxBotFrame)
	bc := &botConn{ws: ws, pending: map[string]chan frame{}, locks: map[string]*reqLock{}}
	defer ws.CloseNow()

	frames := make(chan frame, maxBotQueue)
	var wg sync.WaitGroup
	rctx, stop := context.WithCancel(ctx)
	defer func() {
		stop()
		ws.CloseNow()
		wg.Wait()
	}()
	// The one read loop: acknowledgements to their waiters, callbacks to
	// the channel's worker (in order, never in the read loop).
	readErr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(frames)
		for {
			_, data, err := ws.Read(rctx)
			if err != nil {
				readErr <- err
				return
			}
			var f frame
			if json.Unmarshal(data, &f) != nil {
				c.log.Warn("wecom robot: frame is not JSON; dropped", "bot_id", b.BotID)
				continue
			}
			if f.Cmd != "aibot_msg_callback" && f.Cmd != "aibot_event_callback" {
				// An acknowledgement (whatever its cmd says).
				if !bc.acked(f) && f.ErrCode != nil && *f.ErrCode != 0 {
					c.log.Warn("wecom robot: refusal", "bot_id", b.BotID, "errcode", *f.ErrCode, "errmsg", f.ErrMsg)
				}
				continue
			}
			// A full queue holds the reader back rather than dropping a
			// message (WeCom does not send it again).
			select {
			case frames <- f:
			case <-rctx.Done():
				readErr <- rctx.Err()
				return
			}
		}
	}()

	if _, err := bc.request(ctx, "aibot_subscribe", reqID("aibot_subscribe"), map[string]string{"bot_id": b.BotID, "secret": b.Secret}); err != nil {
		var be *BotError
		if errors.As(err, &be) {
			return fmt.Errorf("wecom robot %s: subscription refused (errcode %d): %w", b.BotID, be.Code, connector.ErrBindingExpired)
		}
		return err
	}
	c.conns.set(key, bc)
	defer c.conns.set(key, nil)
	m.Connected(ctx)
	c.log.Info("wecom robot: connected", "bot_id", b.BotID)

	// The heartbeat.
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(BotPingInterval)
		defer t.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-t.C:
				if _, err := bc.request(rctx, "ping", reqID("ping"), struct{}{}); err != nil && rctx.Err() == nil {
					c.log.Warn("wecom robot: heartbeat not acknowledged; reconnecting", "bot_id", b.BotID)
					ws.CloseNow()
					return
				}
			}
		}
	}()

	kicked := false
	for f := range frames {
		switch f.Cmd {
		case "aibot_msg_callback":
			c.handleBotMessage(ctx, m, f)
		case "aibot_event_callback":
			var ev struct {
				Event struct {
					EventType string `json:"eventtype"`
				} `json:"event"`
			}
			_ = json.Unmarshal(f.Body, &ev)
			if ev.Event.EventType == "disconnected_event" {
				c.log.Warn("wecom robot: WeCom closed this connection for a newer one of the same robot", "bot_id", b.BotID)
				kicked = true
			}
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if kicked {
		// Another process holds the robot now: reconnecting would kick it
		// in turn, forever. The channel goes to error until a restart or a
		// new sign-in.
		return &connector.TerminalError{Status: protocol.StatusError,
			Err: fmt.Errorf("wecom robot %s: another connection of this robot took over (is a second connector running?)", b.BotID)}
	}
	err = <-readErr
	return fmt.Errorf("wecom robot %s: connection lost: %w", b.BotID, scrubURL(err))
}

// handleBotMessage publishes one robot message on the robot's channels.
func (c *Connector) handleBotMessage(ctx context.Context, m *connector.Members[binding], f frame) {
	var msg botMessage
	if err := json.Unmarshal(f.Body, &msg); err != nil || msg.MsgID == "" {
		return
	}
	text, files := c.botContent(ctx, &msg)
	if strings.TrimSpace(text) == "" && len(files) == 0 {
		return
	}
	chat := msg.ChatID
	if chat == "" {
		chat = msg.From.UserID // a single chat's chatid is the user's userid
	}
	here := recipient{User: msg.From.UserID, ChatID: chat, ChatType: msg.ChatType, ReqID: f.Headers.ReqID, At: time.Now()}
	for _, mb := range m.Channels() {
		if !mb.Channel.Authenticated() {
			continue
		}
		// The latest sender is recorded before the message can reach
		// xAgent, so that an answer that does not name what it answers
		// finds it.
		if err := mb.Channel.SaveState(ctx, lastKey, here); err != nil {
			c.log.Warn("wecom: save channel state", "channel", mb.Channel.ID(), "err", err)
		}
		if _, err := mb.Channel.Publish(ctx, connector.UserMessage{MessageID: msg.MsgID, Text: text, Files: files, ReplyContext: here}); err != nil {
			c.log.Warn("wecom robot: message not published", "channel", mb.Channel.ID(), "err", err)
		}
	}
}

// botContent turns a robot message into text and files: text and voice
// (WeCom's transcript) as text; images, files and videos downloaded from
// their URL and decrypted with their aeskey; mixed messages item by item.
func (c *Connector) botContent(ctx context.Context, m *botMessage) (string, []connector.OutgoingFile) {
	switch m.MsgType {
	case "text":
		return m.Text.Content, nil
	case "voice":
		return m.Voice.Content, nil
	case "image":
		return c.botFetch(ctx, m.Image, "image", protocol.FileImage)
	case "file":
		return c.botFetch(ctx, m.File, "file", protocol.FileFile)
	case "video":
		return c.botFetch(ctx, m.Video, "video", protocol.FileVideo)
	case "mixed":
		var parts []string
		var files []connector.OutgoingFile
		for _, it := range m.Mixed.Items {
			switch it.MsgType {
			case "text":
				parts = append(parts, it.Text.Content)
			case "image":
				note, f := c.botFetch(ctx, it.Image, "image", protocol.FileImage)
				if note != "" {
					parts = append(parts, note)
				}
				files = append(files, f...)
			}
		}
		return strings.Join(parts, "\n"), files
	}
	return fmt.Sprintf("[a WeCom %s message, not forwarded]", m.MsgType), nil
}

// botConnWait is how long a reply waits for a robot's connection that is
// being dialed again.
const botConnWait = 3 * time.Second

// botConn returns the robot's live connection, waiting a little for one
// being dialed again; errBotOffline (retryable) after that.
func (c *Connector) botConn(ctx context.Context, key string) (*botConn, error) {
	deadline := time.Now().Add(botConnWait)
	for {
		if bc := c.conns.get(key); bc != nil {
			return bc, nil
		}
		if time.Now().After(deadline) {
			return nil, errBotOffline
		}
		select {
		case <-ctx.Done():
			return nil, errBotOffline
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// botSend sends one text part for a robot: the first part of an answer
// as a stream under the message's req_id while it is fresh, anything else
// (later parts, the send tool, late answers) as a proactive markdown
// message to the chat.
func (c *Connector) botSend(ctx context.Context, ch *connector.Channel, cl *client, t recipient, part connector.MessagePart, text string) (ref, error) {
	bc, err := c.botConn(ctx, cl.bin.key())
	if err != nil {
		return ref{}, err
	}
	if part.Index == 0 && part.ToolCallID == "" && t.ReqID != "" && time.Since(t.At) < botReplyWindow {
		r := ref{ID: part.Key, ReqID: t.ReqID, Bot: true, Msg: part.MessageID}
		final := isFinal(ctx)
		err := c.botStream(ctx, bc, r, text, final)
		if err == nil {
			c.conns.track(ch.ID()+"\x00"+part.MessageID, openStream{r: r, finished: final})
			return r, nil
		}
		var be *BotError
		if !errors.As(err, &be) {
			return ref{}, err
		}
		// WeCom no longer takes this req_id (expired, or from a previous
		// connection): the answer goes proactively.
		c.log.Info("wecom robot: req_id refused; sending proactively", "channel", ch.ID(), "req_id", t.ReqID, "errcode", be.Code, "errmsg", be.Msg)
	}
	if part.ToolCallID == "" && !isFinal(ctx) {
		// A partial answer is never pushed proactively (it could not be
		// updated): the stream stops, and the final is sent once.
		return ref{}, errNoStream
	}
	id := reqID("aibot_send_msg")
	_, err = bc.request(ctx, "aibot_send_msg", id, map[string]any{"chatid": t.ChatID, "msgtype": "markdown",
		"markdown": map[string]string{"content": text}})
	return ref{ID: id}, err
}

func (c *Connector) botStream(ctx context.Context, bc *botConn, r ref, text string, finish bool) error {
	_, err := bc.request(ctx, "aibot_respond_msg", r.ReqID, map[string]any{"msgtype": "stream",
		"stream": map[string]any{"id": r.ID, "finish": finish, "content": text}})
	return err
}

// botEdit updates a robot's stream; a refusal (the stream expired or
// finished) makes the SDK send the final anew.
func (c *Connector) botEdit(ctx context.Context, ch *connector.Channel, cl *client, r ref, text string, final bool) error {
	bc, err := c.botConn(ctx, cl.bin.key())
	if err != nil {
		return err
	}
	err = c.botStream(ctx, bc, r, text, final)
	if err == nil && final {
		c.conns.take(ch.ID() + "\x00" + r.Msg) // finished: nothing for finishBot to do
	}
	var be *BotError
	if errors.As(err, &be) {
		return fmt.Errorf("%w: %w", connector.ErrNotEditable, err)
	}
	return err
}

// botSendFile uploads a file over the long connection (init, chunks,
// finish) and sends it proactively to the chat.
func (c *Connector) botSendFile(ctx context.Context, _ *connector.Channel, cl *client, t recipient, typ, name string, f *connector.File) (ref, error) {
	bc, err := c.botConn(ctx, cl.bin.key())
	if err != nil {
		return ref{}, err
	}
	mediaID, err := c.botUpload(ctx, bc, typ, name, f)
	if err != nil {
		return ref{}, err
	}
	id := reqID("aibot_send_msg")
	_, err = bc.request(ctx, "aibot_send_msg", id, map[string]any{"chatid": t.ChatID, "msgtype": typ, typ: map[string]string{"media_id": mediaID}})
	return ref{ID: id}, err
}

// finishBot closes a robot stream whose last edit already showed the
// final's text (the EditStream then skips the final's edit, so finish
// was never sent).
func (c *Connector) finishBot(ctx context.Context, ch *connector.Channel, m *connector.AssistantMessage) {
	s, ok := c.conns.take(ch.ID() + "\x00" + m.MessageID)
	if !ok || s.finished {
		return
	}
	cl, err := c.clients.Get(ch)
	if err != nil {
		return
	}
	parts := textLimit.Split(m.Text)
	text := ""
	if len(parts) > 0 {
		text = parts[0]
	}
	if err := c.botEdit(ctx, ch, cl, s.r, text, true); err != nil {
		c.log.Warn("wecom robot: stream not finished", "channel", ch.ID(), "err", err)
	}
}
