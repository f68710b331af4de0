package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/xconn/xconn/store"
)

// Defaults of the memory window ([Options.MemoryMessages], [Options.MemoryBytes]).
const (
	// DefaultMemoryMessages is the number of past messages (user,
	// assistant, tool) replayed to the model.
	DefaultMemoryMessages = 40
	// DefaultMemoryBytes bounds the past messages together, as stored.
	DefaultMemoryBytes = 64 << 10
	// DefaultLocalConversations bounds the conversations the in-process
	// memory keeps (used when Options.Memory is nil).
	DefaultLocalConversations = 1000
)

// Memory persists conversations: *store.DB implements it (SQLite and
// PostgreSQL, encrypted at rest, bounded per conversation). The agent
// keys a conversation by the user channel id, appends each turn's
// messages in one call and trims the memory to its window there.
// Implementations must be safe for concurrent use.
type Memory interface {
	AppendMemory(ctx context.Context, conversation string, entries [][]byte, maxEntries int, maxBytes int64) error
	ListMemory(ctx context.Context, conversation string) ([]store.MemoryEntry, error)
}

var _ Memory = (*store.DB)(nil)

// storedMessage is the encoding of one memory entry: the message as the
// model saw it, text only (images are kept as their note), with a
// version so that the format may change.
type storedMessage struct {
	V int `json:"v"`
	Message
}

func encodeMemory(m Message) ([]byte, error) {
	m.Parts = nil
	return json.Marshal(storedMessage{V: 1, Message: m})
}

// MarshalJSON keeps the embedded Message's encoding beside the version.
func (s storedMessage) MarshalJSON() ([]byte, error) {
	b, err := s.Message.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append([]byte(fmt.Sprintf(`{"v":%d,`, s.V)), b[1:]...), nil
}

// loadHistory decodes a conversation, skipping unreadable entries, then
// drops leading entries up to the first user message, so that a window
// cut between a tool call and its result never reaches the model.
func loadHistory(entries []store.MemoryEntry) []Message {
	out := make([]Message, 0, len(entries))
	for _, e := range entries {
		var m Message
		if json.Unmarshal(e.Data, &m) != nil || m.Role == "" {
			continue
		}
		out = append(out, m)
	}
	for len(out) > 0 && out[0].Role != RoleUser {
		out = out[1:]
	}
	// Tool results must follow the assistant message that asked for them.
	valid := out[:0]
	pending := map[string]bool{}
	for _, m := range out {
		switch m.Role {
		case RoleAssistant:
			pending = map[string]bool{}
			for _, c := range m.ToolCalls {
				pending[c.ID] = true
			}
		case RoleTool:
			if !pending[m.ToolCallID] {
				continue
			}
			delete(pending, m.ToolCallID)
		default:
			pending = map[string]bool{}
		}
		valid = append(valid, m)
	}
	return valid
}

// localMemory is the in-process Memory used when none is configured: the
// same windows, at most max conversations (the least recently written is
// dropped), lost on restart. Safe for concurrent use.
type localMemory struct {
	mu    sync.Mutex
	max   int
	convs map[string]*localConv
	tick  int64
}

type localConv struct {
	entries []store.MemoryEntry
	seq     int64
	used    int64
}

func newLocalMemory(max int) *localMemory {
	return &localMemory{max: max, convs: map[string]*localConv{}}
}

func (l *localMemory) AppendMemory(_ context.Context, conversation string, entries [][]byte, maxEntries int, maxBytes int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.convs[conversation]
	if c == nil {
		if len(l.convs) >= l.max {
			var oldest string
			for k, v := range l.convs {
				if oldest == "" || v.used < l.convs[oldest].used {
					oldest = k
				}
			}
			delete(l.convs, oldest)
		}
		c = &localConv{}
		l.convs[conversation] = c
	}
	l.tick++
	c.used = l.tick
	now := time.Now()
	for _, e := range entries {
		c.seq++
		c.entries = append(c.entries, store.MemoryEntry{Seq: c.seq, Data: append([]byte(nil), e...), CreatedAt: now})
	}
	var total int64
	keep := 0
	for i := len(c.entries) - 1; i >= 0; i-- {
		total += int64(len(c.entries[i].Data))
		if keep+1 > maxEntries || total > maxBytes {
			break
		}
		keep++
	}
	if keep < len(c.entries) {
		c.entries = append([]store.MemoryEntry(nil), c.entries[len(c.entries)-keep:]...)
	}
	return nil
}

func (l *localMemory) ListMemory(_ context.Context, conversation string) ([]store.MemoryEntry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.convs[conversation]; c != nil {
		return append([]store.MemoryEntry(nil), c.entries...), nil
	}
	return nil, nil
}

// maxStoredEntry bounds one remembered message, as encoded.
const maxStoredEntry = store.MaxMemoryEntryBytes

// memoryWriteTimeout bounds the write of a turn to memory (it runs even
// when the turn's context ended, since the user has the answer).
const memoryWriteTimeout = 5 * time.Second

// encodeBounded encodes m for memory in at most limit bytes, cutting its
// text (then its tool call arguments) when needed.
func encodeBounded(m Message, limit int64) ([]byte, error) {
	b, err := encodeMemory(m)
	if err != nil || int64(len(b)) <= limit {
		return b, err
	}
	over := int64(len(b)) - limit + 64
	if int64(len(m.Content)) > over {
		m.Content = shorten(m.Content, len(m.Content)-int(over)) + " [cut]"
		if b, err = encodeMemory(m); err == nil && int64(len(b)) <= limit {
			return b, nil
		}
	}
	m.Content = shorten(m.Content, 256)
	calls := make([]ToolCall, len(m.ToolCalls))
	copy(calls, m.ToolCalls)
	for i := range calls {
		calls[i].Function.Arguments = `{}`
	}
	m.ToolCalls = calls
	if b, err = encodeMemory(m); err == nil && int64(len(b)) <= limit {
		return b, nil
	}
	return nil, fmt.Errorf("openai: message of %d bytes does not fit the memory", len(b))
}

// window keeps the newest messages within count and bytes (as encoded),
// starting at a user message.
func window(ms []Message, count int, bytes int64) []Message {
	var total int64
	start := len(ms)
	for i := len(ms) - 1; i >= 0; i-- {
		b, _ := encodeMemory(ms[i])
		total += int64(len(b))
		if len(ms)-i > count || total > bytes {
			break
		}
		start = i
	}
	ms = ms[start:]
	for len(ms) > 0 && ms[0].Role != RoleUser {
		ms = ms[1:]
	}
	return ms
}
