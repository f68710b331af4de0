package main

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xconn/xconn/connectors/telegram/telegramtest"
)

// TestServeTelegram runs "xconn serve telegram" against a fake Bot API:
// the printed Base URL and Bot API, the im.telegram Card, "Stopping…" and
// exit 0 after Ctrl-C; a wrong flag or proxy fails with its exit code.
func TestServeTelegram(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	fake := telegramtest.New()
	api := fake.Start()
	defer fake.Close()
	dir := t.TempDir()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "telegram", "--data", dir, "--listen", addr, "--telegram-api-url", api}, strings.NewReader(""), out, errOut)
	}()
	waitFor(t, out, regexp.MustCompile(`Bot API: `), 30*time.Second)
	want := "Telegram connector\n  Base URL:  http://" + addr + "\n  Bot API:   " + api + "\n" +
		"  API key:   none (set --api-key or XCONN_API_KEY before exposing --listen beyond this machine)\n"
	if out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	res, err := c.Get("http://" + addr + "/connector-card.json")
	if err != nil {
		t.Fatal(err)
	}
	var card struct {
		ID string `json:"connector_card_id"`
	}
	json.NewDecoder(res.Body).Decode(&card)
	res.Body.Close()
	c.CloseIdleConnections()
	if card.ID != "im.telegram" {
		t.Fatalf("card id %q", card.ID)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 || out.String() != want+"Stopping…\n" {
			t.Fatalf("exit %d, output %q, stderr %s", code, out.String(), errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}

	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--telegram-bogus", "x"}, 2, "unknown flag: --telegram-bogus"},
		{[]string{"--telegram-proxy", "ftp://proxy:21"}, 1, `proxy scheme "ftp"`},
		{[]string{"--telegram-api-url", "not a url"}, 1, "APIURL must be an absolute http(s) URL"},
	} {
		var stderr syncBuffer
		code := run(context.Background(), append([]string{"serve", "telegram", "--data", dir, "--listen", "127.0.0.1:0"}, tc.args...),
			strings.NewReader(""), &syncBuffer{}, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.msg)
		}
	}
}
