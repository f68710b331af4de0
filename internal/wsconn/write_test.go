package wsconn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/protocol"
)

// TestSendKeepsOrderPerSender sends numbered packets from several
// goroutines at once, through the direct path and the queue alike, and
// checks that each sender's packets arrive in order and none is lost.
func TestSendKeepsOrderPerSender(t *testing.T) {
	tests := []struct {
		name             string
		queue            int
		senders, perEach int
	}{
		{"one sender", 256, 1, 300},
		{"queue of one", 1, 8, 100},
		{"small queue", 8, 16, 100},
		{"default queue", 0, 32, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := make(chan received, tt.senders*tt.perEach)
			srv := startServer(t, Options{}, func(ctx context.Context, c *Conn) Handler { return collector(in) })
			c := dial(t, srv.url, Options{SendQueue: tt.queue})
			runConn(t, c, nil)
			var wg sync.WaitGroup
			for s := range tt.senders {
				wg.Go(func() {
					for i := range tt.perEach {
						if err := c.Send(context.Background(), packet(fmt.Sprintf("%d-%d", s, i))); err != nil {
							t.Errorf("Send: %v", err)
							return
						}
					}
				})
			}
			wg.Wait()
			next := make([]int, tt.senders)
			for range tt.senders * tt.perEach {
				r := recv(t, in)
				if r.err != nil {
					t.Fatalf("received error %v", r.err)
				}
				sender, seq, _ := strings.Cut(r.env.PacketID, "-")
				s, _ := strconv.Atoi(sender)
				i, _ := strconv.Atoi(seq)
				if i != next[s] {
					t.Fatalf("sender %d: packet %d arrived, want %d", s, i, next[s])
				}
				next[s]++
			}
		})
	}
}

// TestTrySendRaw checks that TrySendRaw never blocks: a full queue is
// ErrQueueFull, a closed connection ErrClosed.
func TestTrySendRaw(t *testing.T) {
	srv := startServer(t, Options{}, echo)
	c := dial(t, srv.url, Options{SendQueue: 1})
	frame, err := packet("a").Encode()
	if err != nil {
		t.Fatal(err)
	}
	// Run is not started: nothing drains the queue.
	if err := c.TrySendRaw(frame); err != nil {
		t.Fatalf("first TrySendRaw = %v, want nil", err)
	}
	if err := c.TrySendRaw(frame); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("TrySendRaw on a full queue = %v, want ErrQueueFull", err)
	}
	if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatal(err)
	}
	if err := c.TrySendRaw(frame); !errors.Is(err, ErrClosed) {
		t.Fatalf("TrySendRaw after Close = %v, want ErrClosed", err)
	}
}

// TestWriteTimeoutWithoutReader checks that the write timeout still ends a
// connection whose peer stops reading: the deadline the corking socket puts
// on its writes fails the stuck write and Run returns.
func TestWriteTimeoutWithoutReader(t *testing.T) {
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
		<-release // never reads
	}))
	t.Cleanup(func() {
		close(release)
		ts.Close()
		wg.Wait()
	})
	c := dial(t, "ws"+strings.TrimPrefix(ts.URL, "http"), Options{WriteTimeout: 200 * time.Millisecond, SendQueueBytes: 1 << 40})
	res := runConn(t, c, nil)
	big := append(append([]byte(`{"type":"ping","x":"`), bytes.Repeat([]byte("x"), 64<<10)...), `"}`...)
	// Fill the socket buffers until a write is stuck; the send that hits
	// the timeout (or any later one) fails.
	for range 10000 {
		if err := c.SendRaw(context.Background(), big); err != nil {
			break
		}
	}
	select {
	case err := <-res:
		if err == nil {
			t.Fatal("Run = nil after a failed write, want an error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end after the write timeout")
	}
}

// recConn is a net.Conn that records what reaches it.
type recConn struct {
	net.Conn
	mu     sync.Mutex
	writes [][]byte
}

func (r *recConn) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, bytes.Clone(p))
	return len(p), nil
}

func (r *recConn) SetWriteDeadline(time.Time) error { return nil }

func (r *recConn) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(bytes.Join(r.writes, nil))
}

func TestCorkConn(t *testing.T) {
	tests := []struct {
		name string
		run  func(c *corkConn) error
		want string // what reached the socket, in order
	}{
		{"uncorked passes through", func(c *corkConn) error {
			_, err := c.Write([]byte("ab"))
			return err
		}, "ab"},
		{"corked holds back", func(c *corkConn) error {
			c.setCorked(true)
			_, err := c.Write([]byte("ab"))
			return err
		}, ""},
		{"uncorked write sends what was held first", func(c *corkConn) error {
			c.setCorked(true)
			if _, err := c.Write([]byte("ab")); err != nil {
				return err
			}
			c.setCorked(false)
			_, err := c.Write([]byte("cd"))
			return err
		}, "abcd"},
		{"flush sends what was held", func(c *corkConn) error {
			c.setCorked(true)
			if _, err := c.Write([]byte("ab")); err != nil {
				return err
			}
			return c.flush()
		}, "ab"},
		{"bound exceeded sends everything", func(c *corkConn) error {
			c.setCorked(true)
			if _, err := c.Write(bytes.Repeat([]byte("a"), maxCork-1)); err != nil {
				return err
			}
			_, err := c.Write([]byte("bb"))
			return err
		}, strings.Repeat("a", maxCork-1) + "bb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := &recConn{}
			c := newCorkConn(rc, time.Second)
			if err := tt.run(c); err != nil {
				t.Fatal(err)
			}
			if got := rc.all(); got != tt.want {
				t.Fatalf("socket got %d bytes %.20q, want %d bytes %.20q", len(got), got, len(tt.want), tt.want)
			}
		})
	}
}

// TestAcceptWithoutHijacker checks that a ResponseWriter that cannot be
// hijacked is refused as before the corking wrapper: HTTP 501, an error.
func TestAcceptWithoutHijacker(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/ws", nil)
	r.Header.Set("Connection", "Upgrade")
	r.Header.Set("Upgrade", "websocket")
	r.Header.Set("Sec-WebSocket-Version", "13")
	r.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	r.Header.Set("Sec-WebSocket-Protocol", protocol.Subprotocol)
	w := httptest.NewRecorder()
	if _, err := Accept(w, r, Options{}); err == nil {
		t.Fatal("Accept on a ResponseRecorder succeeded")
	}
	if w.Code != http.StatusNotImplemented {
		t.Fatalf("status %d, want 501", w.Code)
	}
}
