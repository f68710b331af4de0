package connector

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// connLimiter bounds the open connections of an http.Server through its
// ConnState hook: a new connection beyond max closes the connection that
// has been idle (a keep-alive between requests) the longest, or, when none
// is idle, the new connection itself. Hijacked connections (WebSockets,
// bounded by Options.MaxSockets) leave its count. So idle keep-alive
// connections cannot take the descriptors a new request needs, and /health
// keeps answering. Safe for concurrent use; it owns no goroutine.
type connLimiter struct {
	max int

	mu    sync.Mutex
	conns map[net.Conn]connEntry
}

type connEntry struct {
	idle  bool
	since time.Time
}

func newConnLimiter(max int) *connLimiter {
	return &connLimiter{max: max, conns: map[net.Conn]connEntry{}}
}

// state is an http.Server ConnState hook.
func (l *connLimiter) state(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	switch st {
	case http.StateNew:
		l.conns[c] = connEntry{since: time.Now()}
		if len(l.conns) <= l.max {
			l.mu.Unlock()
			return
		}
		victim := c
		var oldest time.Time
		for vc, e := range l.conns {
			if e.idle && (victim == c || e.since.Before(oldest)) {
				victim, oldest = vc, e.since
			}
		}
		delete(l.conns, victim)
		l.mu.Unlock()
		_ = victim.Close()
		return
	case http.StateActive:
		if _, ok := l.conns[c]; ok {
			l.conns[c] = connEntry{since: time.Now()}
		}
	case http.StateIdle:
		if _, ok := l.conns[c]; ok {
			l.conns[c] = connEntry{idle: true, since: time.Now()}
		}
	case http.StateHijacked, http.StateClosed:
		delete(l.conns, c)
	}
	l.mu.Unlock()
}

// open returns the connections counted.
func (l *connLimiter) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// withWriteDeadline bounds the writing of h's response to d from the start
// of the request (an http.Server-wide WriteTimeout would also cut the
// long-lived responses of routes added with Handle, such as event
// streams; a WebSocket's hijacked connection drops the deadline).
func withWriteDeadline(d time.Duration, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
		h(w, r)
	}
}
