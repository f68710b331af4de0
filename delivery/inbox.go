package delivery

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/xconn/xconn/protocol"
)

// Defaults of [InboxOptions].
const (
	DefaultInboxPerChannel  = 1000
	DefaultInboxAge         = 24 * time.Hour
	DefaultInboxInProgress  = 10000
	DefaultInboxPruneSpread = time.Minute
)

// Verdict is the receiver's classification of a received chat.message.
type Verdict int

// Verdicts of [Inbox.Begin].
const (
	// VerdictNew: first delivery. Perform the side effects, then Commit (ack
	// accepted) or Abort (ack rejected).
	VerdictNew Verdict = iota + 1
	// VerdictDuplicate: completed before with the same content; ack
	// duplicate without any side effect.
	VerdictDuplicate
	// VerdictConflict: completed before with other content; ack rejected
	// with message_conflict, retryable=false.
	VerdictConflict
	// VerdictBusy: the same message is being processed right now (a
	// concurrent redelivery); ack rejected with channel_busy,
	// retryable=true.
	VerdictBusy
)

// String returns "new", "duplicate", "conflict" or "busy".
func (v Verdict) String() string {
	switch v {
	case VerdictNew:
		return "new"
	case VerdictDuplicate:
		return "duplicate"
	case VerdictConflict:
		return "conflict"
	case VerdictBusy:
		return "busy"
	}
	return "unknown"
}

// Err returns the *protocol.Error of a rejecting verdict (conflict, busy),
// or nil.
func (v Verdict) Err() *protocol.Error {
	switch v {
	case VerdictConflict:
		return &protocol.Error{Code: protocol.CodeMessageConflict, Message: "message_id was received before with other content"}
	case VerdictBusy:
		return &protocol.Error{Code: protocol.CodeChannelBusy, Message: "message is being processed", Retryable: true}
	}
	return nil
}

// Ack returns the chat.message.ack payload for v: accepted for VerdictNew
// (send it only after Commit), duplicate, or a rejection from [Verdict.Err].
func (v Verdict) Ack(messageID string) protocol.ChatAckPayload {
	switch v {
	case VerdictNew:
		return protocol.ChatAckPayload{MessageID: messageID, Status: protocol.AckAccepted}
	case VerdictDuplicate:
		return protocol.ChatAckPayload{MessageID: messageID, Status: protocol.AckDuplicate}
	}
	return RejectAck(messageID, v.Err())
}

// RejectAck returns a rejected chat.message.ack for err: the code, message
// and retryable flag of its *protocol.Error, or internal_error with
// retryable=true and no message text (it could hold a secret) otherwise.
func RejectAck(messageID string, err error) protocol.ChatAckPayload {
	pe := protocol.AsError(err)
	if pe == nil {
		pe = &protocol.Error{Code: protocol.CodeInternal, Message: "internal error", Retryable: true}
	}
	retry := pe.Retryable
	return protocol.ChatAckPayload{MessageID: messageID, Status: protocol.AckRejected,
		Code: string(pe.Code), Message: pe.Message, Retryable: &retry}
}

// InboxOptions configures an [Inbox]. Storage is required.
type InboxOptions struct {
	Storage InboxStorage
	// Queue names this inbox inside Storage (default "inbox").
	Queue string
	// MaxPerChannel bounds the records per channel, oldest dropped first
	// (default 1,000).
	MaxPerChannel int
	// MaxAge bounds the age of a record (default 24 h); older records are
	// ignored and pruned.
	MaxAge time.Duration
	// MaxInProgress bounds the messages between Begin and Commit/Abort
	// (default 10,000); beyond it Begin answers VerdictBusy.
	MaxInProgress int
	// Clock supplies the time (default the system clock).
	Clock Clock
}

type inboxKey struct{ channel, messageID string }

// Inbox is the receiver's bounded record of completed message_ids (IM v2
// §9). It has no goroutine: age pruning runs inside Commit at most once a
// minute. It is safe for concurrent use; two processes sharing the storage
// must not receive the same channel at once (the lease sees to that).
type Inbox struct {
	opts  InboxOptions
	clock Clock

	mu        sync.Mutex
	inflight  map[inboxKey]string // key -> content hash; bounded by MaxInProgress
	lastPrune time.Time
}

// NewInbox checks opts, fills in the defaults and returns an Inbox.
func NewInbox(opts InboxOptions) (*Inbox, error) {
	if opts.Storage == nil {
		return nil, errors.New("delivery: InboxOptions.Storage is required")
	}
	if opts.Queue == "" {
		opts.Queue = "inbox"
	}
	if opts.MaxPerChannel <= 0 {
		opts.MaxPerChannel = DefaultInboxPerChannel
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = DefaultInboxAge
	}
	if opts.MaxInProgress <= 0 {
		opts.MaxInProgress = DefaultInboxInProgress
	}
	return &Inbox{opts: opts, clock: clockOrSystem(opts.Clock), inflight: make(map[inboxKey]string)}, nil
}

// Begin classifies a received message by its message_id and content. On
// VerdictNew the message is held in progress until [Inbox.Commit] or
// [Inbox.Abort]; the caller must call one of them.
func (in *Inbox) Begin(ctx context.Context, channel, messageID string, c Content) (Verdict, error) {
	if channel == "" || messageID == "" {
		return 0, errors.New("delivery: inbox needs a channel and a message_id")
	}
	hash := ContentHash(c)
	k := inboxKey{channel, messageID}
	in.mu.Lock()
	_, busy := in.inflight[k]
	full := len(in.inflight) >= in.opts.MaxInProgress
	in.mu.Unlock()
	if busy {
		return VerdictBusy, nil
	}
	r, ok, err := in.opts.Storage.InboxGet(ctx, in.opts.Queue, channel, messageID)
	if err != nil {
		return 0, fmt.Errorf("delivery: inbox lookup %s/%s: %w", channel, messageID, err)
	}
	if ok && r.At.After(in.clock.Now().Add(-in.opts.MaxAge)) {
		if r.Hash == hash {
			return VerdictDuplicate, nil
		}
		return VerdictConflict, nil
	}
	if full {
		return VerdictBusy, nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if _, busy := in.inflight[k]; busy {
		return VerdictBusy, nil
	}
	in.inflight[k] = hash
	return VerdictNew, nil
}

// Commit records a message begun with VerdictNew once every side effect is
// done, and releases it; c is the content given to Begin. It returns the
// verdict for the ack: VerdictNew (accepted) normally, or
// VerdictDuplicate/VerdictConflict when another process recorded the same
// message_id meanwhile.
func (in *Inbox) Commit(ctx context.Context, channel, messageID string, c Content) (Verdict, error) {
	k := inboxKey{channel, messageID}
	defer in.Abort(channel, messageID)
	now := in.clock.Now()
	in.mu.Lock()
	hash, begun := in.inflight[k] // the hash Begin computed of the same content
	in.mu.Unlock()
	if !begun {
		hash = ContentHash(c)
	}
	r := InboxRecord{Queue: in.opts.Queue, Channel: channel, MessageID: messageID, Hash: hash, At: now}
	existing, inserted, err := in.opts.Storage.InboxPut(ctx, r, in.opts.MaxPerChannel)
	if err == nil && !inserted && !existing.At.After(now.Add(-in.opts.MaxAge)) {
		// A stale record that Begin ignored: prune it and record afresh.
		if _, err = in.opts.Storage.InboxPrune(ctx, in.opts.Queue, now.Add(-in.opts.MaxAge)); err == nil {
			existing, inserted, err = in.opts.Storage.InboxPut(ctx, r, in.opts.MaxPerChannel)
		}
	}
	if err != nil {
		return 0, fmt.Errorf("delivery: inbox record %s/%s: %w", k.channel, k.messageID, err)
	}
	in.maybePrune(ctx, now)
	switch {
	case inserted:
		return VerdictNew, nil
	case existing.Hash == hash:
		return VerdictDuplicate, nil
	}
	return VerdictConflict, nil
}

// Abort releases a message begun with VerdictNew without recording it, so
// that a redelivery is processed again.
func (in *Inbox) Abort(channel, messageID string) {
	in.mu.Lock()
	delete(in.inflight, inboxKey{channel, messageID})
	in.mu.Unlock()
}

// Prune deletes the records older than MaxAge and returns how many.
func (in *Inbox) Prune(ctx context.Context) (int, error) {
	n, err := in.opts.Storage.InboxPrune(ctx, in.opts.Queue, in.clock.Now().Add(-in.opts.MaxAge))
	if err != nil {
		return 0, fmt.Errorf("delivery: inbox prune: %w", err)
	}
	return n, nil
}

// DeleteChannel drops the records of a permanently deleted channel.
func (in *Inbox) DeleteChannel(ctx context.Context, channel string) (int, error) {
	return in.opts.Storage.InboxDeleteChannel(ctx, in.opts.Queue, channel)
}

func (in *Inbox) maybePrune(ctx context.Context, now time.Time) {
	in.mu.Lock()
	due := now.Sub(in.lastPrune) >= DefaultInboxPruneSpread
	if due {
		in.lastPrune = now
	}
	in.mu.Unlock()
	if due {
		_, _ = in.opts.Storage.InboxPrune(ctx, in.opts.Queue, now.Add(-in.opts.MaxAge)) // best effort; Begin ignores old records anyway
	}
}
