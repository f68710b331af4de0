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

	"github.com/xconn/xconn/connectors/discord/discordtest"
)

// TestServeDiscord runs "xconn serve discord" against a fake Discord: the
// printed Base URL, REST API and Gateway, the im.discord Card with the
// discord_bot_binding form, "xconn check" signed in to a guild channel
// passing, the token in no output, "Stopping…" and exit 0 after Ctrl-C; a
// wrong flag or value fails with its exit code.
func TestServeDiscord(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const (
		token   = "MTIzNDU2Nzg5MDEyMzQ1Njc4.Gx1234.serve-bot-token-abcdefghijklmnopq"
		channel = "1100000000000000001"
		key     = "serve-discord-test-key-0123"
	)
	fake := discordtest.New()
	fake.SetHeartbeat(time.Second)
	fake.AddBot(token, discordtest.Bot{ID: "800000000000000001", Username: "xconn-bot", MessageContent: true})
	fake.AddChannel(discordtest.Channel{ID: channel, GuildID: "1000000000000000001", Name: "general"})
	fake.Start()
	defer fake.Close()
	api, gw := fake.APIURL(), fake.GatewayURL()
	dir := t.TempDir()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "discord", "--data", dir, "--listen", addr, "--api-key", key,
			"--discord-api-url", api, "--discord-gateway-url", gw}, strings.NewReader(""), out, errOut)
	}()
	waitFor(t, out, regexp.MustCompile(`Gateway: `), 30*time.Second)
	want := "Discord connector\n  Base URL:  http://" + addr + "\n  REST API:  " + api + "\n  Gateway:   " + gw + "\n"
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
	if card.ID != "im.discord" || len(card.AuthFlows) != 1 || card.AuthFlows[0].ID != "discord_bot_binding" {
		t.Fatalf("card %+v", card)
	}

	var checkOut, checkErr syncBuffer
	code := run(context.Background(), []string{"check", "http://" + addr, "--api-key", key,
		"--auth-flow", "discord_bot_binding", "--auth-input", "bot_token=" + token, "--auth-input", "channel_id=" + channel},
		strings.NewReader(""), &checkOut, &checkErr)
	if code != 0 {
		t.Fatalf("xconn check: exit %d\n%s\n%s", code, checkOut.String(), checkErr.String())
	}
	if strings.Contains(checkOut.String()+checkErr.String()+out.String()+errOut.String(), token) {
		t.Fatal("the bot token in the output")
	}
	if fake.Identifies(token) == 0 {
		t.Fatal("the connector never opened the Gateway")
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
		{[]string{"--discord-bogus", "x"}, 2, "unknown flag: --discord-bogus"},
		{[]string{"--discord-api-url", "not a url"}, 1, "APIURL"},
		{[]string{"--discord-gateway-url", "http://x"}, 1, "GatewayURL must be a ws:// or wss:// URL"},
		{[]string{"--proxy", "ftp://x"}, 1, "proxy"},
	} {
		var stderr syncBuffer
		code := run(context.Background(), append([]string{"serve", "discord", "--data", dir, "--listen", "127.0.0.1:0"}, tc.args...),
			strings.NewReader(""), &syncBuffer{}, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.msg)
		}
	}
}
