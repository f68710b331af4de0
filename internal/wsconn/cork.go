package wsconn

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// maxCork bounds the bytes a corked connection holds back before it writes
// them anyway.
const maxCork = 64 << 10

// corkConn is the net.Conn under a coder/websocket connection. It applies
// the write timeout as a deadline on every write that reaches the network,
// and while corked it holds back what coder/websocket flushes (one flush per
// message) so that several messages leave in one write(2). The writer loop
// corks only while it knows another frame is queued behind the one it writes,
// so an idle connection never delays a frame. Safe for concurrent use:
// coder/websocket serialises Write, and Cork/Uncork may race with it.
type corkConn struct {
	net.Conn
	timeout time.Duration

	mu     sync.Mutex
	corked bool
	buf    []byte
	bufs   net.Buffers // scratch for writev of buf and the current write
}

func newCorkConn(c net.Conn, timeout time.Duration) *corkConn {
	return &corkConn{Conn: c, timeout: timeout}
}

// setCorked sets whether writes are held back. Uncorking does not write:
// the next Write (the frame the writer loop writes next) sends what is held
// together with its own bytes, under its own deadline; flush sends it
// without a frame.
func (c *corkConn) setCorked(on bool) {
	c.mu.Lock()
	c.corked = on
	c.mu.Unlock()
}

// Write sends p, or holds it back while corked and the held bytes stay
// within maxCork.
func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked && len(c.buf)+len(p) <= maxCork {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, fmt.Errorf("wsconn: set write deadline: %w", err)
	}
	if len(c.buf) == 0 {
		return c.Conn.Write(p)
	}
	c.bufs = append(c.bufs[:0], c.buf, p)
	n, err := c.bufs.WriteTo(c.Conn)
	c.bufs = c.bufs[:0]
	held := len(c.buf)
	c.buf = c.buf[:0]
	if cap(c.buf) > maxCork {
		c.buf = nil
	}
	if n < int64(held) {
		return 0, err
	}
	return int(n) - held, err
}

// flush uncorks and writes what is held back, if anything.
func (c *corkConn) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	if len(c.buf) == 0 {
		return nil
	}
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return fmt.Errorf("wsconn: set write deadline: %w", err)
	}
	_, err := c.Conn.Write(c.buf)
	c.buf = c.buf[:0]
	return err
}

// hijackWriter is the http.ResponseWriter handed to websocket.Accept: its
// Hijack puts a corkConn under the connection. Not safe for concurrent use
// (like any ResponseWriter).
type hijackWriter struct {
	http.ResponseWriter
	timeout time.Duration
	conn    *corkConn // set by Hijack
}

// Hijack hijacks the underlying connection (following Unwrap like
// http.ResponseController) and wraps it.
func (h *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if brw.Writer.Buffered() > 0 {
		if err := brw.Writer.Flush(); err != nil {
			_ = nc.Close()
			return nil, nil, fmt.Errorf("flush before hijack: %w", err)
		}
	}
	h.conn = newCorkConn(nc, h.timeout)
	brw.Writer.Reset(h.conn)
	return h.conn, brw, nil
}

// Unwrap returns the wrapped ResponseWriter (for http.ResponseController).
func (h *hijackWriter) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// hijackable reports whether w (or a ResponseWriter it unwraps to, as
// http.ResponseController follows them) can be hijacked.
func hijackable(w http.ResponseWriter) bool {
	for {
		switch t := w.(type) {
		case http.Hijacker:
			return true
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return false
		}
	}
}

// corkDialer dials the TCP connection of a client handshake and wraps it;
// it remembers the connection when exactly one was dialed.
type corkDialer struct {
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	timeout time.Duration

	mu    sync.Mutex
	conns []*corkConn
}

func (d *corkDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := d.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cc := newCorkConn(nc, d.timeout)
	d.mu.Lock()
	d.conns = append(d.conns, cc)
	d.mu.Unlock()
	return cc, nil
}

// conn returns the one connection dialed, or nil when there were several
// (the handshake's is then unknown).
func (d *corkDialer) conn() *corkConn {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.conns) != 1 {
		return nil
	}
	return d.conns[0]
}

// errNoTransport reports that http.DefaultTransport was replaced by
// something that is not an *http.Transport.
var errNoTransport = errors.New("http.DefaultTransport is not an *http.Transport")

// corkClient returns an HTTP client for one handshake whose connections are
// corkConns, and the dialer that made them.
func corkClient(timeout time.Duration) (*http.Client, *corkDialer, error) {
	base, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return nil, nil, errNoTransport
	}
	tr := base.Clone()
	dial := tr.DialContext
	if dial == nil {
		var nd net.Dialer
		dial = nd.DialContext
	}
	d := &corkDialer{dial: dial, timeout: timeout}
	tr.DialContext = d.DialContext
	return &http.Client{Transport: tr}, d, nil
}
