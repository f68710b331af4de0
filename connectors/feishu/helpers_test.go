package feishu

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/feishu/feishutest"
)

const (
	testKey    = "feishu-test-key-3b9e1c7a5d20f4"
	testApp    = "cli_a1b2c3d4e5f6a7b8"
	testSecret = "s3cretAppSecretValue0123456789ab"
	testChat   = "oc_p2p_alice"
	groupChat  = "oc_group_team"
	wait       = e2e.Wait
)

var login = map[string]string{"app_id": testApp, "app_secret": testSecret}

func newFake(tb testing.TB) (*feishutest.Server, string) {
	tb.Helper()
	f := feishutest.New()
	f.AddApp(testApp, testSecret)
	u := f.Start()
	tb.Cleanup(f.Close)
	return f, u
}

// conn is the connector under test; c is the current one (a new one after
// a restart).
type conn struct {
	*e2e.Conn
	c *Connector
}

// build is the connector as the tests run it, against the fake at
// env.Fake (open platform and accounts host); mod may adjust Options and
// got, when set, receives each connector built.
func build(mod func(*Options), got func(*Connector)) e2e.NewFunc {
	newConn := func(o Options) (*Connector, error) {
		c, err := New(o)
		if err == nil && got != nil {
			got(c)
		}
		return c, err
	}
	return e2e.Build(newConn, func(env e2e.Env) Options {
		return Options{SDK: env.SDK, APIURL: env.Fake, AccountsURL: env.Fake, EditInterval: 20 * time.Millisecond,
			MaxRetryWait: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	}, mod)
}

// startConn serves the connector with data dir dir against the fake at
// apiURL on addr; its logs must never hold the app secret.
func startConn(t *testing.T, dir, apiURL, addr string, mod func(*Options)) *conn {
	t.Helper()
	cn := &conn{}
	t.Cleanup(func() { // after the connector stopped
		if cn.Conn == nil {
			return
		}
		if logs := cn.Logs.String(); strings.Contains(logs, "t-") && strings.Contains(logs, "tenant_access_token") {
			t.Errorf("a tenant token may be in the logs")
		}
	})
	cn.Conn = e2e.Start(t, e2e.Config{APIKey: testKey, DataDir: dir, Addr: addr, Fake: apiURL, Secrets: e2e.Secrets{testSecret}},
		build(mod, func(c *Connector) { cn.c = c }))
	return cn
}

// waitSent waits until cond holds for what the bot sent in chat.
func waitSent(t *testing.T, f *feishutest.Server, chat, what string, cond func([]feishutest.Sent) bool) []feishutest.Sent {
	t.Helper()
	return e2e.Await(t, what, func(ctx context.Context) ([]feishutest.Sent, error) { return f.WaitSent(ctx, chat, cond) })
}

// say makes alice write text to the bot directly.
func say(t *testing.T, f *feishutest.Server, text string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	id, err := f.SendText(ctx, testApp, testChat, text)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
