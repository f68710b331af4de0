package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of the stdio transport.
const (
	// DefaultMaxQueuedMessages and DefaultMaxQueuedBytes bound what the
	// stdio transport holds for a client that does not read: beyond them
	// a write fails and the session ends, instead of the server's memory
	// growing.
	DefaultMaxQueuedMessages = 1024
	DefaultMaxQueuedBytes    = 32 << 20
	// stdioDrainTimeout bounds how long Close waits for queued messages
	// to reach the client.
	stdioDrainTimeout = 2 * time.Second
)

// ErrClientNotReading is the error of a write to a stdio client whose
// queue is full: it has not read what the server sent.
var ErrClientNotReading = errors.New("mcp: the client does not read: its outgoing queue is full")

// StdioTransport returns a transport for one MCP session over r and w
// (os.Stdin and os.Stdout for a client that started this process),
// one JSON-RPC message per line. Unlike a bare stream, it survives a
// client's mistakes: a line that is not JSON is answered with a JSON-RPC
// parse error (-32700), JSON that is not a JSON-RPC message with an
// invalid-request error (-32600), a line of more than
// Options.MaxMessageBytes is skipped and answered with -32600; the
// session goes on. What the server writes goes through a queue bounded
// by Options.MaxQueuedMessages and MaxQueuedBytes: a client that never
// reads ends its session, it never makes the server hold more.
//
// When the session ends, r and w are closed if they are io.Closers (so
// that a goroutine blocked on them returns); otherwise a goroutine
// blocked in r.Read returns when r does.
func (s *Server) StdioTransport(r io.Reader, w io.Writer) sdk.Transport {
	return &stdioTransport{r: r, w: w, maxLine: s.opts.MaxMessageBytes, log: s.log,
		maxQueued: s.opts.MaxQueuedMessages, maxBytes: s.opts.MaxQueuedBytes}
}

type stdioTransport struct {
	r                   io.Reader
	w                   io.Writer
	maxLine             int
	maxQueued, maxBytes int
	log                 *slog.Logger
}

// Connect starts the reader and writer goroutines of the session; the
// connection's Close stops them.
func (t *stdioTransport) Connect(context.Context) (sdk.Connection, error) {
	c := &stdioConn{t: t, in: make(chan frame), closed: make(chan struct{}), wake: make(chan struct{}, 1),
		readerDone: make(chan struct{}), writerDone: make(chan struct{})}
	go c.readLoop()
	go c.writeLoop()
	return c, nil
}

// frame is one line read from the client, or the error that ended
// reading. tooLong marks a line beyond the limit (its content dropped).
type frame struct {
	line    []byte
	tooLong bool
	err     error
}

type stdioConn struct {
	t          *stdioTransport
	in         chan frame
	closed     chan struct{}
	closeOnce  sync.Once
	readerDone chan struct{}
	writerDone chan struct{}

	mu       sync.Mutex
	queue    [][]byte
	queued   int // bytes in queue
	writeErr error
	wake     chan struct{}
}

func (c *stdioConn) SessionID() string { return "" }

// readLoop reads lines of at most maxLine bytes and hands them to Read.
func (c *stdioConn) readLoop() {
	defer close(c.readerDone)
	br := bufio.NewReaderSize(c.t.r, 64<<10)
	for {
		var line []byte
		tooLong := false
		var err error
		for {
			var part []byte
			part, err = br.ReadSlice('\n')
			if !tooLong {
				if len(line)+len(part) > c.t.maxLine+1 { // +1: the '\n'
					tooLong, line = true, nil
				} else {
					line = append(line, part...)
				}
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
		if len(line) > 0 || tooLong {
			select {
			case c.in <- frame{line: line, tooLong: tooLong}:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.EOF
			}
			select {
			case c.in <- frame{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

// Read returns the next well-formed JSON-RPC message. Malformed lines are
// answered with a JSON-RPC error and skipped.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var f frame
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case f = <-c.in:
		}
		if f.err != nil {
			return nil, f.err
		}
		if f.tooLong {
			c.t.log.Warn("mcp: a message larger than the limit was refused", "limit_bytes", c.t.maxLine)
			c.reject(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message larger than %d bytes refused", c.t.maxLine))
			continue
		}
		line := bytes.TrimSpace(f.line)
		if len(line) == 0 {
			continue
		}
		msg, err := jsonrpc.DecodeMessage(line)
		if err == nil {
			return msg, nil
		}
		if !json.Valid(line) {
			c.t.log.Warn("mcp: a line that is not JSON was refused", "bytes", len(line))
			c.reject(nil, jsonrpc.CodeParseError, "parse error: a line that is not JSON")
			continue
		}
		var head struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(line, &head) // an array has no id: null
		c.t.log.Warn("mcp: JSON that is not a JSON-RPC message was refused", "bytes", len(line))
		c.reject(head.ID, jsonrpc.CodeInvalidRequest, "invalid request: not a JSON-RPC 2.0 request, notification or response (batches are not supported)")
	}
}

// rpcError is a JSON-RPC error response whose id may be null, which the
// SDK's encoder leaves out.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   jsonrpc.Error   `json:"error"`
}

func (c *stdioConn) reject(id json.RawMessage, code int64, msg string) {
	if !validID(id) {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(rpcError{JSONRPC: "2.0", ID: id, Error: jsonrpc.Error{Code: code, Message: msg}})
	_ = c.enqueue(append(b, '\n'))
}

// validID reports whether id is a JSON-RPC id: a string or a number.
func validID(id json.RawMessage) bool {
	var v any
	if len(id) == 0 || json.Unmarshal(id, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}

// Write queues msg for the client. It fails when the queue is full (the
// client does not read) or the stream broke; either ends the session.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("mcp: encode: %w", err)
	}
	return c.enqueue(append(b, '\n'))
}

func (c *stdioConn) enqueue(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.writeErr != nil:
		return c.writeErr
	case len(c.queue) >= c.t.maxQueued || c.queued+len(b) > c.t.maxBytes:
		c.writeErr = ErrClientNotReading
		c.t.log.Warn("mcp: the client does not read what the server sends: the session ends",
			"queued_messages", len(c.queue), "queued_bytes", c.queued)
		return c.writeErr
	}
	c.queue = append(c.queue, b)
	c.queued += len(b)
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

// writeLoop writes the queue to w until the connection closes and the
// queue is drained.
func (c *stdioConn) writeLoop() {
	defer close(c.writerDone)
	for {
		c.mu.Lock()
		q := c.queue
		c.queue = nil
		c.mu.Unlock()
		for _, b := range q {
			_, err := c.t.w.Write(b)
			c.mu.Lock()
			c.queued -= len(b)
			if err != nil && c.writeErr == nil {
				c.writeErr = fmt.Errorf("mcp: write to the client: %w", err)
			}
			c.mu.Unlock()
		}
		if len(q) > 0 {
			continue
		}
		select {
		case <-c.wake:
		case <-c.closed:
			c.mu.Lock()
			empty := len(c.queue) == 0
			c.mu.Unlock()
			if empty {
				return
			}
		}
	}
}

// Close ends the session: it lets the queue drain (bounded by
// stdioDrainTimeout), closes w and r when they are io.Closers, and waits
// for the goroutines it can end. It is safe to call more than once.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		select {
		case <-c.writerDone:
		case <-time.After(stdioDrainTimeout):
		}
		wc, wok := c.t.w.(io.Closer)
		if wok {
			_ = wc.Close()
		}
		if rc, ok := c.t.r.(io.Closer); ok {
			_ = rc.Close()
			<-c.readerDone
		}
		if wok {
			<-c.writerDone
		}
	})
	return nil
}
