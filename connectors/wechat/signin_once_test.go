package wechat_test

import (
	"strings"
	"testing"

	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/wechat/wechattest"
)

// countPath counts the fake's requests whose path ends with suffix.
func countPath(f *wechattest.Server, suffix string) int {
	n := 0
	for _, q := range f.Requests() {
		if strings.HasSuffix(q.Path, suffix) {
			n++
		}
	}
	return n
}

// TestSignInChecksTokenOnce is issue 33 item 5 for WeChat: the token that
// get_qrcode_status has just confirmed is not checked again with a
// getconfig at sign-in (the constructor knows a sign-in from a restore);
// a restore checks the stored token once.
func TestSignInChecksTokenOnce(t *testing.T) {
	r := newRig(t, wechattest.Options{}, nil)
	c := r.Dial(t)
	r.signIn(c)
	if n := countPath(r.fake, "getconfig"); n != 0 {
		t.Fatalf("%d getconfig calls for a sign-in iLink has just confirmed, want 0", n)
	}
	c.Close()
	r.Restart()
	e2e.Eventually(t, "the restored channel's token checked", func() bool { return countPath(r.fake, "getconfig") == 1 })
}
