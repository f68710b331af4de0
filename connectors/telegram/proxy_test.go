package telegram

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/xconn/xconn/protocol"
)

// TestProxy: with Options.Proxy every Bot API request goes through that
// HTTP proxy (sign-in, polling, sending).
func TestProxy(t *testing.T) {
	f, api := newFake(t)
	var proxied atomic.Int32
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		out := r.Clone(r.Context())
		out.RequestURI = ""
		res, err := tr.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		io.Copy(w, res.Body)
	}))
	defer proxy.Close()
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", func(o *Options) { o.Proxy = proxy.URL })
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowBot, login)
	if a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "via-proxy", Text: "through the proxy"}); a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", a)
	}
	if n := len(f.Sent(testChat)); n != 1 {
		t.Fatalf("%d messages", n)
	}
	if proxied.Load() < 4 { // getMe, getWebhookInfo, getChat, getMe, sendMessage
		t.Fatalf("%d requests through the proxy", proxied.Load())
	}
	cl.Close()
	cn.Stop()
}
