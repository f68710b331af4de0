package wsconn

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/xconn/xconn/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testServer accepts data-plane connections with opts and runs each with the
// handler made by mk. Cleanup cancels every connection and waits for it.
type testServer struct {
	ts      *httptest.Server
	url     string
	results chan error // Run result of each accepted connection
}

func startServer(t testing.TB, opts Options, mk func(ctx context.Context, c *Conn) Handler) *testServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	s := &testServer{results: make(chan error, 64)}
	s.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wg.Add(1) // before the hijack, so ts.Close orders it before wg.Wait
		defer wg.Done()
		c, err := Accept(w, r, opts)
		if err != nil {
			return
		}
		err = c.Run(ctx, mk(ctx, c))
		select {
		case s.results <- err:
		default:
		}
	}))
	s.url = "ws" + strings.TrimPrefix(s.ts.URL, "http")
	t.Cleanup(func() {
		cancel()
		s.ts.Close()
		wg.Wait()
	})
	return s
}

// echo returns a handler that sends every valid packet back.
func echo(ctx context.Context, c *Conn) Handler {
	return func(env *protocol.Envelope, raw []byte, err error) {
		if err == nil {
			_ = c.SendRaw(ctx, raw)
		}
	}
}

// runConn runs c in the background; cleanup closes it and waits for Run.
func runConn(t testing.TB, c *Conn, h Handler) <-chan error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { res <- c.Run(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		<-c.Done()
	})
	return res
}

// startRawServer serves a plain coder/websocket endpoint that selects
// subprotocols (possibly none) and echoes frames; it returns the ws:// URL.
func startRawServer(t testing.TB, wg *sync.WaitGroup, subprotocols []string) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wg.Add(1)
		defer wg.Done()
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: subprotocols})
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ctx := context.Background()
		for {
			typ, b, err := ws.Read(ctx)
			if err != nil {
				return
			}
			if err := ws.Write(ctx, typ, b); err != nil {
				return
			}
		}
	}))
	t.Cleanup(ts.Close)
	return "ws" + strings.TrimPrefix(ts.URL, "http")
}
