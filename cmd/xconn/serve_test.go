package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestServeWebchat runs "xconn serve webchat" on one listener, then with
// --public-listen: the printed Base URL and chat page, which side each
// listener serves, "Stopping…" and exit 0 after Ctrl-C, and a restart on the
// same data directory.
func TestServeWebchat(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	get := func(url string) int {
		t.Helper()
		c := &http.Client{Timeout: 10 * time.Second}
		defer c.CloseIdleConnections()
		res, err := c.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	serve := func(args ...string) (*syncBuffer, func() int) {
		ctx, cancel := context.WithCancel(context.Background())
		out, errOut := &syncBuffer{}, &syncBuffer{}
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, append([]string{"serve", "webchat", "--data", dir}, args...), strings.NewReader(""), out, errOut)
		}()
		return out, func() int {
			cancel()
			select {
			case code := <-done:
				if code != 0 {
					t.Logf("stderr:\n%s", errOut.String())
				}
				return code
			case <-time.After(30 * time.Second):
				t.Fatal("serve did not stop")
				return -1
			}
		}
	}

	addr := freeAddr(t)
	out, stop := serve("--listen", addr)
	waitFor(t, out, regexp.MustCompile(`Chat page: `), 30*time.Second)
	want := "Web chat connector\n  Base URL:  http://" + addr + "\n  Chat page: http://" + addr + "/webchat/\n" +
		"  API key:   none (set --api-key or XCONN_API_KEY before exposing --listen beyond this machine)\n"
	if out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
	for _, path := range []string{"/connector-card.json", "/webchat/", "/webchat/static/app.js"} {
		if code := get("http://" + addr + path); code != http.StatusOK {
			t.Errorf("GET %s: %d", path, code)
		}
	}
	if code := stop(); code != 0 || out.String() != want+"Stopping…\n" {
		t.Fatalf("exit %d, output %q", code, out.String())
	}

	pub := freeAddr(t)
	out, stop = serve("--listen", addr, "--public-listen", pub)
	waitFor(t, out, regexp.MustCompile(`Chat page: http://`+regexp.QuoteMeta(pub)+`/webchat/\n`), 30*time.Second)
	for _, tc := range []struct {
		url  string
		want int
	}{
		{"http://" + addr + "/connector-card.json", http.StatusOK},
		{"http://" + addr + "/webchat/", http.StatusNotFound},
		{"http://" + pub + "/webchat/", http.StatusOK},
		{"http://" + pub + "/connector-card.json", http.StatusNotFound},
	} {
		if code := get(tc.url); code != tc.want {
			t.Errorf("GET %s: %d, want %d", tc.url, code, tc.want)
		}
	}
	if code := stop(); code != 0 || !strings.HasSuffix(out.String(), "Stopping…\n") {
		t.Fatalf("exit %d, output %q", code, out.String())
	}
}
