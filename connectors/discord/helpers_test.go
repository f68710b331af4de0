package discord

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/discord/discordtest"
)

const (
	testKey  = "discord-test-key-8f2c4e6a1b3d57"
	botToken = "MTIzNDU2Nzg5MDEyMzQ1Njc4.Gx1234.fake-bot-token-abcdefghijklmnopqrstu"
	botID    = "800000000000000001"
	general  = "1100000000000000001"
	dmAlice  = "1100000000000000002"
	hidden   = "1100000000000000003"
	voice    = "1100000000000000004"
	guildID  = "1000000000000000001"
	wait     = e2e.Wait
)

var (
	alice   = discordtest.User{ID: "900000000000000001", Username: "alice"}
	login   = map[string]string{"bot_token": botToken, "channel_id": general}
	secrets = e2e.Secrets{botToken}
)

// newFake starts a fake Discord with the test bot (Message Content on
// unless noContent), a guild channel, a DM, a channel the bot cannot see
// and a voice channel.
func newFake(tb testing.TB, noContent bool) *discordtest.Server {
	tb.Helper()
	f := discordtest.New()
	f.SetHeartbeat(time.Second)
	f.AddBot(botToken, discordtest.Bot{ID: botID, Username: "xconn-bot", MessageContent: !noContent})
	f.AddChannel(discordtest.Channel{ID: general, GuildID: guildID, Name: "general"})
	f.AddChannel(discordtest.Channel{ID: dmAlice, Type: discordtest.ChannelDM})
	f.AddChannel(discordtest.Channel{ID: hidden, GuildID: guildID, Name: "staff", Hidden: []string{botToken}})
	f.AddChannel(discordtest.Channel{ID: voice, GuildID: guildID, Name: "lounge", Type: 2})
	f.Start()
	tb.Cleanup(f.Close)
	return f
}

// gatewayOf is the fake's Gateway URL for its base URL.
func gatewayOf(base string) string { return "ws" + strings.TrimPrefix(base, "http") + "/gateway" }

// build is the connector as the tests run it, against the fake whose
// base URL is env.Fake; mod may adjust Options.
func build(mod func(*Options)) e2e.NewFunc {
	return e2e.Build(New, func(env e2e.Env) Options {
		return Options{SDK: env.SDK, APIURL: env.Fake + "/api", GatewayURL: gatewayOf(env.Fake),
			EditInterval: 50 * time.Millisecond, MaxRetryWait: 3 * time.Second, OpenTimeout: 5 * time.Second,
			MaxReconnectWait: 200 * time.Millisecond}
	}, mod)
}

// startConn serves the connector with data dir dir (fresh when "")
// against the fake f; its logs must never hold the token.
func startConn(t *testing.T, f *discordtest.Server, dir string, mod func(*Options)) *e2e.Conn {
	t.Helper()
	return e2e.Start(t, e2e.Config{APIKey: testKey, DataDir: dir, Fake: strings.TrimSuffix(f.APIURL(), "/api"), Secrets: secrets}, build(mod))
}

// waitSent waits until cond holds for what the bot posted in channel.
func waitSent(t *testing.T, f *discordtest.Server, channel, what string, cond func([]discordtest.Sent) bool) []discordtest.Sent {
	t.Helper()
	return e2e.Await(t, what, func(ctx context.Context) ([]discordtest.Sent, error) { return f.WaitSent(ctx, channel, cond) })
}

func texts(sent []discordtest.Sent) []string {
	out := make([]string, len(sent))
	for i, s := range sent {
		out[i] = s.Text
	}
	return out
}

// signInMessage is the message of a failed sign-in.
func signInMessage(err error) string {
	var se *connectortest.SignInError
	if errors.As(err, &se) {
		return se.State.Message
	}
	return ""
}
