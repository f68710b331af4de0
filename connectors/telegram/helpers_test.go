package telegram

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/telegram/telegramtest"
)

const (
	testKey   = "telegram-test-key-8c1d5e0b7a93f2"
	testToken = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
	testChat  = int64(424242)
	otherChat = int64(515151)
	wait      = e2e.Wait
)

var login = map[string]string{"bot_token": testToken, "chat_id": fmt.Sprint(testChat)}

// newFake starts a fake Bot API with the test bot and two chats.
func newFake(tb testing.TB) (*telegramtest.Server, string) {
	tb.Helper()
	f := telegramtest.New()
	f.AddBot(testToken, telegramtest.Bot{ID: 123456789, Username: "xconn_test_bot", FirstName: "Test Bot"})
	f.AddChat(telegramtest.Chat{ID: testChat, FirstName: "Alice"})
	f.AddChat(telegramtest.Chat{ID: otherChat, FirstName: "Bob"})
	url := f.Start()
	tb.Cleanup(f.Close)
	return f, url
}

// build is the connector as the tests run it, against the Bot API at
// env.Fake; mod may adjust Options.
func build(mod func(*Options)) e2e.NewFunc {
	return e2e.Build(New, func(env e2e.Env) Options {
		return Options{SDK: env.SDK, APIURL: env.Fake,
			PollTimeout: 2 * time.Second, EditInterval: 50 * time.Millisecond, MaxRetryWait: 3 * time.Second}
	}, mod)
}

// startConn serves the connector with data dir dir against the Bot API at
// apiURL on addr ("127.0.0.1:0" picks a port); its logs must never hold the
// bot token.
func startConn(t *testing.T, dir, apiURL, addr string, mod func(*Options)) *e2e.Conn {
	t.Helper()
	return e2e.Start(t, e2e.Config{APIKey: testKey, DataDir: dir, Addr: addr, Fake: apiURL, Secrets: e2e.Secrets{testToken}}, build(mod))
}

// waitSent waits until cond holds for what the bot posted in chat.
func waitSent(t *testing.T, f *telegramtest.Server, chat int64, what string, cond func([]telegramtest.Sent) bool) []telegramtest.Sent {
	t.Helper()
	return e2e.Await(t, what, func(ctx context.Context) ([]telegramtest.Sent, error) { return f.WaitSent(ctx, chat, cond) })
}

func telegramtestBot(id int64, username string) telegramtest.Bot {
	return telegramtest.Bot{ID: id, Username: username, FirstName: username}
}

// connectorOptions are SDK options for a connector that is built but not
// served.
func connectorOptions(t *testing.T) connector.Options {
	return connector.Options{DataDir: t.TempDir(), APIKey: testKey}
}

// signInMessage is the message of a failed sign-in.
func signInMessage(err error) string {
	var se *connectortest.SignInError
	if errors.As(err, &se) {
		return se.State.Message
	}
	return ""
}
