package wechat_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/wechat"
	"github.com/xconn/xconn/connectors/wechat/wechattest"
	"github.com/xconn/xconn/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	apiKey = "wechat-test-api-key-0123456789"
	wait   = e2e.Wait
)

// rig is a fake iLink server and the connector pointed at it.
type rig struct {
	*e2e.Conn
	t    *testing.T
	fake *wechattest.Server
}

// startFake starts a fake iLink server (long polls of 500 ms unless fo
// says otherwise), closed when tb ends.
func startFake(tb testing.TB, fo wechattest.Options) *wechattest.Server {
	tb.Helper()
	if fo.LongPoll == 0 {
		fo.LongPoll = 500 * time.Millisecond
	}
	fake, err := wechattest.Start(fo)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(fake.Close)
	return fake
}

// fakeAddr is Env.Fake for a fake: its API and CDN base URLs.
func fakeAddr(f *wechattest.Server) string { return f.URL + " " + f.CDNURL }

// build is the connector as the tests run it, against the fake whose
// API and CDN URLs env.Fake holds; mod may adjust Options.
func build(mod func(*wechat.Options)) e2e.NewFunc {
	return e2e.Build(wechat.New, func(env e2e.Env) wechat.Options {
		api, cdn, _ := strings.Cut(env.Fake, " ")
		env.SDK.AckTimeout = 2 * time.Second
		return wechat.Options{SDK: env.SDK, APIURL: api, CDNURL: cdn, QRPollInterval: 50 * time.Millisecond,
			RetryDelay: 50 * time.Millisecond, RetryBackoff: 200 * time.Millisecond, TypingInterval: 100 * time.Millisecond,
			HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	}, mod)
}

func newRig(t *testing.T, fo wechattest.Options, mod func(*wechat.Options)) *rig {
	t.Helper()
	r := &rig{t: t, fake: startFake(t, fo)}
	r.Conn = e2e.Start(t, e2e.Config{APIKey: apiKey, Fake: fakeAddr(r.fake)}, build(mod)) // logs shown on failure
	return r
}

// open opens a new channel on c.
func (r *rig) open(c *e2e.Client) string {
	r.t.Helper()
	ack, err := c.Open(r.t.Context(), "")
	if err != nil {
		r.t.Fatal(err)
	}
	return ack.ConnectorChannelID
}

// signIn signs a new channel in by opening the QR URL.
func (r *rig) signIn(c *e2e.Client) (string, *protocol.AuthStatePayload) {
	r.t.Helper()
	ch := r.open(c)
	st, err := c.SignInQR(r.t.Context(), ch, wechat.FlowQR, e2e.OpenURL)
	if err != nil {
		r.t.Fatalf("sign-in: %v", err)
	}
	return ch, st
}

// say sends an assistant final to the connector and returns its ack.
func say(c *e2e.Client, ch, id, text string, files ...protocol.ChatFile) protocol.ChatAckPayload {
	return c.Final(ch, protocol.ChatMessagePayload{MessageID: id, Text: text, Files: files})
}

// noViolations requires that the fake saw only well-formed requests.
func (r *rig) noViolations() {
	r.t.Helper()
	if v := r.fake.Violations(); len(v) > 0 {
		r.t.Fatalf("the fake saw requests that break the fact sheet:\n%s", strings.Join(v, "\n"))
	}
}
