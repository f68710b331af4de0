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

	"github.com/xconn/xconn/connectors/wecom/wecomtest"
)

// TestServeWecom runs "xconn serve wecom" against a fake WeCom: the
// printed Base URL, hosts and callback URL, the im.wecom Card with both
// sign-in forms, "xconn check" signed in with the application form
// passing, "Stopping…" and exit 0 after Ctrl-C; a wrong flag or value
// fails with its exit code.
func TestServeWecom(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const (
		corp, secret, token, aesKey = "ww1234567890abcdef", "appSecretValue-0123456789abcdef", "cbTokenValue7f3e9a", "9T0FrYOvxjCR7cbG8TZdWL5Z/T08eojsNfBCdjsxrbo"
	)
	fake := wecomtest.New()
	fake.AddApp(wecomtest.App{CorpID: corp, AgentID: 1000002, Secret: secret, Token: token, EncodingAESKey: aesKey})
	api := fake.Start()
	defer fake.Close()
	ws := "ws" + strings.TrimPrefix(api, "http") + wecomtest.BotPath
	dir := t.TempDir()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "wecom", "--data", dir, "--listen", addr, "--api-key", "serve-wecom-test-key-0123",
			"--wecom-api-url", api, "--wecom-ws-url", ws, "--wecom-replay-window", "2m"}, strings.NewReader(""), out, errOut)
	}()
	waitFor(t, out, regexp.MustCompile(`Callbacks: `), 30*time.Second)
	want := "WeCom connector\n  Base URL:   http://" + addr + "\n  Server API: " + api + "\n  Robots:     " + ws +
		"\n  Callbacks:  http://" + addr + "/wecom/callback/<corp_id>/<agent_id>\n"
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
	if card.ID != "im.wecom" || len(card.AuthFlows) != 2 || card.AuthFlows[0].ID != "wecom_app_binding" || card.AuthFlows[1].ID != "wecom_bot_binding" {
		t.Fatalf("card %+v", card)
	}

	var checkOut, checkErr syncBuffer
	code := run(context.Background(), []string{"check", "http://" + addr, "--api-key", "serve-wecom-test-key-0123",
		"--auth-flow", "wecom_app_binding", "--auth-input", "corp_id=" + corp, "--auth-input", "agent_id=1000002",
		"--auth-input", "secret=" + secret, "--auth-input", "token=" + token, "--auth-input", "encoding_aes_key=" + aesKey},
		strings.NewReader(""), &checkOut, &checkErr)
	if code != 0 {
		t.Fatalf("xconn check: exit %d\n%s\n%s", code, checkOut.String(), checkErr.String())
	}
	for _, s := range []string{secret, token, aesKey} {
		if strings.Contains(checkOut.String()+checkErr.String()+out.String()+errOut.String(), s) {
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
		{[]string{"--wecom-bogus", "x"}, 2, "unknown flag: --wecom-bogus"},
		{[]string{"--wecom-api-url", "not a url"}, 1, "APIURL must be an absolute http(s) URL"},
		{[]string{"--wecom-ws-url", "http://x"}, 1, "WSURL must be an absolute ws(s) URL"},
		{[]string{"--proxy", "ftp://x"}, 1, "proxy scheme"},
		{[]string{"--wecom-replay-window", "soon"}, 2, "wecom-replay-window"},
	} {
		var stderr syncBuffer
		code := run(context.Background(), append([]string{"serve", "wecom", "--data", dir, "--listen", "127.0.0.1:0"}, tc.args...),
			strings.NewReader(""), &syncBuffer{}, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.msg)
		}
	}
}
