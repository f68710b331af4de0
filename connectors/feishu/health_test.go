package feishu

import (
	"context"
	"strings"
	"testing"

	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/protocol"
)

// nextStatus waits for the next Descriptor push of ch with status want.
func nextStatus(t *testing.T, cl *e2e.Client, ch string, want protocol.ConnectionStatus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := cl.ExpectStatus(ctx, ch, want); err != nil {
		t.Fatal(err)
	}
}

// TestLongConnHealthIsChannelStatus is issue 33 item 3 for Feishu, on the
// SDK's consumer health: a dropped long connection shows the channel
// degraded, the reconnect connected again; when Feishu then refuses the
// app's credentials at the bootstrap (514, fatal in §5.1) the channel is
// revoked and the connection is not retried (before, it was marked error
// and retried forever with backoff).
func TestLongConnHealthIsChannelStatus(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowApp, login)
	nextStatus(t, cl, ch, protocol.StatusConnected) // the sign-in's push
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := f.WaitConnected(ctx, testApp); err != nil {
		t.Fatal(err)
	}
	if !f.Drop(testApp) {
		t.Fatal("no long connection to drop")
	}
	nextStatus(t, cl, ch, protocol.StatusDegraded)
	nextStatus(t, cl, ch, protocol.StatusConnected)

	f.AddApp(testApp, "an0therSecretAfterRotation0123456") // the app's secret was reset in the console
	e2e.Eventually(t, "the reconnected long connection", func() bool { return f.Connected(testApp) })
	f.Drop(testApp)
	nextStatus(t, cl, ch, protocol.StatusRevoked)
	e2e.Eventually(t, "the consumer parked", func() bool { return strings.Contains(cn.Logs.String(), "not restarting") })
}
