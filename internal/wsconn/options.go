// Package wsconn is one data-plane WebSocket of the xAgent Connector
// protocol, shared by the connector SDK (server side, [Accept]) and the host
// (client side, [Dial]).
//
// A [Conn] owns exactly two goroutines while [Conn.Run] executes: one reader
// that reads with the connection's lifetime context and hands every inbound
// text frame to a non-blocking [Handler], and one writer that drains a bounded
// outbound queue with a per-frame write timeout. The read loop never runs
// protocol work itself, and no timeout is ever put on a read: with
// coder/websocket a Read whose context ends closes the whole connection.
//
// While the writer drains a burst of queued frames it corks the socket (the
// net.Conn under coder/websocket, which flushes every message) so that the
// burst leaves in one write(2); at most 64 KiB is held back, and nothing is
// held back once the queue is empty, so an idle connection adds no latency.
// The write timeout is a deadline on every write that reaches the socket.
//
// Frames are text frames carrying exactly one JSON packet each. The
// subprotocol [protocol.Subprotocol] must be negotiated on both sides.
package wsconn

import (
	"errors"
	"log/slog"
	"time"

	"github.com/xconn/xconn/protocol"
)

// Defaults of [Options].
const (
	// DefaultReadLimit is the default maximum size of one inbound frame (1 MiB).
	DefaultReadLimit int64 = 1 << 20
	// DefaultSendQueue is the default length of the bounded outbound queue.
	DefaultSendQueue = 256
	// DefaultWriteTimeout bounds the write of one frame.
	DefaultWriteTimeout = 10 * time.Second
)

// ErrClosed is returned by [Conn.Send] and [Conn.SendRaw] once the connection
// is closing or closed.
var ErrClosed = errors.New("wsconn: connection closed")

// ErrQueueFull is returned by [Conn.TrySendRaw] when the outbound queue is
// full.
var ErrQueueFull = errors.New("wsconn: send queue full")

// ErrSubprotocol reports that the peer did not negotiate
// [protocol.Subprotocol]. [Accept] and [Dial] wrap it.
var ErrSubprotocol = errors.New("wsconn: subprotocol " + protocol.Subprotocol + " not negotiated")

// Options configures a [Conn]. The zero value is usable: every zero field
// takes its documented default. Options is read once by [Accept] or [Dial].
type Options struct {
	// ReadLimit is the maximum size in bytes of one inbound frame; a larger
	// frame closes the connection with status 1009 (message too big).
	// Default [DefaultReadLimit].
	ReadLimit int64
	// SendQueue is the length of the bounded outbound queue. Default
	// [DefaultSendQueue].
	SendQueue int
	// WriteTimeout bounds the write of one frame, and the flush of queued
	// frames on [Conn.Close]. Default [DefaultWriteTimeout].
	WriteTimeout time.Duration
	// Logger receives debug records about the connection (never frame
	// contents). nil discards them.
	Logger *slog.Logger
	// OriginPatterns lists extra host patterns whose browser Origin header
	// [Accept] allows (see coder/websocket AcceptOptions.OriginPatterns).
	// Requests without an Origin header, as sent by non-browser clients,
	// are always allowed.
	OriginPatterns []string
}

func (o Options) withDefaults() Options {
	if o.ReadLimit <= 0 {
		o.ReadLimit = DefaultReadLimit
	}
	if o.SendQueue <= 0 {
		o.SendQueue = DefaultSendQueue
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}
