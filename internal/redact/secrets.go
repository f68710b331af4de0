// Package redact keeps secrets out of logs: a bounded set of known secret
// values scrubbed from any text ([Secrets]) and an slog.Handler wrapper
// ([NewHandler]) that redacts attributes with secret-looking keys and scrubs
// every string attribute and message. Both are safe for concurrent use.
package redact

import (
	"container/list"
	"slices"
	"strings"
	"sync"
)

// Redacted replaces every secret value.
const Redacted = "[REDACTED]"

// DefaultMaxSecrets is the default capacity of a [Secrets] set.
const DefaultMaxSecrets = 10000

// MinSecretLen is the shortest value [Secrets.Add] keeps: shorter values would
// scrub common words.
const MinSecretLen = 6

// Secrets is a bounded, concurrency-safe set of secret values to scrub. When
// the set is full, adding a value drops the oldest one. The zero value is not
// usable; call [NewSecrets]. A nil *Secrets scrubs nothing.
type Secrets struct {
	max int

	mu    sync.RWMutex
	order *list.List               // oldest first; values are strings
	index map[string]*list.Element // value -> its element in order
	// repl is the replacer of the current set, rebuilt lazily after a change.
	repl *strings.Replacer
}

// NewSecrets returns an empty set holding at most max values
// (DefaultMaxSecrets when max <= 0).
func NewSecrets(max int) *Secrets {
	if max <= 0 {
		max = DefaultMaxSecrets
	}
	return &Secrets{max: max, order: list.New(), index: make(map[string]*list.Element)}
}

// Add records values as secrets. Values shorter than MinSecretLen bytes are
// ignored; adding a known value makes it the newest.
func (s *Secrets) Add(values ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if len(v) < MinSecretLen {
			continue
		}
		if e, ok := s.index[v]; ok {
			s.order.MoveToBack(e)
			continue
		}
		s.index[v] = s.order.PushBack(v)
		s.repl = nil
		for s.order.Len() > s.max {
			oldest := s.order.Front()
			s.order.Remove(oldest)
			delete(s.index, oldest.Value.(string))
		}
	}
}

// Remove forgets values (for example a token that was revoked).
func (s *Secrets) Remove(values ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if e, ok := s.index[v]; ok {
			s.order.Remove(e)
			delete(s.index, v)
			s.repl = nil
		}
	}
}

// Len returns the number of values held.
func (s *Secrets) Len() int {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.index)
}

// Scrub replaces every known secret in text with "[REDACTED]". When one
// secret contains another, the longer one is replaced first.
func (s *Secrets) Scrub(text string) string {
	if s == nil || text == "" {
		return text
	}
	r := s.replacer()
	if r == nil {
		return text
	}
	return r.Replace(text)
}

// replacer returns the replacer of the current set, building it if needed;
// nil when the set is empty.
func (s *Secrets) replacer() *strings.Replacer {
	s.mu.RLock()
	r, n := s.repl, len(s.index)
	s.mu.RUnlock()
	if r != nil || n == 0 {
		return r
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.repl != nil || len(s.index) == 0 {
		return s.repl
	}
	vals := make([]string, 0, len(s.index))
	for v := range s.index {
		vals = append(vals, v)
	}
	// strings.Replacer prefers earlier pairs at the same position: put
	// longer secrets first so that a secret containing another is replaced
	// whole.
	sortByLenDesc(vals)
	pairs := make([]string, 0, 2*len(vals))
	for _, v := range vals {
		pairs = append(pairs, v, Redacted)
	}
	s.repl = strings.NewReplacer(pairs...)
	return s.repl
}

func sortByLenDesc(vs []string) {
	slices.SortFunc(vs, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
}
