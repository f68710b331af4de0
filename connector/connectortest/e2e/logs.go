package e2e

import (
	"bytes"
	"log/slog"
	"strconv"
	"sync"
)

// MaxLogBytes bounds what one [Logs] keeps; later output is counted, not
// kept, and [Logs.String] ends with a line saying how much was dropped.
const MaxLogBytes = 16 << 20

// Logs collects the log output of a connector, a host or a child process
// for a test, so that the test can show it on failure and check it for
// secrets. The zero value is ready to use; it is safe for concurrent use.
type Logs struct {
	mu      sync.Mutex
	b       bytes.Buffer
	dropped int
}

// Write appends p, as an io.Writer for a log handler. It never fails.
func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	keep := p
	if room := max(MaxLogBytes-l.b.Len(), 0); len(keep) > room {
		l.dropped += len(keep) - room
		keep = keep[:room]
	}
	l.b.Write(keep)
	return len(p), nil
}

// String returns everything written so far.
func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dropped > 0 {
		return l.b.String() + "\n[e2e: " + strconv.Itoa(l.dropped) + " bytes of later output dropped]\n"
	}
	return l.b.String()
}

// Logger returns a logger that writes text lines at debug level (every
// line a connector or a host can write) into l.
func (l *Logs) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
