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

	"github.com/xconn/xconn/connectors/slack/slacktest"
)

// TestServeSlack runs "xconn serve slack" against a fake Slack: the
// printed Base URL and Web API, the im.slack Card with its one sign-in
// form, "xconn check" signed in to the fake with the app's tokens and a
// channel passing, no token in any output, "Stopping…" and exit 0 after
// Ctrl-C; a wrong flag or value fails with its exit code.
func TestServeSlack(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const (
		appToken = "xapp-1-A0SERVE0001-42-0123456789abcdef0123456789abcdef"
		botToken = "xoxb-42-4242-ServeSlackBotToken0123"
		apiKey   = "serve-slack-test-key-0123"
		general  = "C0GENERAL1"
	)
	fake := slacktest.New(slacktest.Options{})
	fake.AddApp(slacktest.App{AppToken: appToken, BotToken: botToken, AppID: "A0SERVE0001", TeamID: "T0ACME0001", Team: "Acme",
		BotUserID: "U0BOTUSER1", BotID: "B0BOT00001", BotName: "xconn"})
	fake.AddConversation(slacktest.Conversation{ID: general, Name: "general"})
	api := fake.Start()
	defer fake.Close()
	dir := t.TempDir()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "slack", "--data", dir, "--listen", addr, "--api-key", apiKey, "--slack-api-url", api},
			strings.NewReader(""), out, errOut)
	}()
	waitFor(t, out, regexp.MustCompile(`Web API: `), 30*time.Second)
	want := "Slack connector\n  Base URL:  http://" + addr + "\n  Web API:   " + api + "\n"
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
	err = json.NewDecoder(res.Body).Decode(&card)
	res.Body.Close()
	c.CloseIdleConnections()
	if err != nil {
		t.Fatalf("card: %v", err)
	}
	if card.ID != "im.slack" || len(card.AuthFlows) != 1 || card.AuthFlows[0].ID != "slack_app_binding" {
		t.Fatalf("card %+v", card)
	}

	var checkOut, checkErr syncBuffer
	code := run(context.Background(), []string{"check", "http://" + addr, "--api-key", apiKey, "--auth-flow", "slack_app_binding",
		"--auth-input", "app_token=" + appToken, "--auth-input", "bot_token=" + botToken, "--auth-input", "channel=" + general},
		strings.NewReader(""), &checkOut, &checkErr)
	if code != 0 {
		t.Fatalf("xconn check: exit %d\n%s\n%s", code, checkOut.String(), checkErr.String())
	}
	if fake.Calls("auth.test") == 0 || fake.Calls("apps.connections.open") == 0 {
		t.Errorf("check signed in without auth.test (%d) or apps.connections.open (%d)", fake.Calls("auth.test"), fake.Calls("apps.connections.open"))
	}
	for _, s := range []string{appToken, botToken} {
		if strings.Contains(checkOut.String()+checkErr.String()+out.String()+errOut.String(), s) {
			t.Fatal("a token in the output")
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
		{[]string{"--slack-bogus", "x"}, 2, "unknown flag: --slack-bogus"},
		{[]string{"--slack-api-url", "not a url"}, 1, "APIURL"},
		{[]string{"--proxy", "ftp://x"}, 1, "proxy scheme"},
	} {
		var stderr syncBuffer
		code := run(context.Background(), append([]string{"serve", "slack", "--data", dir, "--listen", "127.0.0.1:0"}, tc.args...),
			strings.NewReader(""), &syncBuffer{}, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.msg)
		}
	}
}
