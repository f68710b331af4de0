package webchat

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/xconn/xconn/store"
)

// Defaults of the durable chat history.
const (
	// DefaultHistoryMessages is the number of complete messages kept per
	// channel and shown to a browser that opens or reloads the chat.
	DefaultHistoryMessages = 200
	// DefaultHistoryBytes bounds the stored history of one channel (the
	// JSON of its messages together, 2 MiB); the oldest messages go first.
	DefaultHistoryBytes = 2 << 20
	// historyOpTimeout bounds one history read or write.
	historyOpTimeout = 5 * time.Second
)

// HistoryStore is where the web chat keeps each channel's chat history:
// an append-only, bounded log per conversation key. [*store.DB] implements
// it (encrypted at rest, SQLite or PostgreSQL). Implementations are safe
// for concurrent use.
type HistoryStore interface {
	// AppendMemory appends entries to a conversation, then drops its
	// oldest entries until at most maxEntries and maxBytes remain.
	AppendMemory(ctx context.Context, conversation string, entries [][]byte, maxEntries int, maxBytes int64) error
	// ListMemory returns a conversation's entries, oldest first.
	ListMemory(ctx context.Context, conversation string) ([]store.MemoryEntry, error)
	// ClearMemory forgets a conversation.
	ClearMemory(ctx context.Context, conversation string) error
}

// history is the durable chat history of every channel, or nil when the
// connector has no HistoryStore (then the hub's memory backlog is all).
type history struct {
	st       HistoryStore
	maxMsgs  int
	maxBytes int64
}

// historyKey is the conversation key of a channel's history; the prefix
// keeps it apart from other users of the same store (host agents key
// their memory by user channel id).
func historyKey(channel string) string { return "webchat/history/" + channel }

// add appends a complete message of channel.
func (h *history) add(ctx context.Context, channel string, m MessageEvent) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("webchat: encode history entry: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), historyOpTimeout)
	defer cancel()
	if err := h.st.AppendMemory(ctx, historyKey(channel), [][]byte{b}, h.maxMsgs, h.maxBytes); err != nil {
		return fmt.Errorf("webchat: save history of %s: %w", channel, err)
	}
	return nil
}

// list returns channel's stored messages, oldest first, as events; an
// entry that does not decode is skipped.
func (h *history) list(ctx context.Context, channel string) ([]event, error) {
	ctx, cancel := context.WithTimeout(ctx, historyOpTimeout)
	defer cancel()
	entries, err := h.st.ListMemory(ctx, historyKey(channel))
	if err != nil {
		return nil, fmt.Errorf("webchat: read history of %s: %w", channel, err)
	}
	type timed struct {
		at int64
		ev event
	}
	msgs := make([]timed, 0, len(entries))
	at := make(map[string]int, len(entries)) // message id -> index in msgs
	for _, e := range entries {
		var m MessageEvent
		if json.Unmarshal(e.Data, &m) != nil || m.MessageID == "" {
			continue
		}
		t := timed{at: m.CreatedAt, ev: event{typ: EventMessage, data: e.Data}}
		if i, ok := at[m.MessageID]; ok { // recorded again (a repeated tool call): once, as last recorded
			msgs[i].ev = t.ev
			continue
		}
		at[m.MessageID] = len(msgs)
		msgs = append(msgs, t)
	}
	// Appends of a message and its answer may race (each is written after
	// it is shown); the page shows them in the order they were written.
	slices.SortStableFunc(msgs, func(a, b timed) int { return cmp.Compare(a.at, b.at) })
	out := make([]event, len(msgs))
	for i, m := range msgs {
		out[i] = m.ev
	}
	return out, nil
}

// clear forgets channel's history (the channel was signed out or deleted).
func (h *history) clear(ctx context.Context, channel string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), historyOpTimeout)
	defer cancel()
	if err := h.st.ClearMemory(ctx, historyKey(channel)); err != nil {
		return fmt.Errorf("webchat: clear history of %s: %w", channel, err)
	}
	return nil
}

// publishMessage shows a complete message on the channel's pages, then
// records it in the durable history (shown first: a user's message must
// reach the page before the answer to it can). A history write that fails
// is logged; the message is still shown.
//
// It holds the channel's publish lock shared from showing to recording, so
// that a stream that subscribes meanwhile (subscribeWithHistory, which holds
// it exclusively) sees the message either live or in the history it reads,
// never neither (xconn chaos found a reconnecting stream that missed one).
func (c *Connector) publishMessage(ctx context.Context, channel string, m MessageEvent) error {
	ev, err := newEvent(EventMessage, m)
	if err != nil {
		return fmt.Errorf("webchat: encode message: %w", err)
	}
	mu := c.pubLock(channel)
	mu.RLock()
	defer mu.RUnlock()
	c.hub.publish(channel, ev)
	if c.history != nil {
		if err := c.history.add(ctx, channel, m); err != nil {
			c.log.Warn("webchat: history", "channel", channel, "error", err)
		}
	}
	return nil
}

// pubLockStripes is the number of publish locks the channels share.
const pubLockStripes = 64

// pubLock returns the publish lock of channel: one of a fixed set of
// stripes, so the locks take no memory per channel.
func (c *Connector) pubLock(channel string) *sync.RWMutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(channel))
	return &c.pubLocks[h.Sum32()%pubLockStripes]
}

// subscribeWithHistory opens a live stream of channel for client and reads
// the channel's stored history, both under the channel's publish lock: a
// message published around the subscription is in the history or on the
// stream (or both: the page keys messages by id). A history that cannot be
// read is logged and left out.
func (c *Connector) subscribeWithHistory(ctx context.Context, channel, client string) (*subscriber, []event, error) {
	mu := c.pubLock(channel)
	mu.Lock()
	defer mu.Unlock()
	sub, err := c.hub.subscribe(channel, client)
	if err != nil {
		return nil, nil, err
	}
	var past []event
	if c.history != nil {
		if past, err = c.history.list(ctx, channel); err != nil {
			c.log.Warn("webchat: history", "channel", channel, "error", err)
		}
	}
	return sub, past, nil
}
