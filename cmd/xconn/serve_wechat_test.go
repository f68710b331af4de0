package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xconn/xconn/connectors/wechat/wechattest"
)

// TestServeWechat runs "xconn serve wechat" against the fake iLink
// server: the printed Base URL serves the im.wechat Card, Ctrl-C stops it
// with exit 0, and a wrong flag is a usage error (exit 2).
func TestServeWechat(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	fake, err := wechattest.Start(wechattest.Options{LongPoll: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "wechat", "--data", t.TempDir(), "--listen", addr,
			"--wechat-api-url", fake.URL, "--wechat-cdn-url", fake.CDNURL}, strings.NewReader(""), out, errOut)
	}()
	waitFor(t, out, regexp.MustCompile(`Sign in: `), 30*time.Second)
	if !strings.Contains(out.String(), "Base URL:  http://"+addr+"\n") || !strings.Contains(out.String(), "iLink API: "+fake.URL) {
		t.Fatalf("output %q", out.String())
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := c.Get("http://" + addr + "/connector-card.json")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("card: HTTP %d", res.StatusCode)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 || !strings.HasSuffix(out.String(), "Stopping…\n") {
			t.Fatalf("exit %d, output %q, stderr %q", code, out.String(), errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve wechat did not stop")
	}
	if code := run(context.Background(), []string{"serve", "wechat", "--bogus"}, strings.NewReader(""), &syncBuffer{}, &syncBuffer{}); code != 2 {
		t.Fatalf("a wrong flag exits %d, want 2", code)
	}
}
