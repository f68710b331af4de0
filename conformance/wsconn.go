package conformance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/xconn/xconn/protocol"
)

// frame is one WebSocket message received from the Connector. env is nil
// when the data is not a JSON envelope.
type frame struct {
	kind websocket.MessageType
	data []byte
	env  *protocol.Envelope
}

// closeWait bounds the wait for the peer's answer to our close frame.
const closeWait = time.Second

// errNoAnswer is returned by await when the Connector stayed silent.
var errNoAnswer = errors.New("no answer within the timeout")

// closedError is returned by await when the Connector closed the connection.
type closedError struct{ err error }

func (e *closedError) Error() string { return "connection closed: " + e.err.Error() }
func (e *closedError) Unwrap() error { return e.err }

// wsConn is one data-plane connection of the suite. One reader goroutine,
// owned by wsConn and stopped and awaited by close, reads with the
// connection's lifetime context and queues frames in a bounded channel;
// waits are timed on that channel, never on Read. Only the goroutine running
// the checks calls its methods.
type wsConn struct {
	s       *session
	c       *websocket.Conn
	in      chan frame
	done    chan struct{}
	readErr error // set by the reader before it closes in
	cancel  context.CancelFunc
	seq     *atomic.Int64
	closed  sync.Once
	// hello state
	helloAck  *protocol.HelloAckPayload
	supported []protocol.Profile
}

// dial opens /ws with the given subprotocols and API key. It returns the HTTP
// response of a refused handshake.
func (s *session) dial(ctx context.Context, subprotocols []string, key string) (*wsConn, *http.Response, error) {
	u := s.endpoint(protocol.PathWS)
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	default:
		u.Scheme = "ws"
	}
	h := http.Header{}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	dctx, cancel := context.WithTimeout(ctx, s.opts.timeout())
	defer cancel()
	c, resp, err := websocket.Dial(dctx, u.String(), &websocket.DialOptions{
		HTTPClient: s.http, HTTPHeader: h, Subprotocols: subprotocols,
	})
	if err != nil {
		return nil, resp, fmt.Errorf("dial %s: %w", u.Redacted(), err)
	}
	c.SetReadLimit(maxFrame)
	life, stop := context.WithCancel(context.WithoutCancel(ctx))
	w := &wsConn{s: s, c: c, in: make(chan frame, frameQueue), done: make(chan struct{}), cancel: stop, seq: &s.seq}
	go w.readLoop(life)
	return w, resp, nil
}

func (w *wsConn) readLoop(ctx context.Context) {
	defer close(w.done)
	defer close(w.in)
	for {
		kind, data, err := w.c.Read(ctx)
		if err != nil {
			w.readErr = err
			return
		}
		f := frame{kind: kind, data: data}
		if env, err := protocol.DecodeEnvelope(data); err == nil {
			f.env = env
		}
		select {
		case w.in <- f:
		case <-ctx.Done():
			return
		}
	}
}

// close closes the connection and waits for the reader. Frames still queued
// are observed first.
func (w *wsConn) close() {
	w.closed.Do(func() {
		// A close frame (1000), as a well-behaved peer ends a connection;
		// a peer that does not answer it within a short bound is dropped.
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = w.c.Close(websocket.StatusNormalClosure, "conformance run done")
		}()
		t := time.NewTimer(closeWait)
		select {
		case <-done:
		case <-t.C:
			w.c.CloseNow()
			<-done
		}
		t.Stop()
		w.cancel()
		for f := range w.in {
			w.s.observe(w, f)
		}
		<-w.done
	})
}

// newEnvelope returns an envelope of type typ with a fresh packet_id and
// request_id.
func (w *wsConn) newEnvelope(typ, channel string, payload any) *protocol.Envelope {
	n := strconv.FormatInt(w.seq.Add(1), 10)
	e := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: "pkt_conf_" + n, RequestID: "req_conf_" + n,
		ConnectorChannelID: channel, Type: typ, Time: time.Now().UnixMilli()}
	if strings.HasPrefix(typ, "chat.") {
		e.RequestID = "" // IM v2 correlates chat packets by reply_to only
	}
	if payload != nil {
		_ = e.SetPayload(payload) // payloads of this package always encode
	}
	return e
}

// send writes env as one text frame.
func (w *wsConn) send(ctx context.Context, env *protocol.Envelope) error {
	data, err := env.Encode()
	if err != nil {
		return fmt.Errorf("encode %s: %w", env.Type, err)
	}
	return w.sendRaw(ctx, websocket.MessageText, data)
}

func (w *wsConn) sendRaw(ctx context.Context, kind websocket.MessageType, data []byte) error {
	wctx, cancel := context.WithTimeout(ctx, w.s.opts.timeout())
	defer cancel()
	if err := w.c.Write(wctx, kind, data); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

// await returns the first frame for which match reports true, observing
// every frame it reads. It returns errNoAnswer after d, or a *closedError.
func (w *wsConn) await(ctx context.Context, d time.Duration, match func(frame) bool) (frame, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case f, ok := <-w.in:
			if !ok {
				<-w.done
				return frame{}, &closedError{err: w.readErr}
			}
			w.s.observe(w, f)
			if match(f) {
				return f, nil
			}
		case <-t.C:
			return frame{}, errNoAnswer
		case <-ctx.Done():
			return frame{}, ctx.Err()
		}
	}
}

// answers reports whether f answers the request env: it echoes request_id or
// points reply_to at env's packet_id.
func answers(f frame, env *protocol.Envelope) bool {
	return f.env != nil && ((env.RequestID != "" && f.env.RequestID == env.RequestID) || f.env.ReplyTo == env.PacketID)
}

// request sends env and waits for the packet that answers it.
func (w *wsConn) request(ctx context.Context, env *protocol.Envelope) (frame, error) {
	if err := w.send(ctx, env); err != nil {
		return frame{}, err
	}
	f, err := w.await(ctx, w.s.opts.timeout(), func(f frame) bool { return answers(f, env) })
	if err == nil {
		w.s.observeAnswer(env, f)
	}
	return f, err
}

// hello sends connector.hello and waits for its answer. It records the ack
// on w when it arrives.
func (w *wsConn) hello(ctx context.Context, p protocol.HelloPayload) (frame, error) {
	env := w.newEnvelope(protocol.TypeHello, "", p)
	f, err := w.request(ctx, env)
	if err != nil {
		return f, err
	}
	if f.env.Type == protocol.TypeHelloAck && f.env.Error == nil {
		var ack protocol.HelloAckPayload
		if err := f.env.DecodePayload(&ack); err == nil {
			w.helloAck = &ack
			w.supported = p.SupportedProfiles
		}
	}
	return f, nil
}
