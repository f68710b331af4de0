package wecom

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/wecom/wecomtest"
)

const (
	testKey    = "wecom-test-key-5c1d9e7f3a2b40"
	testCorp   = "ww1234567890abcdef"
	testAgent  = 1000002
	testSecret = "appSecretValue-0123456789abcdefABCDEF"
	testToken  = "cbTokenValue7f3e9a"
	testAESKey = "9T0FrYOvxjCR7cbG8TZdWL5Z/T08eojsNfBCdjsxrbo"
	testUser   = "alice"
	wait       = e2e.Wait
)

var login = map[string]string{"corp_id": testCorp, "agent_id": strconv.Itoa(testAgent), "secret": testSecret,
	"token": testToken, "encoding_aes_key": testAESKey}

// secrets are the sign-in's secret values: none may leak.
var secrets = e2e.Secrets{testSecret, testToken, testAESKey}

func callbackPath() string { return CallbackPrefix + testCorp + "/" + strconv.Itoa(testAgent) }

// newFake starts the fake WeCom with the test application, its callbacks
// going to connURL.
func newFake(tb testing.TB, connURL string) (*wecomtest.Server, string) {
	tb.Helper()
	f := wecomtest.New()
	f.AddApp(wecomtest.App{CorpID: testCorp, AgentID: testAgent, Secret: testSecret, Token: testToken,
		EncodingAESKey: testAESKey, CallbackURL: connURL + callbackPath()})
	f.SetRetryDelay(50 * time.Millisecond)
	u := f.Start()
	tb.Cleanup(f.Close)
	return f, u
}

type conn struct {
	*e2e.Conn
	c *Connector
}

// build is the connector as the tests run it against the fake at
// env.Fake; mod may adjust Options and got receives each connector built.
func build(mod func(*Options), got func(*Connector)) e2e.NewFunc {
	newConn := func(o Options) (*Connector, error) {
		c, err := New(o)
		if err == nil && got != nil {
			got(c)
		}
		return c, err
	}
	return e2e.Build(newConn, func(env e2e.Env) Options {
		return Options{SDK: env.SDK, APIURL: env.Fake, WSURL: wsURL(env.Fake), EditInterval: 20 * time.Millisecond,
			MaxRetryWait: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	}, mod)
}

// wsURL is the fake's robot endpoint for its base URL.
func wsURL(base string) string {
	if len(base) > 4 && base[:4] == "http" {
		return "ws" + base[4:] + wecomtest.BotPath
	}
	return base
}

// startConn serves the connector with data dir dir against the fake at
// apiURL on addr.
func startConn(t *testing.T, dir, apiURL, addr string, mod func(*Options)) *conn {
	t.Helper()
	cn := &conn{}
	cn.Conn = e2e.Start(t, e2e.Config{APIKey: testKey, DataDir: dir, Addr: addr, Fake: apiURL, Secrets: secrets},
		build(mod, func(c *Connector) { cn.c = c }))
	return cn
}

// startConnTB serves the connector for a benchmark.
func startConnTB(tb testing.TB, dir, apiURL string) *e2e.Conn {
	tb.Helper()
	return e2e.Start(tb, e2e.Config{APIKey: testKey, DataDir: dir, Addr: "127.0.0.1:0", Fake: apiURL, Secrets: secrets}, build(nil, nil))
}

func waitSent(t *testing.T, f *wecomtest.Server, user, what string, cond func([]wecomtest.Sent) bool) []wecomtest.Sent {
	t.Helper()
	return e2e.Await(t, what, func(ctx context.Context) ([]wecomtest.Sent, error) { return f.WaitSent(ctx, user, cond) })
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}
