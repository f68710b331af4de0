package webchat_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/store"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testAPIKey is the system API key of the test systems (a canary: it must
// never reach a browser, a page or a log line).
const testAPIKey = "canary-api-key-7f3e9b1c5d"

// system is a web chat connector and an embedded host with an agent,
// talking over real loopback sockets.
type system struct {
	conn    *webchat.Connector
	host    *host.Host
	baseURL string // connector Base URL = public URL of the web side
	logs    *syncBuffer

	// for restartConnector
	t        *testing.T
	opts     systemOptions
	dir      string
	cdb      *store.DB
	hdb      *store.DB
	log      *slog.Logger
	stopConn func()
}

// syncBuffer is a concurrency-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type systemOptions struct {
	agent    host.Agent
	loginTTL time.Duration
}

func newSystem(t *testing.T, o systemOptions) *system {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	cdb, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "webchat.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cdb.Close() })
	hdb, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "host.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hdb.Close() })

	s := &system{logs: logs, t: t, opts: o, dir: dir, cdb: cdb, hdb: hdb, log: log}
	s.startConnector(ctx, "127.0.0.1:0")
	s.startHost(ctx)
	t.Cleanup(func() {
		s.stopHost()
		s.stopConn()
	})
	if _, err := s.host.Admit(ctx, s.baseURL, testAPIKey); err != nil {
		t.Fatalf("admit: %v", err)
	}
	s.waitOnline(ctx)
	return s
}

// startHost starts a host on the system's host store (a restarted host
// reconnects to the admitted connector and reopens its channels).
func (s *system) startHost(ctx context.Context) {
	t := s.t
	t.Helper()
	agent := s.opts.agent
	if agent == nil {
		agent = host.Echo{}
	}
	h, err := host.New(host.Options{Store: s.hdb, Delivery: s.hdb, Agent: agent, Logger: s.log,
		FilesDir: filepath.Join(s.dir, "host-files"), ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s.host = h
}

// stopHost closes the host (idempotent until the next startHost).
func (s *system) stopHost() {
	if s.host == nil {
		return
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	if err := s.host.Close(cctx); err != nil {
		s.t.Errorf("host close: %v", err)
	}
	s.host = nil
}

// startConnector builds, starts and serves a connector on addr.
func (s *system) startConnector(ctx context.Context, addr string) {
	t := s.t
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s.baseURL = "http://" + ln.Addr().String()
	conn, err := webchat.New(webchat.Options{
		SDK: connector.Options{
			Store:  s.cdb,
			APIKey: testAPIKey,
			// DataDir holds the file cache here (Store is given).
			DataDir: filepath.Join(s.dir, "files"),
			Logger:  s.log,
			// A fixed key keeps signed URLs valid across a restart.
			SigningKey: bytes.Repeat([]byte{7}, 32),
		},
		PublicURL: s.baseURL,
		LoginTTL:  s.opts.loginTTL,
		// Fast polling keeps the sign-in tests short.
		LoginPollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Server().Start(ctx); err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- conn.Server().Serve(sctx, ln) }()
	s.conn = conn
	var once sync.Once
	s.stopConn = func() {
		once.Do(func() {
			stop()
			if err := <-served; err != nil {
				t.Errorf("connector: %v", err)
			}
		})
	}
}

// restartConnector stops the connector and starts a new one on the same
// store and address; the host reconnects by itself.
func (s *system) restartConnector() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr := strings.TrimPrefix(s.baseURL, "http://")
	s.stopConn()
	for { // the host notices the closed socket
		if c, ok := s.host.Connector(webchat.CardID); !ok || c.Link != host.LinkOnline {
			break
		}
		if ctx.Err() != nil {
			s.t.Fatal("link still online after the connector stopped")
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.startConnector(ctx, addr)
	s.waitOnline(ctx)
}

func (s *system) waitOnline(ctx context.Context) {
	s.t.Helper()
	for {
		if c, ok := s.host.Connector(webchat.CardID); ok && c.Link == host.LinkOnline {
			return
		}
		if ctx.Err() != nil {
			s.t.Fatal("data plane did not come online")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startQR starts a QR sign-in of user and returns it with its login URL.
func (s *system) startQR(t *testing.T, user string) (*host.Signin, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	si, err := s.host.Connect(ctx, user, webchat.CardID, webchat.FlowQR, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	// host.Connect may return a moment before the QR code is recorded in
	// State (the host applies the auth.start.ack on its goroutine).
	st := si.State()
	for st.QRCodeText == "" && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
		st = si.State()
	}
	if !strings.HasPrefix(st.QRCodeText, s.baseURL+"/webchat/login/") {
		t.Fatalf("qr_code_text %q is not a login URL of %s", st.QRCodeText, s.baseURL)
	}
	if !strings.HasPrefix(st.QRCodeImage, "data:image/png;base64,") {
		t.Fatalf("qr_code_image is not a PNG data URL: %.40q", st.QRCodeImage)
	}
	return si, st.QRCodeText
}

// waitStatus waits until the sign-in reports status.
func waitStatus(t *testing.T, si *host.Signin, status string) host.SigninState {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if st := si.State(); st.Status == status {
			return st
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("sign-in status %q, want %q", si.State().Status, status)
	return host.SigninState{}
}

func newBrowserClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Jar: jar, Transport: tr, Timeout: 30 * time.Second}
}

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct {
	Type string
	Data string
}

// sseStream reads an event stream in a goroutine that stops when the
// stream is closed.
type sseStream struct {
	events chan sseEvent
	body   interface{ Close() error }
	done   chan struct{}
}

func openEvents(t *testing.T, c *http.Client, url string) *sseStream {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	// No client timeout on a stream: it is closed by the cleanup.
	sc := *c
	sc.Timeout = 0
	res, err := sc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		res.Body.Close()
		t.Fatalf("events: %s %s", res.Status, res.Header.Get("Content-Type"))
	}
	s := &sseStream{events: make(chan sseEvent, 1024), body: res.Body, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(s.events)
		br := bufio.NewReader(res.Body)
		var ev sseEvent
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "":
				if ev.Type != "" {
					s.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.Type = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.Data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *sseStream) close() {
	s.body.Close()
	<-s.done
}

// next returns the next event matching keep, failing after a timeout.
func (s *sseStream) next(t *testing.T, keep func(sseEvent) bool) sseEvent {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatal("event stream ended")
			}
			if keep(ev) {
				return ev
			}
		case <-timeout:
			t.Fatal("timed out waiting for an event")
		}
	}
}

func decode[T any](t *testing.T, data string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		t.Fatalf("decode %q: %v", data, err)
	}
	return v
}

// testPNG returns a 160x100 PNG image: a gradient with a disc.
func testPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 160, 100))
	for x := range 160 {
		for y := range 100 {
			c := color.RGBA{R: uint8(40 + x), G: uint8(90 + y), B: 200, A: 255}
			if dx, dy := x-80, y-50; dx*dx+dy*dy < 30*30 {
				c = color.RGBA{R: 250, G: 200, B: 40, A: 255}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
