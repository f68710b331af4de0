package wsconn

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/protocol"
)

// DialError is returned by [Dial] when the WebSocket handshake fails. It
// carries the HTTP status of the server's answer (0 when there was none, for
// example on a network error) so that callers can tell an authentication
// failure (401) from an unreachable peer without matching error text.
type DialError struct {
	StatusCode int
	Err        error
}

func (e *DialError) Error() string {
	if e.StatusCode != 0 {
		return fmt.Sprintf("wsconn: dial: HTTP %d: %v", e.StatusCode, e.Err)
	}
	return fmt.Sprintf("wsconn: dial: %v", e.Err)
}

// Unwrap returns the underlying error.
func (e *DialError) Unwrap() error { return e.Err }

// Accept upgrades an HTTP request to a data-plane [Conn]. It refuses, with
// HTTP 400 and an error wrapping [ErrSubprotocol], a client that does not
// offer [protocol.Subprotocol]. On any failure the HTTP response has already
// been written. The returned Conn is idle until [Conn.Run] is called.
func Accept(w http.ResponseWriter, r *http.Request, opts Options) (*Conn, error) {
	if !offersSubprotocol(r.Header) {
		http.Error(w, "WebSocket subprotocol "+protocol.Subprotocol+" required", http.StatusBadRequest)
		return nil, fmt.Errorf("wsconn: accept: %w", ErrSubprotocol)
	}
	opts = opts.withDefaults()
	hw := &hijackWriter{ResponseWriter: w, timeout: opts.WriteTimeout}
	var aw http.ResponseWriter = hw
	if !hijackable(w) {
		aw = w // coder/websocket answers 501 itself, as without the wrapper
	}
	ws, err := websocket.Accept(aw, r, &websocket.AcceptOptions{
		Subprotocols:   []string{protocol.Subprotocol},
		OriginPatterns: opts.OriginPatterns,
	})
	if err != nil {
		return nil, fmt.Errorf("wsconn: accept: %w", err)
	}
	if ws.Subprotocol() != protocol.Subprotocol {
		_ = ws.Close(websocket.StatusProtocolError, "subprotocol required")
		return nil, fmt.Errorf("wsconn: accept: %w", ErrSubprotocol)
	}
	return newConn(ws, hw.conn, opts), nil
}

// Dial opens a data-plane [Conn] to url (ws:// or wss://), sending header
// with the handshake (for example the Authorization header). ctx bounds only
// the handshake, not the life of the connection. Dial fails with an error
// wrapping [ErrSubprotocol] when the server does not select
// [protocol.Subprotocol], and with a [*DialError] when the handshake fails.
func Dial(ctx context.Context, url string, header http.Header, opts Options) (*Conn, error) {
	opts = opts.withDefaults()
	dopts := &websocket.DialOptions{
		HTTPHeader:   header,
		Subprotocols: []string{protocol.Subprotocol},
	}
	client, dialer, cerr := corkClient(opts.WriteTimeout)
	if cerr == nil {
		dopts.HTTPClient = client
		defer client.CloseIdleConnections()
	}
	ws, resp, err := websocket.Dial(ctx, url, dopts)
	if err != nil {
		de := &DialError{Err: err}
		if resp != nil {
			de.StatusCode = resp.StatusCode
		}
		return nil, de
	}
	if ws.Subprotocol() != protocol.Subprotocol {
		_ = ws.Close(websocket.StatusProtocolError, "subprotocol required")
		return nil, fmt.Errorf("wsconn: dial: %w", ErrSubprotocol)
	}
	var cc *corkConn
	if dialer != nil {
		cc = dialer.conn()
	}
	return newConn(ws, cc, opts), nil
}

// offersSubprotocol reports whether the handshake request lists
// protocol.Subprotocol in Sec-WebSocket-Protocol.
func offersSubprotocol(h http.Header) bool {
	for _, v := range h.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(p) == protocol.Subprotocol {
				return true
			}
		}
	}
	return false
}
