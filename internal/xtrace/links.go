package xtrace

import (
	"sync"

	"go.opentelemetry.io/otel/trace"
)

// DefaultLinks is the number of span contexts a Links keeps.
const DefaultLinks = 4096

// Links remembers, for a bounded number of keys (a channel and a
// message_id), the span context under which a message was handed to a
// durable outbox, so that the send that happens later on another goroutine
// continues the same trace. It lives in memory only: a message sent after
// a restart starts a new trace. The oldest key is forgotten first. Safe for
// concurrent use; a nil *Links records nothing.
type Links struct {
	mu    sync.Mutex
	max   int
	m     map[string]linked
	order []string // insertion order, a ring of max keys
	next  int
}

type linked struct {
	sc   trace.SpanContext
	slot int // the key's slot in order
}

// NewLinks returns a Links holding at most max keys (DefaultLinks when max
// <= 0).
func NewLinks(max int) *Links {
	if max <= 0 {
		max = DefaultLinks
	}
	return &Links{max: max, m: make(map[string]linked), order: make([]string, max)}
}

func linkKey(channel, messageID string) string { return channel + "\x00" + messageID }

// Put records sc for (channel, messageID); an invalid sc is not recorded.
func (l *Links) Put(channel, messageID string, sc trace.SpanContext) {
	if l == nil || !sc.IsValid() {
		return
	}
	k := linkKey(channel, messageID)
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.m[k]; ok {
		l.m[k] = linked{sc: sc, slot: e.slot}
		return
	}
	if old := l.order[l.next]; old != "" {
		if e, ok := l.m[old]; ok && e.slot == l.next {
			delete(l.m, old) // else removed already, or recorded again in a later slot
		}
	}
	l.order[l.next] = k
	l.m[k] = linked{sc: sc, slot: l.next}
	l.next = (l.next + 1) % l.max
}

// Get returns the span context recorded for (channel, messageID), if any.
// It stays recorded (a send may be retried) until evicted or removed.
func (l *Links) Get(channel, messageID string) trace.SpanContext {
	if l == nil {
		return trace.SpanContext{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[linkKey(channel, messageID)].sc
}

// Remove forgets (channel, messageID), once its message is delivered.
func (l *Links) Remove(channel, messageID string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	delete(l.m, linkKey(channel, messageID)) // its ring slot is reused in turn
	l.mu.Unlock()
}

// Len returns the number of keys recorded.
func (l *Links) Len() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}
