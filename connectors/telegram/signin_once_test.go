package telegram

import (
	"testing"

	"github.com/xconn/xconn/connector/connectortest/e2e"
)

// TestSignInChecksTokenOnce is issue 33 item 5 for Telegram: the sign-in
// hands the client its getMe checked over to the SDK, so a sign-in calls
// getMe once (it called it twice: the form handler, then the client
// constructor); a restore checks the stored token once.
func TestSignInChecksTokenOnce(t *testing.T) {
	f, api := newFake(t)
	dir := t.TempDir()
	cn := startConn(t, dir, api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	cl.SignIn(FlowBot, login)
	if n := f.Calls(testToken, "getMe"); n != 1 {
		t.Fatalf("%d getMe calls for one sign-in, want 1", n)
	}
	cl.Close()
	cn.Stop()
	startConn(t, dir, api, "127.0.0.1:0", nil)
	e2e.Eventually(t, "the restored channel's token checked", func() bool { return f.Calls(testToken, "getMe") == 2 })
}
