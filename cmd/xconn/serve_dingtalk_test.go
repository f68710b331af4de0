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

	"github.com/xconn/xconn/connectors/dingtalk/dingtalktest"
)

// TestServeDingtalk runs "xconn serve dingtalk" against a fake DingTalk:
// the printed Base URL, hosts and reply mode, the im.dingtalk Card with
// its sign-in form, "xconn check" signed in with an app passing (the
// inbound checks are TestE2E's, where the fake can write), "Stopping…"
// and exit 0 after Ctrl-C, no secret or issued token in any output; a
// wrong flag or value fails with its exit code.
func TestServeDingtalk(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const clientID, secret, template = "dingserveapp0001", "ServeClientSecretValue0123456789abc", "tpl-0001.schema"
	fake := dingtalktest.New()
	fake.AddApp(dingtalktest.App{ClientID: clientID, ClientSecret: secret})
	api := fake.Start()
	defer fake.Close()
	dir := t.TempDir()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "dingtalk", "--data", dir, "--listen", addr, "--api-key", "serve-dingtalk-test-key-0123",
			"--dingtalk-api-url", api, "--dingtalk-oapi-url", api, "--dingtalk-card-template", template, "--dingtalk-card-key", "answer"},
			strings.NewReader(""), out, errOut)
	}()
	waitFor(t, out, regexp.MustCompile(`Replies: `), 30*time.Second)
	want := "DingTalk connector\n  Base URL:   http://" + addr + "\n  Open API:   " + api + "\n  Old API:    " + api +
		"\n  Replies:    streamed into AI card " + template + " (variable answer)\n"
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
	if card.ID != "im.dingtalk" || len(card.AuthFlows) != 1 || card.AuthFlows[0].ID != "dingtalk_app_binding" {
		t.Fatalf("card %+v", card)
	}

	var checkOut, checkErr syncBuffer
	code := run(context.Background(), []string{"check", "http://" + addr, "--api-key", "serve-dingtalk-test-key-0123",
		"--auth-flow", "dingtalk_app_binding", "--auth-input", "client_id=" + clientID, "--auth-input", "client_secret=" + secret},
		strings.NewReader(""), &checkOut, &checkErr)
	if code != 0 {
		t.Fatalf("xconn check: exit %d\n%s\n%s", code, checkOut.String(), checkErr.String())
	}
	all := checkOut.String() + checkErr.String() + out.String() + errOut.String()
	for _, s := range append([]string{secret}, fake.IssuedTokens()...) {
		if strings.Contains(all, s) {
			t.Fatal("a secret in the output")
		}
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 || !strings.HasSuffix(out.String(), "Stopping…\n") {
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
		{[]string{"--dingtalk-bogus", "x"}, 2, "unknown flag: --dingtalk-bogus"},
		{[]string{"--dingtalk-api-url", "not a url"}, 1, "APIURL"},
		{[]string{"--dingtalk-oapi-url", "ftp://x"}, 1, "OAPIURL"},
		{[]string{"--proxy", "ftp://x"}, 1, "proxy scheme"},
	} {
		var stderr syncBuffer
		code := run(context.Background(), append([]string{"serve", "dingtalk", "--data", dir, "--listen", "127.0.0.1:0"}, tc.args...),
			strings.NewReader(""), &syncBuffer{}, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.msg)
		}
	}
}
