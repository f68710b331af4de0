package adb

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connectors/adb/adbtest"
	"github.com/xconn/xconn/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testKey    = "adb-test-key-5f0c2d9e81a7b3"
	testSerial = "emulator-5554"
	wait       = 20 * time.Second
)

var login = map[string]string{"serial": testSerial}

// newFake starts a fake ADB server with the test device.
func newFake(t *testing.T) (*adbtest.Server, string) {
	t.Helper()
	f := adbtest.New()
	f.AddDevice(adbtest.Device{Serial: testSerial, Model: "Pixel 7", Battery: 76, Charging: true})
	addr := f.Start()
	t.Cleanup(f.Close)
	return f, addr
}

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// conn is the connector under test, served on a loopback listener.
type conn struct {
	t      *testing.T
	c      *Connector
	base   string
	logs   *logBuf
	cancel context.CancelFunc
	done   chan error
}

// startConn runs the connector with data dir dir against the ADB server
// at adbAddr on addr ("127.0.0.1:0" picks a port); mod may adjust Options.
func startConn(t *testing.T, dir, adbAddr, addr string, mod func(*Options)) *conn {
	t.Helper()
	logs := &logBuf{}
	opts := Options{
		SDK: connector.Options{DataDir: dir, APIKey: testKey,
			Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))},
		ADBAddr: adbAddr, PollInterval: 50 * time.Millisecond, DisconnectGrace: -1,
		CommandTimeout: 5 * time.Second, ScreenshotTimeout: 10 * time.Second,
	}
	if mod != nil {
		mod(&opts)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cn := &conn{t: t, c: c, base: "http://" + ln.Addr().String(), logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { cn.done <- c.Server().Serve(ctx, ln) }()
	t.Cleanup(cn.stop)
	return cn
}

// stop ends Serve and requires it to return nil.
func (cn *conn) stop() {
	cn.t.Helper()
	if cn.done == nil {
		return
	}
	cn.cancel()
	select {
	case err := <-cn.done:
		if err != nil {
			cn.t.Errorf("Serve: %v", err)
		}
	case <-time.After(wait):
		cn.t.Errorf("Serve did not return")
	}
	cn.done = nil
}

// dial connects a host-side test client.
func (cn *conn) dial(t *testing.T) *connectortest.Client {
	t.Helper()
	cl, _, err := connectortest.Connect(tctx(t), cn.base, testKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// signIn opens a channel and signs it in with input.
func signIn(t *testing.T, cl *connectortest.Client, input map[string]string) (string, *protocol.AuthStatePayload, error) {
	t.Helper()
	open, err := cl.Open(tctx(t), "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := cl.SignInForm(tctx(t), open.ConnectorChannelID, FlowBinding, input)
	return open.ConnectorChannelID, st, err
}

// signedIn opens a channel signed in to the test device.
func signedIn(t *testing.T, cl *connectortest.Client) string {
	t.Helper()
	ch, st, err := signIn(t, cl, login)
	if err != nil || st.Status != protocol.AuthAuthenticated {
		t.Fatalf("sign-in: %+v, %v", st, err)
	}
	return ch
}

// eventually polls cond with a generous deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func isCode(err error, code protocol.Code) bool {
	return protocol.CodeOf(err, "") == code
}

// descriptorWith waits for a pushed Descriptor whose status is status.
func descriptorWith(t *testing.T, cl *connectortest.Client, status protocol.ConnectionStatus) *protocol.Descriptor {
	t.Helper()
	env, err := cl.NextMatch(tctx(t), func(env *protocol.Envelope) bool {
		var p protocol.DescriptorPayload
		return env.Type == protocol.TypeDescriptorPush && env.DecodePayload(&p) == nil &&
			p.ConnectionDescriptor != nil && p.ConnectionDescriptor.Connection.Status == status
	})
	if err != nil {
		t.Fatalf("no Descriptor push with status %s: %v", status, err)
	}
	var p protocol.DescriptorPayload
	_ = env.DecodePayload(&p)
	return p.ConnectionDescriptor
}

func hasString(list [][]string, want ...string) bool {
	for _, c := range list {
		if strings.Join(c, "\x00") == strings.Join(want, "\x00") {
			return true
		}
	}
	return false
}

// drainPushes drops the Descriptor pushes received so far, so that the
// next descriptorWith sees only later ones.
func drainPushes(cl *connectortest.Client) {
	ctx := cancelled()
	for {
		if _, err := cl.NextMatch(ctx, func(env *protocol.Envelope) bool { return env.Type == protocol.TypeDescriptorPush }); err != nil {
			return
		}
	}
}

// cancelled is a context that has ended: NextMatch with it only looks at
// what was already received.
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
