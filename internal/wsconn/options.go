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

	"github.com/coder/websocket"

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
	// DefaultSendQueueBytes is the default bound on the bytes of the
	// outbound frames queued (or waiting to be queued) on one Conn (16 MiB).
	DefaultSendQueueBytes int64 = 16 << 20
)

// StatusSendQueueFull is the close code of a Conn whose outbound queue
// passed Options.SendQueueBytes: the peer does not read what it is sent
// (1008, policy violation; the reason says "send queue full").
const StatusSendQueueFull = websocket.StatusPolicyViolation

// ErrClosed is returned by [Conn.Send] and [Conn.SendRaw] once the connection
// is closing or closed.
var ErrClosed = errors.New("wsconn: connection closed")

// ErrQueueFull is returned by [Conn.TrySendRaw] when the outbound queue is
// full.
var ErrQueueFull = errors.New("wsconn: send queue full")

// ErrSendQueueFull is returned by [Conn.Send], [Conn.SendRaw] and
// [Conn.TrySendRaw] when a frame would take the outbound queue past
// Options.SendQueueBytes: the frame is dropped and the connection is closed
// with [StatusSendQueueFull].
var ErrSendQueueFull = errors.New("wsconn: send queue over its byte bound: connection closed")

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
	// SendQueueBytes bounds the bytes of the outbound frames that are
	// queued, or blocked waiting for room in the queue, and not yet
	// written. A frame that would pass it (unless nothing else is queued,
	// so one large frame always fits) closes the connection with
	// [StatusSendQueueFull]: a peer that does not read cannot make the
	// process hold more than this per connection. Default
	// [DefaultSendQueueBytes].
	SendQueueBytes int64
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
	if o.SendQueueBytes <= 0 {
		o.SendQueueBytes = DefaultSendQueueBytes
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}
