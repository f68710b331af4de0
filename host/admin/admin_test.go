package admin

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

func TestNewRefusesWeakTokens(t *testing.T) {
	h := &host.Host{}
	for name, tok := range map[string]string{"empty": "", "short": "fifteen-chars-x", "spaces": " sixteen-chars-xx "} {
		if _, err := New(Options{Host: h, Token: tok}); err == nil {
			t.Errorf("%s token accepted", name)
		} else if tok != "" && strings.Contains(err.Error(), tok) {
			t.Errorf("%s: the error quotes the token: %v", name, err)
		}
	}
	if _, err := New(Options{Token: testToken}); err == nil {
		t.Error("no host accepted")
	}
}

// TestAuth: every route but the login form and the static files needs
// the token, as a bearer credential or the login cookie.
func TestAuth(t *testing.T) {
	r := newRig(t, nil)
	valid := r.admin.sessionValue(time.Now().Add(time.Hour))
	for _, tc := range []struct {
		name, path string
		h          http.Header
		want       int
	}{
		{"no token", "/api/state", nil, http.StatusUnauthorized},
		{"no token, events", "/api/events", nil, http.StatusUnauthorized},
		{"no token, page (API client)", "/", nil, http.StatusUnauthorized},
		{"no token, page (browser)", "/", http.Header{"Accept": {"text/html"}}, http.StatusSeeOther},
		{"wrong token", "/api/state", bearer(testToken + "x"), http.StatusUnauthorized},
		{"token prefix", "/api/state", bearer(testToken[:16]), http.StatusUnauthorized},
		{"wrong scheme", "/api/state", http.Header{"Authorization": {"Basic " + testToken}}, http.StatusUnauthorized},
		{"wrong token with a valid cookie", "/api/state", http.Header{"Authorization": {"Bearer nope-nope-nope-nope"}, "Cookie": {cookieName + "=" + valid}}, http.StatusUnauthorized},
		{"forged cookie", "/api/state", http.Header{"Cookie": {cookieName + "=9999999999.AAAA"}}, http.StatusUnauthorized},
		{"expired cookie", "/api/state", http.Header{"Cookie": {cookieName + "=" + r.admin.sessionValue(time.Now().Add(-time.Second))}}, http.StatusUnauthorized},
		{"cookie beyond its lifetime", "/api/state", http.Header{"Cookie": {cookieName + "=" + r.admin.sessionValue(time.Now().Add(30*24*time.Hour))}}, http.StatusUnauthorized},
		{"bearer", "/api/state", bearer(testToken), http.StatusOK},
		{"bearer, page", "/", bearer(testToken), http.StatusOK},
		{"cookie", "/api/state", http.Header{"Cookie": {cookieName + "=" + valid}}, http.StatusOK},
		{"login form", "/login", nil, http.StatusOK},
		{"static", "/static/admin.css", nil, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, hdr := r.get(tc.path, tc.h)
			if code != tc.want {
				t.Fatalf("GET %s: %d, want %d: %.200s", tc.path, code, tc.want, body)
			}
			if code == http.StatusUnauthorized && (strings.Contains(body, webchat.CardID) || hdr.Get("WWW-Authenticate") == "") {
				t.Fatalf("a refusal shows state or lacks WWW-Authenticate: %.200s", body)
			}
			if hdr.Get("Content-Security-Policy") == "" || hdr.Get("Cache-Control") != "no-store" {
				t.Fatalf("headers %v", hdr)
			}
		})
	}
}

// TestLoginCookie: the login form sets an HttpOnly, SameSite=Strict
// cookie that opens the page; a wrong token or a cross-site post does not.
func TestLoginCookie(t *testing.T) {
	r := newRig(t, nil)
	post := func(token string, h http.Header) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, r.url+"/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range h {
			req.Header[k] = v
		}
		c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := post("wrong-token-wrong-token", nil); res.StatusCode != http.StatusUnauthorized || len(res.Cookies()) != 0 {
		t.Fatalf("wrong token: %s, cookies %v", res.Status, res.Cookies())
	}
	if res := post(testToken, http.Header{"Origin": {"https://evil.example"}}); res.StatusCode != http.StatusForbidden || len(res.Cookies()) != 0 {
		t.Fatalf("cross-site login: %s", res.Status)
	}
	if res := post(testToken, http.Header{"Sec-Fetch-Site": {"cross-site"}}); res.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-site login (fetch metadata): %s", res.Status)
	}
	res := post(testToken, http.Header{"Origin": {r.url}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		t.Fatalf("login: %s to %q", res.Status, res.Header.Get("Location"))
	}
	var c *http.Cookie
	for _, ck := range res.Cookies() {
		if ck.Name == cookieName {
			c = ck
		}
	}
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.MaxAge <= 0 {
		t.Fatalf("session cookie %+v", c)
	}
	if strings.Contains(c.Value, testToken) {
		t.Fatal("the cookie holds the token")
	}
	if code, body, _ := r.get("/", http.Header{"Cookie": {c.Name + "=" + c.Value}}); code != http.StatusOK || !strings.Contains(body, webchat.CardID) {
		t.Fatalf("page with the cookie: %d", code)
	}
	// Another token (a restart with a new file) ends the session.
	other, err := New(Options{Host: r.host, Token: testToken + "-rotated"})
	if err != nil {
		t.Fatal(err)
	}
	if other.sessionOK(c.Value, time.Now()) {
		t.Fatal("a session of the old token is valid under the new one")
	}
}

// TestPageShowsState: the page and /api/state show the connector, a
// signed-in channel with its last message times, a QR sign-in waiting
// with its image, and the outbox; and none of the rig's secrets.
func TestPageShowsState(t *testing.T) {
	r := newRig(t, nil)
	uc := r.room("ann", "lobby")
	r.qr("bob")
	var s Snapshot
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body, _ := r.get("/api/state", bearer(testToken))
		if code != http.StatusOK {
			t.Fatalf("state: %d", code)
		}
		noSecrets(t, "/api/state", body)
		s = Snapshot{}
		if err := json.Unmarshal([]byte(body), &s); err != nil {
			t.Fatal(err)
		}
		if ch := find(s, uc.ID); ch != nil && !ch.LastIn.IsZero() && !ch.LastOut.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no message times on the channel: %+v", s.Channels)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(s.Connectors) != 1 || s.Connectors[0].CardID != webchat.CardID || s.Connectors[0].Health == "" ||
		s.Connectors[0].Link != string(host.LinkOnline) || s.Connectors[0].Version == "" || s.Connectors[0].Name == "" {
		t.Fatalf("connectors %+v", s.Connectors)
	}
	if ch := find(s, uc.ID); ch.State != StateSignedIn || ch.UserID != "ann" || ch.Status != protocol.StatusConnected {
		t.Fatalf("room channel %+v", ch)
	}
	var waiting *ChannelView
	for i := range s.Channels {
		if s.Channels[i].UserID == "bob" {
			waiting = &s.Channels[i]
		}
	}
	if waiting == nil || waiting.State != StateWaitingQR || !strings.HasPrefix(waiting.QRImage, "data:image/png;base64,") || waiting.ID != "" {
		t.Fatalf("QR sign-in %+v", waiting)
	}
	code, page, _ := r.get("/", bearer(testToken))
	if code != http.StatusOK {
		t.Fatalf("page: %d", code)
	}
	noSecrets(t, "the page", page)
	for _, want := range []string{StateSignedIn, StateWaitingQR, `<img src="data:image/png;base64,`, webchat.CardID, "health ok", "v0.test", "lobby"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

func find(s Snapshot, id string) *ChannelView {
	for i := range s.Channels {
		if s.Channels[i].ID == id {
			return &s.Channels[i]
		}
	}
	return nil
}

// TestChannelStates: how a stored channel's Descriptor status shows.
func TestChannelStates(t *testing.T) {
	r := newRig(t, nil)
	for _, tc := range []struct {
		status string
		auth   bool
		want   string
	}{
		{protocol.StatusConnected, true, StateSignedIn},
		{protocol.StatusExpired, false, StateExpired},
		{protocol.StatusRevoked, false, StateRevoked},
		{protocol.StatusConnected, false, StateSignedOut},
		{protocol.StatusDegraded, true, "degraded"},
	} {
		d, _ := json.Marshal(protocol.Descriptor{Connection: protocol.Connection{Status: tc.status}, Target: protocol.DescriptorTarget{DisplayName: "L"}})
		v := r.admin.channelView(context.Background(), store.UserChannel{ID: "uc_x", CardID: webchat.CardID, ChannelID: "cch_x", Authenticated: tc.auth, Descriptor: d})
		if v.State != tc.want || v.Label != "L" {
			t.Errorf("status %s authenticated %v: state %q, want %q", tc.status, tc.auth, v.State, tc.want)
		}
	}
}

// TestErrorsRedactedBounded: recorded errors are scrubbed, cut, bounded
// and newest first; host events that report failures are recorded.
func TestErrorsRedactedBounded(t *testing.T) {
	r := newRig(t, func(o *Options) { o.MaxErrors = 3 })
	r.admin.RecordError("test", "first "+testAPIKey)
	r.admin.RecordError("test", strings.Repeat("é", 400))
	r.admin.OnEvent(host.Event{Kind: host.EventLink, CardID: webchat.CardID, Link: host.LinkBackoff, Detail: "dial: refused"})
	r.admin.OnEvent(host.Event{Kind: host.EventHealth, CardID: webchat.CardID, Health: host.HealthOK})      // not an error
	r.admin.OnEvent(host.Event{Kind: host.EventDelivery, UserChannelID: "uc", Detail: "amsg_1 delivered "}) // not an error
	r.admin.RecordError("test", "last")
	s := r.admin.Snapshot(context.Background())
	if len(s.Errors) != 3 || s.Errors[0].Text != "last" || !strings.HasPrefix(s.Errors[1].Text, "data plane backoff") {
		t.Fatalf("errors %+v", s.Errors)
	}
	if l := len(s.Errors[2].Text); l > maxErrorText+len("…") || !strings.HasSuffix(s.Errors[2].Text, "…") {
		t.Fatalf("long error not cut: %d bytes", l)
	}
	r2 := newRig(t, nil)
	r2.admin.RecordError("test", "key "+testAPIKey+" in an error")
	_, body, _ := r2.get("/api/state", bearer(testToken))
	noSecrets(t, "errors", body)
	if !strings.Contains(body, "key [redacted] in an error") {
		t.Fatalf("the redacted error is missing: %s", body)
	}
}

// stream opens the event stream with the token.
func (r *rig) stream(ctx context.Context) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.url+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	return http.DefaultClient.Do(req)
}

// nextState reads the stream until an event "state" and returns its data.
func nextState(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	var data strings.Builder
	var isState bool
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "event: state":
			isState = true
		case strings.HasPrefix(line, "data: ") && isState:
			data.WriteString(strings.TrimPrefix(line, "data: ") + "\n")
		case line == "" && isState:
			return data.String()
		}
	}
}

// TestEventsLive: the stream sends the page's state at once and again when
// the host changes (a QR sign-in starts), without secrets; streams beyond
// MaxClients are refused, and closing the page ends the open ones.
func TestEventsLive(t *testing.T) {
	r := newRig(t, func(o *Options) { o.MaxClients = 1 })
	r.room("cy", "lobby")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := r.stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %s %s", res.Status, res.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(res.Body)
	first := nextState(t, br)
	noSecrets(t, "the stream", first)
	if !strings.Contains(first, StateSignedIn) || strings.Contains(first, StateWaitingQR) {
		t.Fatalf("first state:\n%s", first)
	}
	if second, err := r.stream(ctx); err != nil || second.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a second stream beyond MaxClients: %v %v", second.Status, err)
	} else {
		second.Body.Close()
	}
	r.qr("dee")
	for {
		st := nextState(t, br)
		noSecrets(t, "the stream", st)
		if strings.Contains(st, StateWaitingQR) && strings.Contains(st, "data:image/png;base64,") {
			break
		}
	}
	r.admin.Close() // the stream ends
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := br.ReadString('\n'); err != nil {
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end when the page closed")
	}
}

func TestServerTimeouts(t *testing.T) {
	a := &Admin{}
	s := a.Server()
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout <= 0 || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 {
		t.Fatalf("server without a timeout: %+v", s)
	}
}

func TestSSEFraming(t *testing.T) {
	got := string(sseEvent("state", []byte("<p>a</p>\r\n<p>b</p>")))
	if got != "event: state\ndata: <p>a</p>\ndata: <p>b</p>\n\n" {
		t.Fatalf("%q", got)
	}
}
