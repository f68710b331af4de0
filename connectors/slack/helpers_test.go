package slack

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/slack/slacktest"
)

const (
	testKey  = "slack-test-key-5e0b7a93f28c1d"
	appToken = "xapp-1-A0TESTAPP1-1234-0123456789abcdef0123456789abcdef"
	botToken = "xoxb-1234-5678-AbCdEfGhIjKlMnOpQrStUvWx"
	general  = "C0GENERAL1"
	random   = "C0RANDOM01"
	dmAlice  = "D0ALICE001"
	alice    = "U0ALICE001"
	botUser  = "U0BOTUSER1"
	wait     = e2e.Wait
)

var (
	testApp = slacktest.App{AppToken: appToken, BotToken: botToken, AppID: "A0TESTAPP1", TeamID: "T0ACME0001", Team: "Acme",
		BotUserID: botUser, BotID: "B0BOT00001", BotName: "xconn"}
	login        = map[string]string{"app_token": appToken, "bot_token": botToken, "channel": general}
	loginUnbound = map[string]string{"app_token": appToken, "bot_token": botToken}
	secrets      = e2e.Secrets{appToken, botToken}
)

// newFake starts a fake Slack with the test app, two channels and a DM;
// opts may be nil.
func newFake(tb testing.TB, opts *slacktest.Options) (*slacktest.Server, string) {
	tb.Helper()
	var o slacktest.Options
	if opts != nil {
		o = *opts
	}
	f := slacktest.New(o)
	f.AddApp(testApp)
	f.AddConversation(slacktest.Conversation{ID: general, Name: "general"})
	f.AddConversation(slacktest.Conversation{ID: random, Name: "random"})
	f.AddConversation(slacktest.Conversation{ID: dmAlice, User: alice})
	f.AddConversation(slacktest.Conversation{ID: "C0PRIVATE1", Name: "private", NotMember: true})
	url := f.Start()
	tb.Cleanup(f.Close)
	return f, url
}

// build is the connector as the tests run it, against the fake at
// env.Fake; mod may adjust Options.
func build(mod func(*Options)) e2e.NewFunc {
	return e2e.Build(New, func(env e2e.Env) Options {
		return Options{SDK: env.SDK, APIURL: env.Fake, EditInterval: 50 * time.Millisecond, MaxRetryWait: 3 * time.Second}
	}, mod)
}

// startConn serves the connector with data dir dir against the fake at
// apiURL; its logs must never hold a token.
func startConn(t *testing.T, dir, apiURL string, mod func(*Options)) *e2e.Conn {
	t.Helper()
	return e2e.Start(t, e2e.Config{APIKey: testKey, DataDir: dir, Fake: apiURL, Secrets: secrets}, build(mod))
}

// waitSent waits until cond holds for what the bot posted in conv.
func waitSent(t *testing.T, f *slacktest.Server, conv, what string, cond func([]slacktest.Message) bool) []slacktest.Message {
	t.Helper()
	return e2e.Await(t, what, func(ctx context.Context) ([]slacktest.Message, error) { return f.WaitSent(ctx, conv, cond) })
}

// waitStats waits until cond holds for the app's Socket Mode counters.
func waitStats(t *testing.T, f *slacktest.Server, what string, cond func(slacktest.SocketStats) bool) slacktest.SocketStats {
	t.Helper()
	return e2e.Await(t, what, func(ctx context.Context) (slacktest.SocketStats, error) { return f.WaitStats(ctx, appToken, cond) })
}

func texts(sent []slacktest.Message) []string {
	var out []string
	for _, s := range sent {
		out = append(out, s.Text)
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
