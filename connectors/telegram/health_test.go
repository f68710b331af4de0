package telegram

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

// TestPollerHealthIsChannelStatus is issue 33 item 3 for Telegram, on the
// SDK's consumer health: a getUpdates that fails (502) shows the channel
// degraded, the next answered poll connected again; a token Telegram
// then refuses (401) shows it revoked, and the log says the poller stops
// for good instead of restarting.
func TestPollerHealthIsChannelStatus(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowBot, login)
	nextStatus(t, cl, ch, protocol.StatusConnected) // the sign-in's push
	e2e.Eventually(t, "polling", func() bool { return f.Calls(testToken, "getUpdates") > 0 })
	f.FailNext(testToken, "getUpdates", 502, "Bad Gateway", 0)
	nextStatus(t, cl, ch, protocol.StatusDegraded)
	nextStatus(t, cl, ch, protocol.StatusConnected)

	f.Revoke(testToken)
	nextStatus(t, cl, ch, protocol.StatusRevoked)
	e2e.Eventually(t, "the poller parked", func() bool {
		return strings.Contains(cn.Logs.String(), "not restarting")
	})
	if strings.Contains(cn.Logs.String(), "restarting retry_in") && strings.Count(cn.Logs.String(), "restarting retry_in") > 1 {
		t.Errorf("the poller restarted more than once (the 502 only):\n%s", cn.Logs.String())
	}
}
