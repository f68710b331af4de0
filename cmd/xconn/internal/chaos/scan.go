package chaos

import (
	"bytes"
	"sync"
)

// Scanner finds canary secrets in streams of bytes that arrive in chunks:
// a canary split across two chunks is found. Each stream (one direction of
// one connection, one log file) gets its own [Stream]. Safe for
// concurrent use; the Streams are not (one writer each).
type Scanner struct {
	canaries [][]byte
	labels   []string
	maxLen   int

	mu   sync.Mutex
	hits []Leak
}

// Leak is one canary found: where (a stream's name) and which canary (by
// its label, never its value).
type Leak struct {
	Where  string `json:"where"`
	Canary string `json:"canary"`
}

// NewScanner returns a scanner for canaries, a map from a label (such as
// "api_key") to the secret value. Empty values are ignored.
func NewScanner(canaries map[string]string) *Scanner {
	s := &Scanner{}
	for label, v := range canaries {
		if v == "" {
			continue
		}
		s.canaries = append(s.canaries, []byte(v))
		s.labels = append(s.labels, label)
		s.maxLen = max(s.maxLen, len(v))
	}
	return s
}

// Stream returns a new stream named where.
func (s *Scanner) Stream(where string) *Stream {
	return &Stream{s: s, where: where}
}

// Scan checks one complete buffer (a log line, an HTTP body).
func (s *Scanner) Scan(where string, b []byte) {
	st := s.Stream(where)
	st.Write(b)
}

// Leaks returns the canaries found so far.
func (s *Scanner) Leaks() []Leak {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Leak(nil), s.hits...)
}

func (s *Scanner) record(l Leak) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.hits {
		if h == l {
			return // one report per stream and canary
		}
	}
	if len(s.hits) < maxLeaks {
		s.hits = append(s.hits, l)
	}
}

// maxLeaks bounds the recorded findings.
const maxLeaks = 1000

// Stream is one byte stream checked by a Scanner; it keeps the last
// maxLen-1 bytes so that a canary split across writes is found. Not safe
// for concurrent use.
type Stream struct {
	s     *Scanner
	where string
	tail  []byte
}

// Write scans p; it never fails (an io.Writer for io.TeeReader and
// io.MultiWriter).
func (st *Stream) Write(p []byte) (int, error) {
	s := st.s
	if s.maxLen == 0 {
		return len(p), nil
	}
	buf := append(st.tail, p...)
	for i, c := range s.canaries {
		if bytes.Contains(buf, c) {
			s.record(Leak{Where: st.where, Canary: s.labels[i]})
		}
	}
	keep := min(len(buf), s.maxLen-1)
	st.tail = append(st.tail[:0], buf[len(buf)-keep:]...)
	return len(p), nil
}
