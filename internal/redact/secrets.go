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

// DefaultMaxSecretBytes is the default bound on the bytes of the values a
// [Secrets] set holds (4 MiB).
const DefaultMaxSecretBytes = 4 << 20

// MinSecretLen is the shortest value [Secrets.Add] keeps: shorter values would
// scrub common words.
const MinSecretLen = 6

// MaxSecretLen is the longest value [Secrets.Add] keeps (64 KiB). Callers
// refuse longer secret input before it reaches the set (the connector SDK
// bounds sign-in form values well below it), so that one value cannot
// displace the others.
const MaxSecretLen = 64 << 10

// filterBits is the log2 of the size of the prefix filter.
const filterBits = 14

// Secrets is a bounded, concurrency-safe set of secret values to scrub,
// bounded in count and in bytes. When the set is full, adding a value drops
// the oldest ones. Adding and removing a value costs time in the number of
// values sharing its first MinSecretLen bytes, not in the size of the set:
// values are indexed by their first MinSecretLen bytes, and [Secrets.Scrub]
// slides a window of that size over the text, testing a small counting
// filter before the index. The zero value is not usable; call [NewSecrets].
// A nil *Secrets scrubs nothing.
type Secrets struct {
	max      int
	maxBytes int

	mu     sync.RWMutex
	order  *list.List               // oldest first; values are strings
	index  map[string]*list.Element // value -> its element in order (nil for a pinned value)
	bytes  int                      // total bytes of the values held
	bucket map[uint64][]string      // first MinSecretLen bytes -> values, longest first
	filter []uint32                 // counts of values per filter slot of their prefix
}

// NewSecrets returns an empty set holding at most max values
// (DefaultMaxSecrets when max <= 0) of at most DefaultMaxSecretBytes bytes
// in all.
func NewSecrets(max int) *Secrets {
	return NewSecretsBytes(max, 0)
}

// NewSecretsBytes returns an empty set holding at most max values
// (DefaultMaxSecrets when max <= 0) of at most maxBytes bytes in all
// (DefaultMaxSecretBytes when maxBytes <= 0).
func NewSecretsBytes(max, maxBytes int) *Secrets {
	if max <= 0 {
		max = DefaultMaxSecrets
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxSecretBytes
	}
	return &Secrets{
		max: max, maxBytes: maxBytes, order: list.New(), index: make(map[string]*list.Element),
		bucket: make(map[uint64][]string), filter: make([]uint32, 1<<filterBits),
	}
}

// prefixKey packs the first MinSecretLen bytes of v (len(v) >= MinSecretLen)
// into an integer.
func prefixKey(v string) uint64 {
	var k uint64
	for i := range MinSecretLen {
		k = k<<8 | uint64(v[i])
	}
	return k
}

// slot maps a prefix key to its filter slot.
func slot(k uint64) uint64 { return (k * 0x9E3779B97F4A7C15) >> (64 - filterBits) }

// Add records values as secrets. Values shorter than MinSecretLen or longer
// than MaxSecretLen bytes are ignored; adding a known value makes it the
// newest.
func (s *Secrets) Add(values ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if len(v) < MinSecretLen || len(v) > MaxSecretLen {
			continue
		}
		if e, ok := s.index[v]; ok {
			if e != nil {
				s.order.MoveToBack(e)
			}
			continue
		}
		v = strings.Clone(v) // never keep alive a larger string the value was cut from
		s.index[v] = s.order.PushBack(v)
		s.bytes += len(v)
		s.insertLocked(v)
		for s.order.Len() > s.max || (s.bytes > s.maxBytes && s.order.Len() > 1) {
			s.removeLocked(s.order.Front().Value.(string))
		}
	}
}

// Pin records values as secrets that are never evicted (a process's own
// API key, which a flood of other secrets must not push out). They count
// against neither bound; [Secrets.Remove] forgets them. Values outside
// [MinSecretLen, MaxSecretLen] are ignored.
func (s *Secrets) Pin(values ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if len(v) < MinSecretLen || len(v) > MaxSecretLen {
			continue
		}
		if e, ok := s.index[v]; ok {
			if e == nil {
				continue // already pinned
			}
			s.removeLocked(v)
		}
		v = strings.Clone(v)
		s.index[v] = nil
		s.insertLocked(v)
	}
}

// insertLocked indexes v for Scrub; the caller holds s.mu for writing.
func (s *Secrets) insertLocked(v string) {
	k := prefixKey(v)
	b := s.bucket[k]
	i, _ := slices.BinarySearchFunc(b, v, byLenDesc)
	s.bucket[k] = slices.Insert(b, i, v)
	s.filter[slot(k)]++
}

// byLenDesc orders values longest first, then by content.
func byLenDesc(a, b string) int {
	if len(a) != len(b) {
		return len(b) - len(a)
	}
	return strings.Compare(a, b)
}

// removeLocked forgets v; the caller holds s.mu for writing.
func (s *Secrets) removeLocked(v string) {
	e, ok := s.index[v]
	if !ok {
		return
	}
	if e != nil {
		s.order.Remove(e)
		s.bytes -= len(v)
	}
	delete(s.index, v)
	k := prefixKey(v)
	b := s.bucket[k]
	if i, found := slices.BinarySearchFunc(b, v, byLenDesc); found {
		b = slices.Delete(b, i, i+1)
	}
	if len(b) == 0 {
		delete(s.bucket, k)
	} else {
		s.bucket[k] = b
	}
	s.filter[slot(k)]--
}

// Remove forgets values (for example a token that was revoked).
func (s *Secrets) Remove(values ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		s.removeLocked(v)
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

// Bytes returns the total bytes of the values held, pinned ones aside.
func (s *Secrets) Bytes() int {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.bytes
}

// Scrub replaces every known secret in text with "[REDACTED]", scanning
// from the left; when several secrets start at one position, the longest
// is replaced (so a secret containing another is replaced whole). It
// allocates only when text contains a secret.
func (s *Secrets) Scrub(text string) string {
	if s == nil || len(text) < MinSecretLen {
		return text
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.index) == 0 {
		return text
	}
	var out strings.Builder
	last := 0 // text[:last] is written to out (or needs no change)
	const mask = 1<<(8*MinSecretLen) - 1
	var k uint64
	for i := range MinSecretLen - 1 {
		k = k<<8 | uint64(text[i])
	}
	for i := 0; i+MinSecretLen <= len(text); {
		k = (k<<8 | uint64(text[i+MinSecretLen-1])) & mask
		if s.filter[slot(k)] != 0 {
			if v := s.matchAt(text[i:], k); v != "" {
				if out.Len() == 0 {
					out.Grow(len(text))
				}
				out.WriteString(text[last:i])
				out.WriteString(Redacted)
				i += len(v)
				last = i
				// Restart the window after the secret.
				k = 0
				for j := i; j < i+MinSecretLen-1 && j < len(text); j++ {
					k = k<<8 | uint64(text[j])
				}
				continue
			}
		}
		i++
	}
	if last == 0 {
		return text
	}
	out.WriteString(text[last:])
	return out.String()
}

// matchAt returns the longest secret that t starts with, whose prefix key
// is k, or "". The caller holds s.mu.
func (s *Secrets) matchAt(t string, k uint64) string {
	for _, v := range s.bucket[k] {
		if strings.HasPrefix(t, v) {
			return v
		}
	}
	return ""
}
