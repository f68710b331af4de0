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

	"github.com/xconn/xconn/connectors/feishu/feishutest"
)

// TestServeFeishu runs "xconn serve feishu" against a fake Feishu: the
// printed Base URL, hosts and event mode, the im.feishu Card with both
// sign-in flows, "Stopping…" and exit 0 after Ctrl-C; a wrong flag or
// value fails with its exit code.
func TestServeFeishu(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	fake := feishutest.New()
	api := fake.Start()
	defer fake.Close()
	dir := t.TempDir()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "feishu", "--data", dir, "--listen", addr,
			"--feishu-api-url", api, "--feishu-accounts-url", api}, strings.NewReader(""), out, errOut)
	}()
	waitFor(t, out, regexp.MustCompile(`API key: `), 30*time.Second)
	want := "Feishu connector\n  Base URL:  http://" + addr + "\n  Open API:  " + api + "\n  Accounts:  " + api +
		"\n  Events:    long connection per app\n" +
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
		ID        string `json:"connector_card_id"`
		AuthFlows []struct {
			ID string `json:"id"`
		} `json:"auth_flows"`
	}
	json.NewDecoder(res.Body).Decode(&card)
	res.Body.Close()
	c.CloseIdleConnections()
	if card.ID != "im.feishu" || len(card.AuthFlows) == 0 || card.AuthFlows[0].ID != "feishu_app_binding" {
		t.Fatalf("card %+v", card)
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
		{[]string{"--feishu-bogus", "x"}, 2, "unknown flag: --feishu-bogus"},
		{[]string{"--feishu-api-url", "not a url"}, 1, "APIURL must be an absolute http(s) URL"},
		{[]string{"--feishu-accounts-url", "ftp://x"}, 1, "AccountsURL must be an absolute http(s) URL"},
		{[]string{"--feishu-events", "carrier-pigeon"}, 1, `Options.Events must be "longconn" or "webhook"`},
	} {
		var stderr syncBuffer
		code := run(context.Background(), append([]string{"serve", "feishu", "--data", dir, "--listen", "127.0.0.1:0"}, tc.args...),
			strings.NewReader(""), &syncBuffer{}, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.msg)
		}
	}
}
