package connector

import (
	"sync"
	"time"
)

// logEvery is the least time between two warning lines of one kind.
const logEvery = 10 * time.Second

// logLimiter keeps repetitive warnings (a flood of refused sockets, of busy
// answers, of hello timeouts) to one line per kind every logEvery; the next
// line says how many were left out. Its kinds are a fixed set of constants,
// so it holds a bounded map. The zero value is ready; safe for concurrent
// use.
type logLimiter struct {
	mu    sync.Mutex
	kinds map[string]*logKind
}

type logKind struct {
	last       time.Time
	suppressed int
}

// allow reports whether a line of kind may be written at now, and how many
// lines of that kind were left out since the last one written.
func (l *logLimiter) allow(kind string, now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kinds == nil {
		l.kinds = map[string]*logKind{}
	}
	k := l.kinds[kind]
	if k == nil {
		k = &logKind{}
		l.kinds[kind] = k
	}
	if !k.last.IsZero() && now.Sub(k.last) < logEvery {
		k.suppressed++
		return false, 0
	}
	n := k.suppressed
	k.last, k.suppressed = now, 0
	return true, n
}

// logLimited writes a warning of kind (a constant) through the limiter.
func (s *Server) logLimited(kind, msg string, args ...any) {
	ok, n := s.logs.allow(kind, time.Now())
	if !ok {
		s.metrics.logsSuppressed.Inc()
		return
	}
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	s.log.Warn(msg, args...)
}
