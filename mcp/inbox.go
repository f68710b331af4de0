package mcp

import (
	"context"
	"sync"
	"time"

	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
)

// Defaults of InboxOptions.
const (
	// DefaultMaxPending bounds the inbound messages waiting to be read, in
	// all channels. The host hands one message of a channel at a time, so
	// this is also the number of channels with a message waiting; beyond it
	// a message is refused (retryable) and the connector keeps it.
	DefaultMaxPending = 1024
	// DefaultHistoryMessages and DefaultHistoryBytes bound the recent
	// history kept per channel (in memory; the connector's own history is
	// the durable one).
	DefaultHistoryMessages = 100
	DefaultHistoryBytes    = 256 << 10
	// DefaultHistoryChannels bounds the channels whose history is kept;
	// the least recently active one is dropped first.
	DefaultHistoryChannels = 1024
)

// InboxOptions configures an [Inbox]. Zero fields take their defaults.
type InboxOptions struct {
	MaxPending      int // default DefaultMaxPending
	HistoryMessages int // default DefaultHistoryMessages
	HistoryBytes    int // default DefaultHistoryBytes
	HistoryChannels int // default DefaultHistoryChannels
}

// Inbox is the [host.Agent] behind an MCP server: it holds each inbound
// user message until an MCP client reads it (tool messages_read), and only
// then lets the host acknowledge it to the connector. A message that no
// client reads is never acknowledged: the connector keeps it in its durable
// outbox and delivers it again after a restart, so a client that crashes
// before reading loses nothing. It also keeps a bounded recent history per
// channel for the history resources.
//
// Create it with [NewInbox], pass it as host.Options.Agent, then give it
// to [New]. It is safe for concurrent use.
type Inbox struct {
	opts InboxOptions

	mu      sync.Mutex
	pending []*pending // arrival order
	wake    chan struct{}
	notify  func(userChannelID string)
	history map[string]*history
	seq     uint64
}

type pending struct {
	msg   *host.UserMessage
	taken chan struct{}
}

// NewInbox returns an empty Inbox.
func NewInbox(opts InboxOptions) *Inbox {
	if opts.MaxPending <= 0 {
		opts.MaxPending = DefaultMaxPending
	}
	if opts.HistoryMessages <= 0 {
		opts.HistoryMessages = DefaultHistoryMessages
	}
	if opts.HistoryBytes <= 0 {
		opts.HistoryBytes = DefaultHistoryBytes
	}
	if opts.HistoryChannels <= 0 {
		opts.HistoryChannels = DefaultHistoryChannels
	}
	return &Inbox{opts: opts, wake: make(chan struct{}), history: map[string]*history{}}
}

// HandleMessage implements [host.Agent]: it waits until a client reads the
// message (then returns nil, and the host acknowledges it) or ctx ends
// (then the message is refused as retryable and stays with the connector).
func (in *Inbox) HandleMessage(ctx context.Context, msg *host.UserMessage, _ host.ReplyStream) error {
	p := &pending{msg: msg, taken: make(chan struct{})}
	in.mu.Lock()
	if len(in.pending) >= in.opts.MaxPending {
		in.mu.Unlock()
		return &protocol.Error{Code: protocol.CodeInternal, Message: "mcp inbox full: no client is reading", Retryable: true}
	}
	in.pending = append(in.pending, p)
	in.record(msg.UserChannelID, Message{Direction: "inbound", MessageID: msg.MessageID, ChannelID: msg.ChannelID,
		CardID: msg.CardID, Text: msg.Text, Files: filesOf(msg.Files), CreatedAt: timeOr(msg.CreatedAt)})
	close(in.wake)
	in.wake = make(chan struct{})
	notify := in.notify
	in.mu.Unlock()
	if notify != nil {
		notify(msg.UserChannelID)
	}
	select {
	case <-p.taken:
		return nil
	case <-ctx.Done():
		in.mu.Lock()
		defer in.mu.Unlock()
		select {
		case <-p.taken: // read at the last moment: it was handed out
			return nil
		default:
		}
		in.remove(p)
		return ctx.Err()
	}
}

func (in *Inbox) remove(p *pending) {
	for i, q := range in.pending {
		if q == p {
			in.pending = append(in.pending[:i], in.pending[i+1:]...)
			return
		}
	}
}

// setNotify sets the function told of every arrival (the server's
// resources/updated notifier). It must not block.
func (in *Inbox) setNotify(fn func(userChannelID string)) {
	in.mu.Lock()
	in.notify = fn
	in.mu.Unlock()
}

// take hands out up to max waiting messages of userID (of one user
// channel when ucID is not ""), in arrival order, and releases them to
// be acknowledged. It waits up to wait for the first one, then briefly
// for more (the host delivers the next message of a channel once the
// previous one is acknowledged).
func (in *Inbox) take(ctx context.Context, userID, ucID string, max int, wait time.Duration) []*host.UserMessage {
	var out []*host.UserMessage
	deadline := time.Now().Add(wait)
	for len(out) < max {
		in.mu.Lock()
		for i := 0; i < len(in.pending) && len(out) < max; {
			p := in.pending[i]
			if p.msg.UserID != userID || (ucID != "" && p.msg.UserChannelID != ucID) {
				i++
				continue
			}
			out = append(out, p.msg)
			close(p.taken)
			in.pending = append(in.pending[:i], in.pending[i+1:]...)
		}
		wake := in.wake
		in.mu.Unlock()
		if len(out) >= max {
			break
		}
		d := time.Until(deadline)
		if len(out) > 0 {
			d = min(d, followUpWait) // the next message of the same channel
		}
		if d <= 0 {
			break
		}
		t := time.NewTimer(d)
		select {
		case <-wake:
			t.Stop()
		case <-t.C:
			return out
		case <-ctx.Done():
			t.Stop()
			return out
		}
	}
	return out
}

// followUpWait is how long messages_read waits for the next message after
// it has one (the next of a channel comes once the previous is acked).
const followUpWait = 50 * time.Millisecond

// waiting reports the number of messages waiting for userID.
func (in *Inbox) waiting(userID string) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := 0
	for _, p := range in.pending {
		if p.msg.UserID == userID {
			n++
		}
	}
	return n
}

// unread counts the messages waiting for userID per user channel.
func (in *Inbox) unread(userID string) map[string]int {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := map[string]int{}
	for _, p := range in.pending {
		if p.msg.UserID == userID {
			out[p.msg.UserChannelID]++
		}
	}
	return out
}
