package feishu

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// progress is the delivery progress of one outbound message (kept by the
// SDK, Channel.SaveProgress): the steps done (text parts, then files) and
// the streamed message, so a retry after a failure or restart resumes and
// posts nothing twice. Each step also carries a Feishu uuid (idempotent
// for an hour, §6.1), which covers a crash between a send and its record.
type progress struct {
	ID     string `json:"id"`
	Done   int    `json:"done"`
	Stream string `json:"stream,omitempty"`
	Edits  int    `json:"edits,omitempty"`
}

// target is where a reply goes: a reply to a group message, or a new
// message in a p2p chat (§6.1, §6.2).
type target struct {
	replyTo string
	chatID  string
}

func (c *Connector) replyTarget(ctx context.Context, ch *connector.Channel) (target, error) {
	var last lastMessage
	if ok, err := ch.LoadState(ctx, lastKey, &last); err != nil {
		return target{}, fmt.Errorf("feishu: load last message: %w", err)
	} else if ok && last.ChatType != "" && last.ChatType != "p2p" && last.MessageID != "" {
		return target{replyTo: last.MessageID}, nil
	} else if ok && last.ChatID != "" {
		return target{chatID: last.ChatID}, nil
	}
	return c.defaultTarget(ctx, ch)
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

// uuidOf is the idempotency key of one step of one assistant message.
func uuidOf(channel, msgID string, step int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d", channel, msgID, step)))
	return hex.EncodeToString(h[:16])
}

func (c *Connector) loadProgress(ctx context.Context, ch *connector.Channel, id string) progress {
	p := progress{ID: id}
	if _, err := ch.LoadProgress(ctx, id, &p); err != nil {
		c.log.Warn("feishu: load outbound progress", "channel", ch.ID(), "err", err)
	}
	return p
}

// saveProgress stores p, or drops it when remove is set (delivered).
func (c *Connector) saveProgress(ctx context.Context, ch *connector.Channel, p progress, remove bool) error {
	if remove {
		return ch.ClearProgress(ctx, p.ID)
	}
	return ch.SaveProgress(ctx, p.ID, p)
}

// onMessage delivers a final assistant message: the text (edited into
// the streamed message when there is one, else sent; split beyond
// MaxTextBytes), then each file. The SDK acks accepted only when every
// call succeeded. Messages of one channel arrive in order.
func (c *Connector) onMessage(ctx context.Context, ch *connector.Channel, m *connector.AssistantMessage) error {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return err
	}
	t, err := c.replyTarget(ctx, ch)
	if err != nil {
		return err
	}
	parts := splitText(m.Text, MaxTextBytes)
	p := c.loadProgress(ctx, ch, m.MessageID)
	if st := c.streams.take(ch.ID(), m.MessageID); st != nil && st.msgID != "" {
		p.Stream, p.Edits = st.msgID, max(p.Edits, st.edits)
	}
	for step := p.Done; step < len(parts)+len(m.Files); step++ {
		uuid := uuidOf(ch.ID(), m.MessageID, step)
		if step < len(parts) {
			if step == 0 && p.Stream != "" {
				err = cl.c.api.update(ctx, cl.cr, p.Stream, parts[0])
				var ae *APIError
				if errors.As(err, &ae) && !ae.Temporary() && !tokenInvalid(ae.Code) {
					// Edit cap reached (230072), recalled, too old: send anew.
					_, err = cl.send(ctx, t, "text", textContent(parts[0]), uuid)
				}
			} else {
				_, err = cl.send(ctx, t, "text", textContent(parts[step]), uuid)
			}
		} else {
			err = cl.sendFile(ctx, t, &m.Files[step-len(parts)], uuid)
		}
		if err != nil {
			return c.deliveryError(ctx, ch, err)
		}
		p.Done = step + 1
		if err := c.saveProgress(ctx, ch, p, false); err != nil {
			c.log.Warn("feishu: save outbound progress", "channel", ch.ID(), "err", err)
		}
	}
	if err := c.saveProgress(ctx, ch, p, true); err != nil {
		c.log.Warn("feishu: clear outbound progress", "channel", ch.ID(), "err", err)
	}
	return nil
}

// deliveryError classifies a failed delivery: refused credentials make
// the channel expired; frequency limits, 5xx and network failures are
// retryable; other refusals are not. Messages are secret-free.
func (c *Connector) deliveryError(ctx context.Context, ch *connector.Channel, err error) error {
	c.log.Warn("feishu: delivery failed", "channel", ch.ID(), "err", err)
	if perr := protocol.AsError(err); perr != nil {
		return perr
	}
	var ae *APIError
	switch {
	case errors.As(err, &ae) && ae.Op == "tenant token" && !ae.Temporary():
		if serr := ch.SetStatus(ctx, protocol.StatusExpired); serr != nil {
			c.log.Warn("feishu: set status", "channel", ch.ID(), "err", serr)
		}
		return &protocol.Error{Code: protocol.CodeConnectionNotAuthenticated,
			Message: "Feishu no longer accepts the app's credentials: sign in again"}
	case errors.As(err, &ae):
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: ae.Temporary(),
			Message: fmt.Sprintf("Feishu %s: code %d %s", ae.Op, ae.Code, ae.Msg)}
	case isTemporary(err):
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: true, Message: "Feishu Open Platform unreachable"}
	}
	return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Message: "Feishu delivery failed"}
}

// fileType is the file_type of an upload (§6.6) by extension.
func fileType(name string) string {
	switch strings.ToLower(path.Ext(name)) {
	case ".opus":
		return "opus"
	case ".mp4":
		return "mp4"
	case ".pdf":
		return "pdf"
	case ".doc", ".docx":
		return "doc"
	case ".xls", ".xlsx":
		return "xls"
	case ".ppt", ".pptx":
		return "ppt"
	}
	return "stream"
}

// sendFile uploads f (an image ≤ 10 MB through im/v1/images, anything
// else through im/v1/files) and sends it.
func (cl *appClient) sendFile(ctx context.Context, t target, f *connector.File, uuid string) error {
	open := func() (io.ReadCloser, error) { return f.Open() }
	name := f.Filename
	if name == "" {
		name = "file"
	}
	if f.Type == protocol.FileImage && f.Size <= 10<<20 {
		key, err := cl.c.api.uploadImage(ctx, cl.cr, name, open)
		if err != nil {
			return err
		}
		b, _ := json.Marshal(map[string]string{"image_key": key})
		_, err = cl.send(ctx, t, "image", string(b), uuid)
		return err
	}
	key, err := cl.c.api.uploadFile(ctx, cl.cr, fileType(name), name, open)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(map[string]string{"file_key": key})
	_, err = cl.send(ctx, t, "file", string(b), uuid)
	return err
}

// splitText cuts text into parts of at most limit bytes on rune
// boundaries, preferring a line break in the second half of a part.
func splitText(text string, limit int) []string {
	var parts []string
	for len(text) > 0 {
		part := trimTo(text, limit)
		if len(part) < len(text) {
			if i := strings.LastIndexByte(part, '\n'); i >= len(part)/2 {
				part = part[:i+1]
			}
		}
		if strings.TrimSpace(part) != "" {
			parts = append(parts, part)
		}
		text = text[len(part):]
	}
	return parts
}

// streams holds the Feishu message of each streamed assistant message,
// bounded: at most max entries, each dropped ttl after its last delta.
type streams struct {
	mu  sync.Mutex
	max int
	ttl time.Duration
	m   map[string]*stream
}

type stream struct {
	msgID  string
	shown  string
	edits  int
	last   time.Time
	seen   time.Time
	broken bool
}

func newStreams(max int, ttl time.Duration) *streams {
	if max <= 0 {
		max = DefaultMaxStreams
	}
	if ttl <= 0 {
		ttl = DefaultStreamTTL
	}
	return &streams{max: max, ttl: ttl, m: map[string]*stream{}}
}

func (s *streams) get(channel, msg string, now time.Time) *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := channel + "\x00" + msg
	if st := s.m[k]; st != nil {
		st.seen = now
		return st
	}
	var oldest string
	for key, st := range s.m {
		if now.Sub(st.seen) > s.ttl {
			delete(s.m, key)
		} else if oldest == "" || st.seen.Before(s.m[oldest].seen) {
			oldest = key
		}
	}
	if len(s.m) >= s.max && oldest != "" {
		delete(s.m, oldest)
	}
	st := &stream{seen: now}
	s.m[k] = st
	return st
}

func (s *streams) take(channel, msg string) *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := channel + "\x00" + msg
	st := s.m[k]
	delete(s.m, k)
	return st
}

// deltaTimeout bounds one call of a delta: a delta never waits out a
// rate limit (the final carries the text).
const deltaTimeout = 5 * time.Second

// onDelta streams by editing (§6.3): the first delta sends a text
// message, later ones edit it at most every EditInterval and at most
// MaxStreamEdits times (Feishu allows 20 edits; one is kept for the
// final). When a call fails the stream stops and the final carries the
// complete text.
func (c *Connector) onDelta(ctx context.Context, ch *connector.Channel, d *connector.AssistantDelta) error {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return err
	}
	now := time.Now()
	st := c.streams.get(ch.ID(), d.MessageID, now)
	if st.broken {
		return nil
	}
	parts := splitText(d.Assembled, MaxTextBytes)
	if len(parts) == 0 {
		return nil
	}
	text := parts[0]
	ctx, cancel := context.WithTimeout(ctx, deltaTimeout)
	defer cancel()
	switch {
	case st.msgID == "":
		t, err := c.replyTarget(ctx, ch)
		if err != nil {
			st.broken = true
			return err
		}
		id, err := cl.send(ctx, t, "text", textContent(text), uuidOf(ch.ID(), d.MessageID, -1))
		if err != nil {
			st.broken = true
			return fmt.Errorf("feishu: stream start (the final will carry the text): %w", err)
		}
		st.msgID, st.shown, st.last = id, text, now
		// Durable: after a restart the final edits this message.
		if err := c.saveProgress(ctx, ch, progress{ID: d.MessageID, Stream: id}, false); err != nil {
			c.log.Warn("feishu: save stream", "channel", ch.ID(), "err", err)
		}
	case text != st.shown && st.edits < MaxStreamEdits && now.Sub(st.last) >= c.editInterval:
		if err := c.api.update(ctx, cl.cr, st.msgID, text); err != nil {
			st.broken = true
			return fmt.Errorf("feishu: stream edit (the final will carry the text): %w", err)
		}
		st.shown, st.last = text, now
		st.edits++
	}
	return nil
}

// SendInput is the input of feishu_message_send.
type SendInput struct {
	Text string            `json:"text" desc:"Text to send to the channel's default Feishu chat (the latest direct chat with the bot)."`
	File *connector.Upload `json:"file,omitempty" desc:"Optional file to send after the text: an upload reference (images as images, anything else as a file)."`
}

// SendResult is the result of feishu_message_send.
type SendResult struct {
	Status     string   `json:"status" enum:"sent"`
	MessageIDs []string `json:"message_ids"`
}

// sendTool is feishu_message_send. The SDK makes it idempotent by tool
// call id; Feishu's uuid covers a retry after a crash.
func (c *Connector) sendTool(ctx context.Context, call *connector.Call, in SendInput) (SendResult, error) {
	parts := splitText(in.Text, MaxTextBytes)
	if len(parts) == 0 && in.File == nil {
		return SendResult{}, protocol.Errorf(protocol.CodeInvalidArguments, "text must not be empty")
	}
	cl, err := c.clients.Get(call.Channel)
	if err != nil {
		return SendResult{}, err
	}
	t, err := c.defaultTarget(ctx, call.Channel)
	if err != nil {
		return SendResult{}, err
	}
	res := SendResult{Status: "sent", MessageIDs: []string{}}
	// Feishu drops a second message with the same uuid for an hour: the
	// key of the call, or a fresh one for a call nothing identifies.
	key := call.IdempotencyKey
	if key == "" {
		key = connector.NewID("call_")
	}
	for i, p := range parts {
		id, err := cl.send(ctx, t, "text", textContent(p), uuidOf(call.Channel.ID(), "tool:"+key, i))
		if err != nil {
			return SendResult{}, c.deliveryError(ctx, call.Channel, err)
		}
		res.MessageIDs = append(res.MessageIDs, id)
	}
	if in.File != nil && in.File.File != nil {
		if err := cl.sendFile(ctx, t, in.File.File, uuidOf(call.Channel.ID(), "tool:"+key, len(parts))); err != nil {
			return SendResult{}, c.deliveryError(ctx, call.Channel, err)
		}
	}
	return res, nil
}
