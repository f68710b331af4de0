package connector

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"strings"
	"time"
)

// Defaults of [EditStreamOptions].
const (
	// DefaultEditInterval is the least time between two edits of one
	// streamed message; deltas in between are shown by the next edit (or
	// the final).
	DefaultEditInterval = time.Second
	// DefaultMaxStreams bounds the streamed messages an EditStream tracks.
	DefaultMaxStreams = 256
	// DefaultMaxStreamBytes bounds the memory of the tracked streams (ids
	// and target references; shown texts are kept as hashes).
	DefaultMaxStreamBytes = 1 << 20
	// DefaultStreamTTL drops a stream that had no delta for this long.
	DefaultStreamTTL = 10 * time.Minute
	// DefaultStreamCallTimeout bounds one target call of a delta: a delta
	// never waits long, the final carries the text anyway.
	DefaultStreamCallTimeout = 5 * time.Second
)

// ErrNotEditable is what an [EditStreamOptions.Edit] returns (wrapped)
// when the target can no longer edit the message: deleted, recalled, too
// old, or its edit cap reached. The final is then posted as a new message
// (and the old one deleted, when Delete is set). Any other error of a
// final's edit is returned as it is, for the message to be redelivered.
var ErrNotEditable = errors.New("connector: the target message can no longer be edited")

// MessagePart names one target call of an assistant message, for the
// callbacks of an EditStream.
type MessagePart struct {
	// MessageID is the assistant message; InReplyTo the user message it
	// answers, when xAgent says (see AssistantMessage.InReplyTo).
	MessageID string
	InReplyTo string
	// Index is the call's place in the message: the text parts first
	// (0 is the one a stream shows and edits), then the files.
	Index int
	// ToolCallID is set when a tool posts the message (Post), else empty
	// (an answer to xAgent's final or delta): a target may send a tool's
	// message to another place than an answer.
	ToolCallID string
	// Key is an idempotency key for targets that take one (Feishu's uuid,
	// Discord's nonce): 32 hex characters, the same for this channel,
	// message and part on every redelivery and after a restart. A stream's
	// first post has a key of its own, so that a final posted anew after a
	// refused edit is not taken for that post.
	Key string
}

// EditStreamOptions are a target's part of an [EditStream]: how to post
// and edit a message there, and the target's limits. R is the target's
// reference to a posted message (Telegram's message_id, Slack's channel and
// ts, a Feishu message_id, a DingTalk card's outTrackId); it must encode as
// JSON, since it is recorded durably.
type EditStreamOptions[R any] struct {
	// Send posts text as a new target message and returns its reference.
	// Required.
	Send func(ctx context.Context, ch *Channel, part MessagePart, text string) (R, error)
	// Edit replaces the text of message ref. It returns an error wrapping
	// ErrNotEditable when the target cannot edit that message any more, a
	// *RateLimitError when it asks to wait. Required.
	Edit func(ctx context.Context, ch *Channel, ref R, text string) error
	// SendFile posts one file after the text (part names it: its Index
	// counts on after the text parts) and returns its reference. Required
	// when the connector's Card lets xAgent send files; a final with files
	// and no SendFile fails.
	SendFile func(ctx context.Context, ch *Channel, part MessagePart, f *File) (R, error)
	// Classify, when set, maps the error of a failed target call of a
	// final to what Final returns, for the ack: a secret-free
	// *protocol.Error with the target's refusal, Temporary for a retry (and
	// a side effect such as marking the channel revoked). Nil returns the
	// error as it is, which the SDK classifies (see MessageHandler).
	Classify func(ctx context.Context, ch *Channel, err error) error
	// Delete, when set, removes a streamed message whose final had to be
	// posted anew, so that the target never shows the partial text beside
	// the final (IM v2 section 5.4). Its failure is logged.
	Delete func(ctx context.Context, ch *Channel, ref R) error
	// Limit is the target's longest message: a final longer than it is
	// sent in parts, the first edited into the streamed message; a stream
	// shows the first part of what arrived so far. The zero value has no
	// limit.
	Limit TextLimit
	// Interval is the least time between two edits of one message
	// (default DefaultEditInterval).
	Interval time.Duration
	// MaxEdits is the edits the target allows one message, the final's
	// included (Feishu: 20); deltas use at most MaxEdits-1, so that the
	// final always has one. 0 means no cap.
	MaxEdits int
	// TTL drops a stream with no delta for this long (default
	// DefaultStreamTTL); its final still edits the posted message, found
	// through the durable record.
	TTL time.Duration
	// MaxStreams and MaxBytes bound the streams tracked at once (defaults
	// DefaultMaxStreams and DefaultMaxStreamBytes); beyond them the stream
	// seen least recently is dropped, as after its TTL.
	MaxStreams int
	MaxBytes   int
	// CallTimeout bounds one Send or Edit of a delta (default
	// DefaultStreamCallTimeout). The call is not cut short when the
	// socket it came on closes, so that a message the target posted is
	// recorded.
	CallTimeout time.Duration
}

// EditStream shows a streamed assistant reply on a target that can edit
// messages: the first delta posts a target message, later deltas edit it
// at most once per Interval and at most MaxEdits-1 times, and the final
// edits it into the complete text; the final always lands, as a new
// message when the edit budget is spent or the target refuses the edit
// (ErrNotEditable). A delta whose call fails stops the stream's edits (a
// rate limit only pauses them for its Retry-After), and the final carries
// the text. A final longer than Limit is sent in parts, then its files
// (SendFile), each recorded as done so that a redelivery posts only what
// is missing.
//
// It is correct across restarts: the target reference of a streamed
// message is recorded durably once, when it is posted (with
// Channel.SaveProgress, not once per delta), so a final redelivered after
// a crash or a restart edits the message already posted instead of posting
// a second one. Edits counted against MaxEdits are kept in memory only.
//
// A connector creates one with NewEditStream and registers Delta with
// Server.OnAssistantDelta and Final with Server.OnAssistantMessage. It holds no
// goroutine and needs no Close; it is safe for concurrent use (the SDK
// hands it one channel's deltas and finals in order, different channels
// in parallel).
type EditStream[R any] struct {
	opts   EditStreamOptions[R]
	seed   maphash.Seed
	tracks *streamTable[R]
	now    func() time.Time // time.Now; tests replace it
}

// NewEditStream returns an EditStream for a target; zero options take
// their defaults.
func NewEditStream[R any](opts EditStreamOptions[R]) (*EditStream[R], error) {
	if opts.Send == nil || opts.Edit == nil {
		return nil, errors.New("connector: an EditStream needs Send and Edit")
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultEditInterval
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultStreamTTL
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxStreamBytes
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultStreamCallTimeout
	}
	if opts.MaxEdits < 0 {
		opts.MaxEdits = 0
	}
	return &EditStream[R]{opts: opts, seed: maphash.MakeSeed(), now: time.Now,
		tracks: newStreamTable[R](opts.MaxStreams, opts.MaxBytes, opts.TTL)}, nil
}

// streamRecord is the durable delivery progress of one message (see
// Channel.SaveProgress): the posted stream message, and the steps of the
// final done.
type streamRecord[R any] struct {
	Ref    R    `json:"ref"`
	Posted bool `json:"posted,omitempty"`
	Done   int  `json:"done,omitempty"`
}

// partKey is the idempotency key of part n of message msg on channel ch
// (n < 0: the stream's first post).
func partKey(ch, msg string, n int) string {
	tag := strconv.Itoa(n)
	if n < 0 {
		tag = "stream"
	}
	sum := sha256.Sum256([]byte(ch + "\x00" + msg + "\x00" + tag))
	return hex.EncodeToString(sum[:16])
}

// Delta shows d: it posts the stream's message on the first delta with
// text, then edits it when an edit is due. It has the signature of a
// DeltaHandler. Its error (a failed post or edit, which stops the
// stream's edits) is for the log; the final still lands.
func (s *EditStream[R]) Delta(ctx context.Context, ch *Channel, d *AssistantDelta) error {
	now := s.now()
	st, fresh := s.tracks.get(ch.ID(), d.MessageID, now)
	if st == nil {
		return nil // ids too large to track: the final posts the text
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if fresh {
		// First seen by this process: a record from before a restart (or
		// of a stream dropped by its TTL) names the message to edit.
		var rec streamRecord[R]
		if ok, err := ch.LoadProgress(ctx, d.MessageID, &rec); err == nil && ok && rec.Posted {
			st.ref, st.posted = rec.Ref, true
		}
	}
	if st.done || st.broken || now.Before(st.pause) {
		return nil
	}
	if st.posted && (now.Sub(st.last) < s.opts.Interval || (s.opts.MaxEdits > 0 && st.edits >= s.opts.MaxEdits-1)) {
		return nil
	}
	text, _ := s.opts.Limit.Cut(d.Assembled)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	h := maphash.String(s.seed, text)
	if st.posted && h == st.shown {
		return nil
	}
	// Not cut short by the socket closing: a post the target made must
	// be recorded (CallTimeout bounds it, and Close waits for it).
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.CallTimeout)
	defer cancel()
	if !st.posted {
		part := MessagePart{MessageID: d.MessageID, InReplyTo: d.InReplyTo, Key: partKey(ch.ID(), d.MessageID, -1)}
		ref, err := s.opts.Send(cctx, ch, part, text)
		if err != nil {
			return st.fail(now, "post", err)
		}
		st.ref, st.posted, st.shown, st.last = ref, true, h, now
		// The one durable write of a stream: after a restart the final
		// edits this message.
		if err := ch.SaveProgress(ctx, d.MessageID, streamRecord[R]{Ref: ref, Posted: true}); err != nil {
			ch.srv.log.Warn("connector: record stream message (a final after a restart may post it again)",
				"channel", ch.ID(), "err", err)
		}
		return nil
	}
	if err := s.opts.Edit(cctx, ch, st.ref, text); err != nil {
		return st.fail(now, "edit", err)
	}
	st.shown, st.last = h, now
	st.edits++
	return nil
}

// fail records a failed call of a delta: a rate limit pauses the stream's
// edits for its hint, anything else stops them. The caller holds st.mu.
func (st *stream[R]) fail(now time.Time, what string, err error) error {
	if d, ok := RetryAfterOf(err); ok {
		st.pause = now.Add(max(d, DefaultMinRetryWait))
		return nil
	}
	st.broken = true
	return fmt.Errorf("connector: stream %s failed (the final carries the text): %w", what, err)
}
