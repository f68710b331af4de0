package wsconn

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/protocol"
)

// silentPeer serves a WebSocket endpoint that completes the handshake and
// then never reads; it returns its ws:// URL. Cleanup releases it.
func silentPeer(t *testing.T) string {
	t.Helper()
	release := make(chan struct{})
	var wg sync.WaitGroup
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wg.Add(1)
		defer wg.Done()
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{protocol.Subprotocol}})
		if err != nil {
			return
		}
		defer ws.CloseNow()
		select { // never reads
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() {
		close(release)
		ts.Close()
		wg.Wait()
	})
	return "ws" + strings.TrimPrefix(ts.URL, "http")
}

// TestSendQueueBoundedByBytes sends 64 KiB frames to a peer that never
// reads, with a write timeout far longer than the test: the bytes held for
// the peer never pass SendQueueBytes, and the send that would pass it fails
// with ErrSendQueueFull and closes the connection. (Before the byte bound
// the count bound let 256 frames of any size wait.)
func TestSendQueueBoundedByBytes(t *testing.T) {
	const limit = 1 << 20
	c := dial(t, silentPeer(t), Options{SendQueue: 4096, SendQueueBytes: limit, WriteTimeout: 5 * time.Minute})
	res := runConn(t, c, nil)
	frame := append(append([]byte(`{"type":"ping","x":"`), bytes.Repeat([]byte("x"), 64<<10)...), `"}`...)
	var err error
	for range 100000 {
		if err = c.SendRaw(context.Background(), frame); err != nil {
			break
		}
		if q := c.QueuedBytes(); q > limit {
			t.Fatalf("QueuedBytes = %d, over the bound %d", q, limit)
		}
	}
	if !errors.Is(err, ErrSendQueueFull) {
		t.Fatalf("SendRaw to a peer that never reads = %v, want ErrSendQueueFull", err)
	}
	if err := c.SendRaw(context.Background(), frame); !errors.Is(err, ErrClosed) {
		t.Errorf("SendRaw after the overflow = %v, want ErrClosed", err)
	}
	if err := c.TrySendRaw(frame); !errors.Is(err, ErrClosed) {
		t.Errorf("TrySendRaw after the overflow = %v, want ErrClosed", err)
	}
	select {
	case <-res:
	case <-time.After(time.Minute):
		t.Fatal("Run did not end after the send queue overflowed")
	}
}

// TestOneLargeFrameAlwaysFits: a frame larger than SendQueueBytes is sent
// when nothing else is queued.
func TestOneLargeFrameAlwaysFits(t *testing.T) {
	got := make(chan int, 1)
	srv := startServer(t, Options{ReadLimit: 1 << 20}, func(ctx context.Context, c *Conn) Handler {
		return func(env *protocol.Envelope, raw []byte, err error) {
			select {
			case got <- len(raw):
			default:
			}
		}
	})
	c := dial(t, srv.url, Options{SendQueueBytes: 1024})
	runConn(t, c, nil)
	frame := []byte(`{"schema":"xagent.connector.packet/v1","packet_id":"p1","type":"ping","x":"` + strings.Repeat("x", 4096) + `"}`)
	if err := c.SendRaw(context.Background(), frame); err != nil {
		t.Fatalf("SendRaw of one frame over the byte bound on an empty queue: %v", err)
	}
	select {
	case n := <-got:
		if n != len(frame) {
			t.Fatalf("peer got %d bytes, want %d", n, len(frame))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the large frame never arrived")
	}
}

// TestReaderBlockedSendEndsWhenWriterFails: a Handler that sends with
// SendRaw on the reader goroutine while the writer is stuck on a peer that
// does not read is released when the writer gives up (before, it waited
// for a read loop end that could not come, and Run never returned).
func TestReaderBlockedSendEndsWhenWriterFails(t *testing.T) {
	var wg sync.WaitGroup
	release := make(chan struct{})
	// The peer floods the connection and never reads.
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wg.Add(1)
		defer wg.Done()
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{protocol.Subprotocol}})
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() {
			select {
			case <-release:
			case <-ctx.Done():
			}
			ws.CloseNow()
		}()
		frame := []byte(`{"schema":"xagent.connector.packet/v1","packet_id":"p","type":"ping","x":"` + strings.Repeat("y", 32<<10) + `"}`)
		for ws.Write(ctx, websocket.MessageText, frame) == nil {
		}
	}))
	t.Cleanup(func() {
		close(release)
		ts.Close()
		wg.Wait()
	})
	c := dial(t, "ws"+strings.TrimPrefix(ts.URL, "http"), Options{SendQueue: 1, SendQueueBytes: 1 << 30, WriteTimeout: 300 * time.Millisecond})
	res := runConn(t, c, func(env *protocol.Envelope, raw []byte, err error) {
		_ = c.SendRaw(context.Background(), raw) // echo on the reader: blocks once the queue is full
	})
	select {
	case <-res:
	case <-time.After(time.Minute):
		t.Fatal("Run did not return: the reader stayed blocked in SendRaw after the writer failed")
	}
}

// TestSendQueueFullCloseCode: a peer that stops reading until the queue
// overflowed and then reads gets the close code StatusSendQueueFull.
func TestSendQueueFullCloseCode(t *testing.T) {
	startReading := make(chan struct{})
	status := make(chan websocket.StatusCode, 1)
	var wg sync.WaitGroup
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wg.Add(1)
		defer wg.Done()
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{protocol.Subprotocol}})
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ws.SetReadLimit(1 << 20)
		<-startReading
		for {
			if _, _, err := ws.Read(context.Background()); err != nil {
				status <- websocket.CloseStatus(err)
				return
			}
		}
	}))
	t.Cleanup(func() {
		ts.Close()
		wg.Wait()
	})
	c := dial(t, "ws"+strings.TrimPrefix(ts.URL, "http"), Options{SendQueueBytes: 256 << 10, WriteTimeout: 5 * time.Minute})
	runConn(t, c, nil)
	frame := append(append([]byte(`{"type":"ping","x":"`), bytes.Repeat([]byte("x"), 32<<10)...), `"}`...)
	for range 100000 {
		if err := c.SendRaw(context.Background(), frame); err != nil {
			break
		}
	}
	close(startReading)
	select {
	case got := <-status:
		if got != StatusSendQueueFull {
			t.Fatalf("the peer saw close status %d, want %d", got, StatusSendQueueFull)
		}
	case <-time.After(time.Minute):
		t.Fatal("the peer never saw the close")
	}
}
