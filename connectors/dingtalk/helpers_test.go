package dingtalk

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/dingtalk/dingtalktest"
)

const (
	testKey      = "dingtalk-test-key-7c2e9a1b4d6f80"
	testClient   = "dingtestappkey0001"
	testSecret   = "Dk7s3cretClientSecretValue0123456789"
	testTemplate = "382e4302-551d-4880-bf29-a30acfab2e71.schema"
	aliceConv    = "cid-alice"
	groupConv    = "cidGroupTeam=="
	wait         = e2e.Wait
)

var login = map[string]string{"client_id": testClient, "client_secret": testSecret}

func newFake(tb testing.TB) (*dingtalktest.Server, string) {
	tb.Helper()
	f := dingtalktest.New()
	f.AddApp(dingtalktest.App{ClientID: testClient, ClientSecret: testSecret})
	u := f.Start()
	tb.Cleanup(f.Close)
	return f, u
}

// build is the connector as the tests run it, against the fake at
// env.Fake (both hosts); mod may adjust Options.
func build(mod func(*Options)) e2e.NewFunc {
	return e2e.Build(New, func(env e2e.Env) Options {
		return Options{SDK: env.SDK, APIURL: env.Fake, OAPIURL: env.Fake, EditInterval: 20 * time.Millisecond,
			MaxRetryWait: 3 * time.Second, PingInterval: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	}, mod)
}

// withCards streams replies into AI cards.
func withCards(o *Options) { o.CardTemplateID = testTemplate }

// startConn serves the connector with data dir dir against the fake at
// apiURL on addr; its logs must never hold the client secret.
func startConn(t *testing.T, dir, apiURL, addr string, mod func(*Options)) *e2e.Conn {
	t.Helper()
	return e2e.Start(t, e2e.Config{APIKey: testKey, DataDir: dir, Addr: addr, Fake: apiURL, Secrets: e2e.Secrets{testSecret}}, build(mod))
}

// waitSent waits until cond holds for what the robot sent in conv.
func waitSent(t *testing.T, f *dingtalktest.Server, conv, what string, cond func([]dingtalktest.Sent) bool) []dingtalktest.Sent {
	t.Helper()
	return e2e.Await(t, what, func(ctx context.Context) ([]dingtalktest.Sent, error) { return f.WaitSent(ctx, conv, cond) })
}

// say pushes m (alice 1:1 by default) once the app is connected and
// returns its msgId; the connector must ack it 200.
func say(t *testing.T, f *dingtalktest.Server, m dingtalktest.Message) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	m.ClientID = testClient
	if err := f.WaitConnected(ctx, testClient); err != nil {
		t.Fatal(err)
	}
	id, resp, err := f.Say(ctx, m)
	if err != nil || resp.Code != http.StatusOK {
		t.Fatalf("say %q: %+v %v", m.Text, resp, err)
	}
	return id
}

func texts(s []dingtalktest.Sent) []string {
	out := make([]string, 0, len(s))
	for _, m := range s {
		out = append(out, m.Text)
	}
	return out
}
