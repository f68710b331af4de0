package adb

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/adb/adbtest"
	"github.com/xconn/xconn/protocol"
)

const (
	testKey    = "adb-test-key-5f0c2d9e81a7b3"
	testSerial = "emulator-5554"
	wait       = e2e.Wait
)

var login = map[string]string{"serial": testSerial}

// newFake starts a fake ADB server with the test device.
func newFake(t testing.TB) (*adbtest.Server, string) {
	t.Helper()
	f := adbtest.New()
	f.AddDevice(adbtest.Device{Serial: testSerial, Model: "Pixel 7", Battery: 76, Charging: true})
	addr := f.Start()
	t.Cleanup(f.Close)
	return f, addr
}

// build is the connector as the tests run it, against the ADB server at
// env.Fake; mod may adjust Options.
func build(mod func(*Options)) e2e.NewFunc {
	return e2e.Build(New, func(env e2e.Env) Options {
		return Options{SDK: env.SDK, ADBAddr: env.Fake, PollInterval: 50 * time.Millisecond, DisconnectGrace: -1,
			CommandTimeout: 5 * time.Second, ScreenshotTimeout: 10 * time.Second}
	}, mod)
}

// startConn serves the connector with data dir dir against the ADB server
// at adbAddr on addr ("127.0.0.1:0" picks a port); mod may adjust Options.
func startConn(t *testing.T, dir, adbAddr, addr string, mod func(*Options)) *e2e.Conn {
	t.Helper()
	return e2e.Start(t, e2e.Config{APIKey: testKey, DataDir: dir, Addr: addr, Fake: adbAddr}, build(mod))
}

func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// signIn opens a channel and signs it in with input.
func signIn(t *testing.T, cl *e2e.Client, input map[string]string) (string, *protocol.AuthStatePayload, error) {
	t.Helper()
	return cl.OpenAndSignIn(tctx(t), FlowBinding, input)
}

// signedIn opens a channel signed in to the test device.
func signedIn(t *testing.T, cl *e2e.Client) string {
	t.Helper()
	ch, _ := cl.SignIn(FlowBinding, login)
	return ch
}

func isCode(err error, code protocol.Code) bool {
	return protocol.CodeOf(err, "") == code
}

// descriptorWith waits for a pushed Descriptor whose status is status.
func descriptorWith(t *testing.T, cl *e2e.Client, status protocol.ConnectionStatus) *protocol.Descriptor {
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
func drainPushes(cl *e2e.Client) {
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
