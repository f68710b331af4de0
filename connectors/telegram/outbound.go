package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// progress is the delivery progress of one outbound message (kept by the
// SDK, Channel.SaveProgress): how many of its Bot API steps (text parts,
// then files) are done, and the streamed message to edit. A retry of the
// same message_id resumes after the last done step, so no part is posted
// twice.
type progress struct {
	ID     string `json:"id"`
	Done   int    `json:"done"`
	Stream int64  `json:"stream,omitempty"`
}

// loadProgress returns the record of message id (zero when none).
func (c *Connector) loadProgress(ctx context.Context, ch *connector.Channel, id string) progress {
	p := progress{ID: id}
	if _, err := ch.LoadProgress(ctx, id, &p); err != nil {
		c.log.Warn("telegram: load outbound progress", "channel", ch.ID(), "err", err)
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

// onMessage delivers a final assistant message: its text in parts of at
// most MaxTextLen (the first one edited into the streamed message, if
// any), then each file. It returns nil, and the SDK acks accepted, only
// after every Bot API call succeeded.
func (c *Connector) onMessage(ctx context.Context, ch *connector.Channel, m *connector.AssistantMessage) error {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return err
	}
	parts := splitText(m.Text, MaxTextLen)
	p := c.loadProgress(ctx, ch, m.MessageID)
	if s := c.streams.take(ch.ID(), m.MessageID); s != 0 {
		p.Stream = s
	}
	for step := p.Done; step < len(parts)+len(m.Files); step++ {
		if step < len(parts) {
			if step == 0 && p.Stream != 0 {
				err = cl.editOrSend(ctx, p.Stream, parts[0])
			} else {
				_, err = cl.sendText(ctx, parts[step])
			}
		} else {
			_, err = cl.sendFile(ctx, &m.Files[step-len(parts)], "")
		}
		if err != nil {
			return c.deliveryError(ctx, ch, err)
		}
		p.Done = step + 1
		if err := c.saveProgress(ctx, ch, p, false); err != nil {
			// The step happened; a retry may repeat it. Say so, and go on.
			c.log.Warn("telegram: save outbound progress", "channel", ch.ID(), "err", err)
		}
	}
	if err := c.saveProgress(ctx, ch, p, true); err != nil {
		c.log.Warn("telegram: clear outbound progress", "channel", ch.ID(), "err", err)
	}
	return nil
}

// deliveryError classifies a failed delivery: a token Telegram refuses
// revokes the channel; flood control, 5xx and network failures are
// retryable; other refusals are not. Messages are secret-free.
func (c *Connector) deliveryError(ctx context.Context, ch *connector.Channel, err error) error {
	c.log.Warn("telegram: delivery failed", "channel", ch.ID(), "err", err)
	var ae *APIError
	switch {
	case isUnauthorized(err):
		if serr := ch.SetStatus(ctx, protocol.StatusRevoked); serr != nil {
			c.log.Warn("telegram: set status", "channel", ch.ID(), "err", serr)
		}
		return &protocol.Error{Code: protocol.CodeConnectionNotAuthenticated,
			Message: "Telegram no longer accepts the bot token (revoked): sign in again with the new token"}
	case errors.As(err, &ae):
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: ae.Temporary(),
			Message: fmt.Sprintf("Telegram %s: %d %s", ae.Method, ae.Code, ae.Description)}
	case isTemporary(err):
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: true, Message: "Telegram Bot API unreachable"}
	}
	return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Message: "Telegram delivery failed"}
}

// sendText posts text in the channel's chat and returns its message id.
func (cl *chatClient) sendText(ctx context.Context, text string) (int64, error) {
	var sm sentMessage
	err := cl.c.api.call(ctx, cl.token, "sendMessage", map[string]any{"chat_id": cl.chatID, "text": text}, &sm)
	return sm.MessageID, err
}

// editText replaces the text of message id.
func (cl *chatClient) editText(ctx context.Context, id int64, text string) error {
	err := cl.c.api.call(ctx, cl.token, "editMessageText", map[string]any{"chat_id": cl.chatID, "message_id": id, "text": text}, nil)
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == http.StatusBadRequest && strings.Contains(ae.Description, "message is not modified") {
		return nil // already shows this text
	}
	return err
}

// editOrSend edits the streamed message into text; when Telegram cannot
// edit it (deleted, too old) the text is posted as a new message instead.
func (cl *chatClient) editOrSend(ctx context.Context, id int64, text string) error {
	err := cl.editText(ctx, id, text)
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == http.StatusBadRequest {
		_, err = cl.sendText(ctx, text)
	}
	return err
}

// sendFile uploads f with the method of its type (sendPhoto, sendVideo,
// sendAudio, else sendDocument); a photo Telegram refuses as a photo
// (size, dimensions) is sent as a document.
func (cl *chatClient) sendFile(ctx context.Context, f *connector.File, caption string) (int64, error) {
	method, field := "sendDocument", "document"
	switch f.Type {
	case protocol.FileImage:
		if f.Size <= 10<<20 {
			method, field = "sendPhoto", "photo"
		}
	case protocol.FileVideo:
		method, field = "sendVideo", "video"
	case protocol.FileAudio:
		method, field = "sendAudio", "audio"
	}
	fields := map[string]string{"chat_id": chatIDParam(cl.chatID)}
	if caption != "" {
		fields["caption"] = caption
	}
	open := func() (io.ReadCloser, error) { return f.Open() }
	var sm sentMessage
	err := cl.c.api.upload(ctx, cl.token, method, fields, field, f.Filename, f.MimeType, open, &sm)
	var ae *APIError
	if method == "sendPhoto" && errors.As(err, &ae) && ae.Code == http.StatusBadRequest {
		err = cl.c.api.upload(ctx, cl.token, "sendDocument", fields, "document", f.Filename, f.MimeType, open, &sm)
	}
	return sm.MessageID, err
}

// splitText cuts text into parts of at most limit UTF-16 code units (how
// Telegram counts), preferring a line break, else a space, in the second
// half of a part. Parts that are only white space are dropped.
func splitText(text string, limit int) []string {
	var parts []string
	r := []rune(text)
	for len(r) > 0 {
		n, units := 0, 0
		for n < len(r) {
			u := utf16.RuneLen(r[n])
			if u < 0 {
				u = 1
			}
			if units+u > limit {
				break
			}
			units += u
			n++
		}
		cut := n
		if n < len(r) {
			for _, sep := range []rune{'\n', ' '} {
				if i := lastIndex(r[:n], sep); i >= n/2 {
					cut = i + 1
					break
				}
			}
		}
		if part := string(r[:cut]); strings.TrimSpace(part) != "" {
			parts = append(parts, part)
		}
		r = r[cut:]
	}
	return parts
}

func lastIndex(r []rune, x rune) int {
	for i := len(r) - 1; i >= 0; i-- {
		if r[i] == x {
			return i
		}
	}
	return -1
}

// streams holds the Telegram message of each streamed assistant message,
// bounded: at most max entries, each dropped ttl after its last delta
// (checked on every access); a dropped stream's message is still found
// through the channel's outbound progress.
type streams struct {
	mu  sync.Mutex
	max int
	ttl time.Duration
	m   map[string]*stream
}

type stream struct {
	msgID  int64     // the Telegram message being edited (0 before the first send)
	shown  string    // the text it shows
	last   time.Time // the last send or edit
	seen   time.Time // the last delta
	broken bool      // editing failed: buffer until the final
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

func streamKey(channel, msg string) string { return channel + "\x00" + msg }

// get returns the stream of a message, creating it (and evicting expired
// or, at capacity, the stalest entries).
func (s *streams) get(channel, msg string, now time.Time) *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := streamKey(channel, msg)
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

// take removes a message's stream and returns its Telegram message id.
func (s *streams) take(channel, msg string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := streamKey(channel, msg)
	st := s.m[k]
	delete(s.m, k)
	if st == nil {
		return 0
	}
	return st.msgID
}

// deltaTimeout bounds one Bot API call of a delta: a delta never waits
// out flood control (the final will carry the text).
const deltaTimeout = 5 * time.Second

// onDelta shows a streamed reply: the first delta posts a message, later
// ones edit it at most every EditInterval. When posting or editing fails
// the stream stops and the final carries the complete text. Deltas of
// one channel arrive in order; the SDK has checked their sequence.
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
	parts := splitText(d.Assembled, MaxTextLen)
	if len(parts) == 0 {
		return nil
	}
	text := parts[0]
	ctx, cancel := context.WithTimeout(ctx, deltaTimeout)
	defer cancel()
	switch {
	case st.msgID == 0:
		id, err := cl.sendText(ctx, text)
		if err != nil {
			st.broken = true
			return fmt.Errorf("telegram: stream start (the final will carry the text): %w", err)
		}
		st.msgID, st.shown, st.last = id, text, now
		// Remembered durably: after a restart the final edits this message.
		if err := c.saveProgress(ctx, ch, progress{ID: d.MessageID, Stream: id}, false); err != nil {
			c.log.Warn("telegram: save stream", "channel", ch.ID(), "err", err)
		}
	case text != st.shown && now.Sub(st.last) >= c.editInterval:
		if err := cl.editText(ctx, st.msgID, text); err != nil {
			st.broken = true
			return fmt.Errorf("telegram: stream edit (the final will carry the text): %w", err)
		}
		st.shown, st.last = text, now
	}
	return nil
}

// typingEvery is how often a typing action is repeated while the agent
// works: Telegram shows one for about 5 s.
const typingEvery = 4 * time.Second

// onActivity maps thinking and tool to Telegram's "typing" chat action
// (Telegram has no custom status; the indicator times out by itself after
// ~5 s, which is the local timeout IM v2 asks for). idle sends nothing.
func (c *Connector) onActivity(ctx context.Context, ch *connector.Channel, a connector.Activity) error {
	c.typingMu.Lock()
	if a.Status == protocol.ActivityIdle {
		delete(c.typing, ch.ID())
		c.typingMu.Unlock()
		return nil
	}
	now := time.Now()
	if last, ok := c.typing[ch.ID()]; ok && now.Sub(last) < typingEvery {
		c.typingMu.Unlock()
		return nil
	}
	c.typing[ch.ID()] = now
	if len(c.typing) > DefaultMaxStreams*4 {
		for k, t := range c.typing {
			if now.Sub(t) > typingEvery {
				delete(c.typing, k)
			}
		}
	}
	c.typingMu.Unlock()
	cl, err := c.clients.Get(ch)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, deltaTimeout)
	defer cancel()
	return cl.c.api.call(ctx, cl.token, "sendChatAction", map[string]any{"chat_id": cl.chatID, "action": "typing"}, nil)
}

// SendInput is the input of telegram_message_send.
type SendInput struct {
	Text string            `json:"text" desc:"Text to send to the Telegram chat bound to this channel (split into several messages beyond 4096 characters)."`
	File *connector.Upload `json:"file,omitempty" desc:"Optional file to send after the text: an upload reference (images as photos, videos, audio, anything else as a document)."`
}

// SendResult is the result of telegram_message_send.
type SendResult struct {
	Status     string  `json:"status" enum:"sent"`
	MessageIDs []int64 `json:"message_ids"`
}

// sendTool is telegram_message_send: text (and a file) to the bound chat.
// The SDK makes it idempotent by tool call id.
func (c *Connector) sendTool(ctx context.Context, call *connector.Call, in SendInput) (SendResult, error) {
	parts := splitText(in.Text, MaxTextLen)
	if len(parts) == 0 && in.File == nil {
		return SendResult{}, protocol.Errorf(protocol.CodeInvalidArguments, "text must not be empty")
	}
	cl, err := c.clients.Get(call.Channel)
	if err != nil {
		return SendResult{}, err
	}
	res := SendResult{Status: "sent", MessageIDs: []int64{}}
	for _, p := range parts {
		id, err := cl.sendText(ctx, p)
		if err != nil {
			return SendResult{}, c.deliveryError(ctx, call.Channel, err)
		}
		res.MessageIDs = append(res.MessageIDs, id)
	}
	if in.File != nil && in.File.File != nil {
		id, err := cl.sendFile(ctx, in.File.File, "")
		if err != nil {
			return SendResult{}, c.deliveryError(ctx, call.Channel, err)
		}
		res.MessageIDs = append(res.MessageIDs, id)
	}
	return res, nil
}
