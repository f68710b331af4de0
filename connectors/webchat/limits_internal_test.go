package webchat

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
)

func newTestConnector(t *testing.T) *Connector {
	t.Helper()
	c, err := New(Options{SDK: connector.Options{DataDir: t.TempDir()}, PublicURL: "http://127.0.0.1:8080"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// postCode posts an access code for room from client address ip.
func postCode(c *Connector, ip, room, code string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/webchat/rooms/"+room,
		strings.NewReader(url.Values{"access_code": {code}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.RemoteAddr = ip + ":40000"
	rec := httptest.NewRecorder()
	c.WebHandler().ServeHTTP(rec, r)
	return rec
}

// A stranger's wrong codes lock out the stranger, not the room's users
// (issue 20, item 7: the limiter was per room only).
func TestWrongCodesLockOutOnlyTheirClient(t *testing.T) {
	c := newTestConnector(t)
	for i := range DefaultMaxCodeFailures {
		if rec := postCode(c, "198.51.100.7", "lobby", "guess"); rec.Code != http.StatusForbidden {
			t.Fatalf("attempt %d: %d", i, rec.Code)
		}
	}
	if rec := postCode(c, "198.51.100.7", "lobby", "guess"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("stranger after %d failures: %d, want 429", DefaultMaxCodeFailures, rec.Code)
	}
	if rec := postCode(c, "203.0.113.9", "lobby", "the-real-code"); rec.Code == http.StatusTooManyRequests {
		t.Fatal("another client is locked out by the stranger's wrong codes")
	}
	// A client spreading guesses over many rooms is stopped too.
	for i := range DefaultMaxClientCodeFailures {
		postCode(c, "192.0.2.44", "room-"+strings.Repeat("x", i%50+1), "guess")
	}
	if rec := postCode(c, "192.0.2.44", "fresh-room", "guess"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("client over all rooms: %d, want 429", rec.Code)
	}
}

// An unknown room answers exactly as a wrong code for an open one does
// (issue 20, item 7: room names could be enumerated, 200 vs 404).
func TestRoomNamesNotEnumerable(t *testing.T) {
	c := newTestConnector(t)
	get := httptest.NewRecorder()
	c.WebHandler().ServeHTTP(get, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080/webchat/rooms/nowhere", nil))
	if get.Code != http.StatusOK || !strings.Contains(get.Body.String(), `name="access_code"`) {
		t.Fatalf("GET unknown room: %d", get.Code)
	}
	rec := postCode(c, "192.0.2.1", "nowhere", "guess")
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "That access code is not right.") {
		t.Fatalf("POST unknown room: %d %s", rec.Code, rec.Body)
	}
}

// One client creating sessions without end evicts only its own (issue 20,
// item 7: a global LRU let one code holder evict every other browser).
func TestSessionsFairPerClient(t *testing.T) {
	now := time.Now()
	s := newSessionStore(20, time.Hour)
	s.maxPerClient = 5
	s.bind("victim", "203.0.113.9", "lobby", "ch1", now)
	for i := range 500 {
		s.bind(fmt.Sprint("attacker-", i), "198.51.100.7", "lobby", "ch1", now.Add(time.Duration(i+1)*time.Millisecond))
	}
	if _, ok := s.get("victim", now.Add(time.Second)); !ok {
		t.Fatal("another client's session was evicted")
	}
	if got := s.byClient["198.51.100.7"].Len(); got != 5 {
		t.Fatalf("attacker holds %d sessions, want 5", got)
	}
	if s.len() != 6 || len(s.m) != s.lru.Len() {
		t.Fatalf("sessions %d (lru %d), want 6", s.len(), s.lru.Len())
	}
}

// One client cannot take every event stream, nor one chat (issue 20,
// item 7: a global cap of 1,000 for everyone).
func TestStreamsFairPerClientAndChannel(t *testing.T) {
	h := newHub(0, 100, 0, 0)
	var subs []*subscriber
	for {
		s, err := h.subscribe("room-ch", "198.51.100.7")
		if err != nil {
			break
		}
		subs = append(subs, s)
	}
	if len(subs) != DefaultMaxStreamsPerClient {
		t.Fatalf("one client opened %d streams, want %d", len(subs), DefaultMaxStreamsPerClient)
	}
	if s, err := h.subscribe("room-ch", "203.0.113.9"); err != nil {
		t.Fatalf("another client refused: %v", err)
	} else {
		subs = append(subs, s)
	}
	for i := 0; len(h.subs["room-ch"]) < DefaultMaxStreamsPerChannel; i++ {
		s, err := h.subscribe("room-ch", fmt.Sprint("192.0.2.", i))
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	if _, err := h.subscribe("room-ch", "192.0.2.250"); err != errTooManyClients {
		t.Fatalf("stream %d of one chat: %v", DefaultMaxStreamsPerChannel+1, err)
	}
	if s, err := h.subscribe("other-ch", "192.0.2.251"); err != nil {
		t.Fatalf("another chat refused: %v", err)
	} else {
		h.unsubscribe(s)
	}
	for _, s := range subs {
		h.unsubscribe(s)
	}
	if h.nsubs != 0 || len(h.byClient) != 0 {
		t.Fatalf("after unsubscribe: %d streams, %d clients", h.nsubs, len(h.byClient))
	}
}

// A session's uploads are bounded per window (issue 20, item 7: 20 posts
// of 10 MiB in 1.6 s).
func TestUploadQuotaPerSession(t *testing.T) {
	now := time.Now()
	s := newSessionStore(0, 0)
	s.quota = 25 << 20
	s.bind("a", "192.0.2.1", "", "ch", now)
	s.bind("b", "192.0.2.1", "", "ch", now)
	for i := range 2 {
		if !s.spend("a", 10<<20, now) {
			t.Fatalf("post %d refused", i)
		}
	}
	if s.spend("a", 10<<20, now.Add(time.Second)) {
		t.Fatal("third 10 MiB post within the window allowed")
	}
	if !s.spend("b", 10<<20, now) {
		t.Fatal("another session charged for a's uploads")
	}
	if !s.spend("a", 10<<20, now.Add(DefaultUploadQuotaWindow)) {
		t.Fatal("refused after the window")
	}
	if s.spend("unknown", 1, now) {
		t.Fatal("an unknown session may post")
	}
}
