package wsconn

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/protocol"
)

func packet(id string) *protocol.Envelope {
	return &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: id, Type: protocol.TypePing}
}

type received struct {
	env *protocol.Envelope
	raw []byte
	err error
}

func collector(ch chan<- received) Handler {
	return func(env *protocol.Envelope, raw []byte, err error) {
		ch <- received{env, raw, err}
	}
}

func dial(t *testing.T, url string, opts Options) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, url, nil, opts)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	return c
}

func recv(t *testing.T, ch <-chan received) received {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("no frame received within 5s")
		return received{}
	}
}

func TestRoundTrip(t *testing.T) {
	srv := startServer(t, Options{}, echo)
	c := dial(t, srv.url, Options{})
	if got := c.Subprotocol(); got != protocol.Subprotocol {
		t.Fatalf("Subprotocol() = %q, want %q", got, protocol.Subprotocol)
	}
	in := make(chan received, 8)
	runConn(t, c, collector(in))
	for i := range 3 {
		id := fmt.Sprintf("p%d", i)
		if err := c.Send(context.Background(), packet(id)); err != nil {
			t.Fatalf("Send: %v", err)
		}
		r := recv(t, in)
		if r.err != nil || r.env == nil || r.env.PacketID != id || r.env.Type != protocol.TypePing {
			t.Fatalf("echo %d: got env=%+v err=%v", i, r.env, r.err)
		}
		if !strings.Contains(string(r.raw), `"packet_id":"`+id+`"`) {
			t.Fatalf("raw frame %s lacks packet_id %s", r.raw, id)
		}
	}
}

func TestAcceptRefusesClientWithoutSubprotocol(t *testing.T) {
	srv := startServer(t, Options{}, echo)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, srv.url, &websocket.DialOptions{Subprotocols: []string{"other.v1"}})
	if err == nil {
		ws.CloseNow()
		t.Fatal("dial without the subprotocol succeeded")
	}
	if resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("response = %v, want HTTP 400", resp)
	}
}

func TestDialRefusesServerWithoutSubprotocol(t *testing.T) {
	var wg sync.WaitGroup
	defer wg.Wait()
	srv := startRawServer(t, &wg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, srv, nil, Options{})
	if err == nil {
		c.Close(websocket.StatusNormalClosure, "")
		t.Fatal("Dial succeeded against a server that selects no subprotocol")
	}
	if !errors.Is(err, ErrSubprotocol) {
		t.Fatalf("Dial error = %v, want ErrSubprotocol", err)
	}
}

func TestDialErrorCarriesStatus(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	url := "ws" + strings.TrimPrefix(ts.URL, "http")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := Dial(ctx, url, http.Header{"Authorization": {"Bearer k"}}, Options{})
	var de *DialError
	if !errors.As(err, &de) || de.StatusCode != http.StatusUnauthorized {
		t.Fatalf("Dial to a 401 endpoint: err = %v, want *DialError with status 401", err)
	}
	ts.Close()
	_, err = Dial(ctx, url, nil, Options{})
	if !errors.As(err, &de) || de.StatusCode != 0 {
		t.Fatalf("Dial to a closed server: err = %v, want *DialError with status 0", err)
	}
}

func TestBinaryFrameAndBadJSONAreReported(t *testing.T) {
	in := make(chan received, 8)
	srv := startServer(t, Options{}, func(ctx context.Context, c *Conn) Handler { return collector(in) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, srv.url, &websocket.DialOptions{Subprotocols: []string{protocol.Subprotocol}})
	if err != nil {
		t.Fatalf("raw dial: %v", err)
	}
	defer ws.CloseNow()
	frames := []struct {
		typ  websocket.MessageType
		data string
	}{
		{websocket.MessageBinary, `{"schema":"x"}`},
		{websocket.MessageText, `{"schema":`},
		{websocket.MessageText, `[1,2]`},
		{websocket.MessageText, `{"schema":"xagent.connector.packet/v1","packet_id":"ok","type":"ping"}`},
	}
	for _, f := range frames {
		if err := ws.Write(ctx, f.typ, []byte(f.data)); err != nil {
			t.Fatalf("raw write: %v", err)
		}
	}
	for i, f := range frames[:3] {
		r := recv(t, in)
		pe := protocol.AsError(r.err)
		if pe == nil || pe.Code != protocol.CodeInvalidPacket || r.env != nil {
			t.Fatalf("frame %d: env=%v err=%v, want invalid_packet", i, r.env, r.err)
		}
		if string(r.raw) != f.data {
			t.Fatalf("frame %d: raw = %q, want %q", i, r.raw, f.data)
		}
	}
	r := recv(t, in)
	if r.err != nil || r.env.PacketID != "ok" {
		t.Fatalf("valid frame after bad ones: env=%v err=%v", r.env, r.err)
	}
}

func TestFrameOverReadLimitCloses1009(t *testing.T) {
	srv := startServer(t, Options{ReadLimit: 1024}, echo)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, srv.url, &websocket.DialOptions{Subprotocols: []string{protocol.Subprotocol}})
	if err != nil {
		t.Fatalf("raw dial: %v", err)
	}
	defer ws.CloseNow()
	big := `{"schema":"` + strings.Repeat("a", 2048) + `"}`
	if err := ws.Write(ctx, websocket.MessageText, []byte(big)); err != nil {
		t.Fatalf("raw write: %v", err)
	}
	_, _, err = ws.Read(ctx)
	if got := websocket.CloseStatus(err); got != websocket.StatusMessageTooBig {
		t.Fatalf("close status = %v (err %v), want 1009", got, err)
	}
	select {
	case err := <-srv.results:
		if err == nil {
			t.Fatal("server Run returned nil after an oversized frame")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("server Run did not return")
	}
}

func TestConcurrentSend(t *testing.T) {
	srv := startServer(t, Options{}, echo)
	c := dial(t, srv.url, Options{SendQueue: 8})
	const senders, each = 32, 50
	var mu sync.Mutex
	seen := map[string]bool{}
	all := make(chan struct{})
	runConn(t, c, func(env *protocol.Envelope, raw []byte, err error) {
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		seen[env.PacketID] = true
		if len(seen) == senders*each {
			close(all)
		}
	})
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range each {
				if err := c.Send(context.Background(), packet(fmt.Sprintf("s%d-%d", s, i))); err != nil {
					t.Errorf("Send: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("received %d distinct echoes, want %d", len(seen), senders*each)
	}
}

func TestCloseDrainsQueuedFrames(t *testing.T) {
	for _, running := range []bool{true, false} {
		t.Run(fmt.Sprintf("running=%v", running), func(t *testing.T) {
			in := make(chan received, 128)
			srv := startServer(t, Options{}, func(ctx context.Context, c *Conn) Handler { return collector(in) })
			c := dial(t, srv.url, Options{SendQueue: 128})
			const n = 100
			for i := range n {
				if err := c.Send(context.Background(), packet(fmt.Sprint(i))); err != nil {
					t.Fatalf("Send %d: %v", i, err)
				}
			}
			var res <-chan error
			if running {
				res = runConn(t, c, nil)
			}
			if err := c.Close(websocket.StatusGoingAway, "bye"); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if err := c.Close(websocket.StatusNormalClosure, "again"); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			for i := range n {
				r := recv(t, in)
				if r.err != nil || r.env.PacketID != fmt.Sprint(i) {
					t.Fatalf("frame %d: env=%v err=%v", i, r.env, r.err)
				}
			}
			select {
			case err := <-srv.results:
				if got := websocket.CloseStatus(err); got != websocket.StatusGoingAway {
					t.Fatalf("server saw close status %v (err %v), want 1001", got, err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("server Run did not return")
			}
			<-c.Done()
			if running {
				// Close may win the race with the Run goroutine's start.
				if err := <-res; err != nil && !errors.Is(err, ErrClosed) {
					t.Fatalf("Run after local Close = %v, want nil", err)
				}
			}
			if err := c.Send(context.Background(), packet("late")); !errors.Is(err, ErrClosed) {
				t.Fatalf("Send after Close = %v, want ErrClosed", err)
			}
		})
	}
}

func TestSendBlocksWhileQueueFull(t *testing.T) {
	srv := startServer(t, Options{}, echo)
	c := dial(t, srv.url, Options{SendQueue: 1})
	defer c.Close(websocket.StatusNormalClosure, "")
	if err := c.Send(context.Background(), packet("a")); err != nil {
		t.Fatalf("first Send: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Send(ctx, packet("b")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Send on a full queue = %v, want DeadlineExceeded", err)
	}
}

func TestRunEndsWithContext(t *testing.T) {
	srv := startServer(t, Options{}, echo)
	c := dial(t, srv.url, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { res <- c.Run(ctx, nil) }()
	cancel()
	select {
	case err := <-res:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	<-c.Done()
	if err := c.Run(context.Background(), nil); err == nil {
		t.Fatal("second Run returned nil")
	}
	if err := c.Send(context.Background(), packet("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Run ended = %v, want ErrClosed", err)
	}
}

func TestPeerCloseEndsRun(t *testing.T) {
	srv := startServer(t, Options{}, func(ctx context.Context, c *Conn) Handler {
		return func(env *protocol.Envelope, raw []byte, err error) {
			c.Close(websocket.StatusPolicyViolation, "no")
		}
	})
	c := dial(t, srv.url, Options{})
	res := runConn(t, c, nil)
	if err := c.Send(context.Background(), packet("x")); err != nil {
		t.Fatalf("Send: %v", err)
	}
	select {
	case err := <-res:
		if got := websocket.CloseStatus(err); got != websocket.StatusPolicyViolation {
			t.Fatalf("Run = %v, want close status 1008", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the peer closed")
	}
}

func TestTruncateReason(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes
	got := truncateReason(long)
	if len(got) > maxCloseReason || !strings.HasPrefix(long, got) || len(got) < maxCloseReason-1 {
		t.Fatalf("truncateReason gave %d bytes", len(got))
	}
	if truncateReason("short") != "short" {
		t.Fatal("short reason changed")
	}
}

func TestSendConcurrentWithClose(t *testing.T) {
	srv := startServer(t, Options{}, echo)
	c := dial(t, srv.url, Options{SendQueue: 4})
	runConn(t, c, nil)
	var wg sync.WaitGroup
	for s := range 16 {
		wg.Go(func() {
			for i := range 100 {
				err := c.Send(context.Background(), packet(fmt.Sprintf("%d-%d", s, i)))
				if err != nil && !errors.Is(err, ErrClosed) {
					t.Errorf("Send = %v, want nil or ErrClosed", err)
					return
				}
			}
		})
	}
	go c.Close(websocket.StatusNormalClosure, "")
	wg.Wait()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("connection not finished after Close")
	}
}
