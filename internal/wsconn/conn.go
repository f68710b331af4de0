package wsconn

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/protocol"
)

// Handler receives each inbound frame on the reader goroutine. It must not
// block (hand work off, or answer with [Conn.TrySendRaw], which never
// waits). env is nil when err != nil; err is a *protocol.Error with code
// invalid_packet for a binary frame or malformed JSON; raw is the frame
// bytes, owned by the handler from then on.
type Handler func(env *protocol.Envelope, raw []byte, err error)

// maxCloseReason is the longest close reason a close frame can carry.
const maxCloseReason = 123

// Conn is one data-plane WebSocket. It is created by [Accept] or [Dial] and
// owned by whoever calls [Conn.Run]; Send, SendRaw, Close, Done and
// Subprotocol are safe for concurrent use from any goroutine.
type Conn struct {
	ws    *websocket.Conn
	cork  *corkConn // the socket under ws; nil when unknown (writes then time out by context)
	opts  Options
	queue chan []byte

	closeReq chan struct{} // closed by the first Close
	readEnd  chan struct{} // closed when the read loop has ended
	// stopped is set just before closeReq or readEnd is closed: the send
	// paths test it instead of selecting on both.
	stopped atomic.Bool
	done    chan struct{} // closed when the connection is finished
	// writerEnd is closed when the writer has stopped (a failed write
	// included): a sender blocked on a full queue, even on the reader
	// goroutine, then gives up.
	writerEnd chan struct{}
	// queued counts the bytes of frames accepted by the send paths and not
	// yet written (Options.SendQueueBytes bounds it).
	queued atomic.Int64

	mu      sync.Mutex
	started bool
	closing bool
	discard bool // the close drops the queued frames instead of flushing them
	code    websocket.StatusCode
	reason  string
}

func newConn(ws *websocket.Conn, cork *corkConn, opts Options) *Conn {
	opts = opts.withDefaults()
	ws.SetReadLimit(opts.ReadLimit)
	return &Conn{
		ws:       ws,
		cork:     cork,
		opts:     opts,
		queue:    make(chan []byte, opts.SendQueue),
		closeReq: make(chan struct{}),
		readEnd:  make(chan struct{}),
		done:     make(chan struct{}),

		writerEnd: make(chan struct{}),
	}
}

// Run starts the writer and reads until the socket closes or ctx ends; it
// returns only after both goroutines have stopped. Call it exactly once. A
// nil h discards inbound frames.
//
// Run returns nil after a local [Conn.Close] (ErrClosed when Close came
// before Run), ctx.Err() when ctx ended, and
// otherwise the read error (use websocket.CloseStatus to get the peer's close
// code).
func (c *Conn) Run(ctx context.Context, h Handler) error {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return errors.New("wsconn: Run called more than once")
	}
	if c.closing {
		c.mu.Unlock()
		<-c.done // Close without Run finishes the connection itself
		return ErrClosed
	}
	c.started = true
	c.mu.Unlock()
	defer close(c.done)

	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(c.writerEnd)
		c.writeLoop()
	})
	// The lifetime context ends the read by closing the socket, as
	// coder/websocket does for a Read whose context ends; registered once
	// here instead of by every Read (which costs a context.AfterFunc per
	// frame).
	stop := context.AfterFunc(ctx, func() { _ = c.ws.CloseNow() })
	err := c.readLoop(h)
	stop()
	c.stopped.Store(true)
	close(c.readEnd)
	if c.cork != nil {
		_ = c.cork.flush() // a close frame coder/websocket answered while corked
	}
	_ = c.ws.CloseNow() // unblocks the writer; waits for a Close in progress
	wg.Wait()

	c.mu.Lock()
	local := c.closing
	c.mu.Unlock()
	switch {
	case ctx.Err() != nil:
		c.opts.Logger.Debug("wsconn: context ended", "err", ctx.Err())
		return ctx.Err()
	case local:
		return nil
	default:
		c.opts.Logger.Debug("wsconn: read ended", "close_status", int(websocket.CloseStatus(err)))
		return fmt.Errorf("wsconn: read: %w", err)
	}
}

// readLoop reads frames and hands each one to h until the socket fails or
// is closed (Run closes it when the lifetime context ends). It never runs
// protocol work and never times a read.
func (c *Conn) readLoop(h Handler) error {
	for {
		typ, data, err := c.ws.Read(context.Background())
		if err != nil {
			return err
		}
		if h == nil {
			continue
		}
		if typ != websocket.MessageText {
			h(nil, data, protocol.Errorf(protocol.CodeInvalidPacket,
				"binary frame of %d bytes: packets travel in text frames", len(data)))
			continue
		}
		env, err := decodeEnvelope(data)
		if err != nil {
			h(nil, data, err)
			continue
		}
		h(env, data, nil)
	}
}

// writeLoop drains the queue until Close is requested (then it flushes and
// performs the close handshake) or the read loop ends.
func (c *Conn) writeLoop() {
	for {
		select {
		case f := <-c.queue:
			if !c.writeBurst(f) {
				_ = c.ws.CloseNow()
				return
			}
		case <-c.closeReq:
			c.flushAndClose()
			return
		case <-c.readEnd:
			return
		}
	}
}

// writeBurst writes f and the frames queued behind it, corked until the
// last one; false when a write failed.
func (c *Conn) writeBurst(f []byte) bool {
	for {
		more := len(c.queue) > 0
		if !more {
			// Let the goroutines that are ready to send do so before the
			// socket is uncorked: under load, several frames then leave
			// in one write(2); an idle connection loses only the yield.
			runtime.Gosched()
			more = len(c.queue) > 0
		}
		err := c.write(f, more)
		c.queued.Add(-int64(len(f)))
		if err != nil {
			c.opts.Logger.Debug("wsconn: write failed", "err", err)
			return false
		}
		if !more {
			return true
		}
		// The writer is the queue's only reader: the frame is there. A
		// Close or the end of the read loop is seen once the burst is
		// written (flushAndClose would write these frames anyway).
		select {
		case f = <-c.queue:
		default:
			return true
		}
	}
}

// write writes one frame, bounded by WriteTimeout. When more is true
// another frame is known to follow at once: the socket stays corked so that
// both leave in one write(2); the last frame of a burst uncorks it and sends
// everything held back.
func (c *Conn) write(frame []byte, more bool) error {
	if c.cork == nil {
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.WriteTimeout)
		defer cancel()
		return c.ws.Write(ctx, websocket.MessageText, frame)
	}
	// The corkConn puts the WriteTimeout deadline on every write that
	// reaches the network, so no per-frame context is needed.
	c.cork.setCorked(more)
	return c.ws.Write(context.Background(), websocket.MessageText, frame)
}

// flushAndClose writes what is queued, bounded in total by WriteTimeout, and
// then sends the close frame.
func (c *Conn) flushAndClose() {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.WriteTimeout)
	defer cancel()
	c.mu.Lock()
	discard := c.discard
	c.mu.Unlock()
flush:
	for {
		select {
		case f := <-c.queue:
			if discard {
				c.queued.Add(-int64(len(f)))
				continue
			}
			if c.cork != nil {
				c.cork.setCorked(len(c.queue) > 0)
			}
			err := c.ws.Write(ctx, websocket.MessageText, f)
			c.queued.Add(-int64(len(f)))
			if err != nil {
				c.opts.Logger.Debug("wsconn: flush on close failed", "err", err)
				break flush
			}
		default:
			break flush
		}
	}
	if c.cork != nil {
		c.cork.setCorked(false) // the close frame carries what is held back
	}
	c.mu.Lock()
	code, reason := c.code, c.reason
	c.mu.Unlock()
	if err := c.ws.Close(code, reason); err != nil {
		c.opts.Logger.Debug("wsconn: close handshake", "err", err)
	}
}

// Send encodes and enqueues a packet; it blocks while the queue is full until
// ctx ends and returns ErrClosed after close. A nil return means queued, not
// delivered.
func (c *Conn) Send(ctx context.Context, env *protocol.Envelope) error {
	if env == nil {
		return errors.New("wsconn: send: nil envelope")
	}
	// MarshalJSON, not Encode: it writes a valid frame in one pass, and
	// json.Marshal's second pass would only compact and HTML-escape it.
	b, err := env.MarshalJSON()
	if err != nil {
		return fmt.Errorf("wsconn: encode %s: %w", env.Type, err)
	}
	return c.SendRaw(ctx, b)
}

// SendRaw enqueues one already encoded packet as a text frame, like
// [Conn.Send]. The caller must not modify frame afterwards.
//
// A frame that would take the bytes queued past Options.SendQueueBytes is
// not queued: the connection is closed with [StatusSendQueueFull] and
// SendRaw returns [ErrSendQueueFull].
func (c *Conn) SendRaw(ctx context.Context, frame []byte) error {
	if c.stopped.Load() {
		return ErrClosed
	}
	if err := c.reserve(len(frame)); err != nil {
		return err
	}
	select { // the common case: room in the queue
	case c.queue <- frame:
		return nil
	default:
	}
	select {
	case c.queue <- frame:
		return nil
	case <-c.closeReq:
	case <-c.readEnd:
	case <-c.writerEnd:
	case <-ctx.Done():
		c.queued.Add(-int64(len(frame)))
		return ctx.Err()
	}
	c.queued.Add(-int64(len(frame)))
	return ErrClosed
}

// reserve counts n more bytes against Options.SendQueueBytes; when they do
// not fit (and something is queued) it closes the connection with
// StatusSendQueueFull and returns ErrSendQueueFull.
func (c *Conn) reserve(n int) error {
	for {
		cur := c.queued.Load()
		if cur > 0 && cur+int64(n) > c.opts.SendQueueBytes {
			c.opts.Logger.Warn("wsconn: send queue full, closing: the peer does not read",
				"queued_bytes", cur, "frame_bytes", n, "limit_bytes", c.opts.SendQueueBytes)
			_ = c.close(StatusSendQueueFull, fmt.Sprintf("send queue full (over %d bytes): the peer does not read", c.opts.SendQueueBytes), true)
			return ErrSendQueueFull
		}
		if c.queued.CompareAndSwap(cur, cur+int64(n)) {
			return nil
		}
	}
}

// QueuedBytes returns the bytes of the frames accepted by the send paths
// and not yet written.
func (c *Conn) QueuedBytes() int64 { return c.queued.Load() }

// TrySendRaw enqueues one already encoded packet like [Conn.SendRaw] but
// never blocks: it returns ErrQueueFull when the queue is full (nothing is
// queued then) and ErrClosed after close. It suits a Handler on the read
// goroutine, which must not wait for the writer.
func (c *Conn) TrySendRaw(frame []byte) error {
	if c.stopped.Load() {
		return ErrClosed
	}
	if err := c.reserve(len(frame)); err != nil {
		return err
	}
	select {
	case c.queue <- frame:
		return nil
	default:
		c.queued.Add(-int64(len(frame)))
		return ErrQueueFull
	}
}

// Close sends a close frame with code and reason (after flushing what is
// queued, bounded by WriteTimeout) and makes Run return. Safe to call more
// than once and concurrently; only the first call has an effect. When Run is
// executing, Close does not wait for it (wait on [Conn.Done]), so it may be
// called from a Handler. When Run was never called, Close performs the close
// handshake itself before returning. Frames sent concurrently with Close may
// be dropped. A reason longer than 123 bytes is truncated.
func (c *Conn) Close(code websocket.StatusCode, reason string) error {
	return c.close(code, reason, false)
}

// close is Close; with discard the queued frames are dropped, so that the
// close frame is the next thing the peer reads (a peer that let the queue
// fill would otherwise meet the write timeout before it).
func (c *Conn) close(code websocket.StatusCode, reason string, discard bool) error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return nil
	}
	c.closing, c.discard = true, discard
	c.code, c.reason = code, truncateReason(reason)
	c.stopped.Store(true)
	close(c.closeReq)
	started := c.started
	c.mu.Unlock()
	if started {
		return nil
	}
	defer close(c.done)
	c.flushAndClose()
	return nil
}

// Done returns a channel that is closed when the connection is finished:
// Run has returned, or Close completed without Run.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Subprotocol returns the negotiated subprotocol, always
// [protocol.Subprotocol] for a Conn returned by Accept or Dial.
func (c *Conn) Subprotocol() string { return c.ws.Subprotocol() }

func truncateReason(s string) string {
	if len(s) <= maxCloseReason {
		return s
	}
	s = s[:maxCloseReason]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
