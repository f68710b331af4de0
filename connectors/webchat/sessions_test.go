package webchat

import (
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestSessionStoreBindAndLookup(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newSessionStore(2, time.Hour)
	s.bind("cookie-a", "192.0.2.1", "", "ch1", now)
	s.bind("cookie-a", "192.0.2.1", "lobby", "ch2", now)
	v, ok := s.get("cookie-a", now)
	if !ok || v.channelFor("") != "ch1" || v.channelFor("lobby") != "ch2" || v.channelFor("other") != "" {
		t.Fatalf("view %+v ok=%v", v, ok)
	}
	if _, ok := s.get("cookie-b", now); ok {
		t.Fatal("unknown cookie found")
	}
	// The store never holds the cookie itself.
	for k := range s.m {
		if k == "cookie-a" || k != sessionKey("cookie-a") {
			t.Fatalf("stored under %q", k)
		}
	}
	// TTL.
	if _, ok := s.get("cookie-a", now.Add(2*time.Hour)); ok {
		t.Fatal("expired session found")
	}
	if s.len() != 0 {
		t.Fatal("expired session kept")
	}
}

func TestSessionStoreBoundEvictsLRU(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newSessionStore(2, time.Hour)
	s.bind("a", "192.0.2.1", "", "ch", now)
	s.bind("b", "192.0.2.1", "", "ch", now.Add(time.Second))
	s.get("a", now.Add(2*time.Second)) // a is now the most recent
	s.bind("c", "192.0.2.1", "", "ch", now.Add(3*time.Second))
	if s.len() != 2 {
		t.Fatalf("len %d, want 2", s.len())
	}
	if _, ok := s.get("b", now.Add(4*time.Second)); ok {
		t.Fatal("least recently used session b not evicted")
	}
	if _, ok := s.get("a", now.Add(4*time.Second)); !ok {
		t.Fatal("session a evicted")
	}
}

func TestSessionStoreRestoreAndUnbind(t *testing.T) {
	now := time.Now()
	s := newSessionStore(0, 0)
	s.restore(sessionKey("c1"), "ch1", now)
	s.bind("c1", "192.0.2.1", "room", "ch2", now)
	s.unbindChannel("ch1")
	v, ok := s.get("c1", now)
	if !ok || v.home != "" || v.rooms["room"] != "ch2" {
		t.Fatalf("after unbind: %+v", v)
	}
	// Rooms per session are bounded.
	for i := range maxRoomsPerSession + 5 {
		s.bind("c1", "192.0.2.1", strings.Repeat("r", i+1), "chx", now)
	}
	v, _ = s.get("c1", now)
	if len(v.rooms) != maxRoomsPerSession {
		t.Fatalf("rooms %d, want %d", len(v.rooms), maxRoomsPerSession)
	}
}

// TestCookieNamePerInstance: two connectors a browser reaches on one host
// (cookies ignore the port) name their session cookies apart; one
// connector keeps its name across restarts.
func TestCookieNamePerInstance(t *testing.T) {
	a, _ := url.Parse("http://127.0.0.1:8080")
	b, _ := url.Parse("http://127.0.0.1:8090")
	na, nb := cookieNameFor(a, "/webchat"), cookieNameFor(b, "/webchat")
	if na == nb || na != cookieNameFor(a, "/webchat") || na == cookieNameFor(a, "/chat") {
		t.Fatalf("names %q, %q: want one per public URL and path, stable", na, nb)
	}
	if !strings.HasPrefix(na, CookiePrefix) || len(na) != len(CookiePrefix)+10 {
		t.Fatalf("name %q", na)
	}
}

func TestSessionCookieAttributes(t *testing.T) {
	c := sessionCookie("xconn_webchat_x", "v", "/webchat/", true, time.Hour)
	if c.Name != "xconn_webchat_x" || !c.HttpOnly || !c.Secure || c.SameSite != 2 /* http.SameSiteLaxMode */ || c.Path != "/webchat/" || c.MaxAge != 3600 {
		t.Fatalf("cookie %+v", c)
	}
}

func TestNormalizeRoom(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"lobby", "lobby", true},
		{" Lobby-2_x ", "lobby-2_x", true},
		{"", "", false},
		{"a b", "", false},
		{"../x", "", false},
		{"é", "", false},
		{strings.Repeat("a", MaxRoomNameLength), strings.Repeat("a", MaxRoomNameLength), true},
		{strings.Repeat("a", MaxRoomNameLength+1), "", false},
	}
	for _, tt := range tests {
		got, ok := normalizeRoom(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("normalizeRoom(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzNormalizeRoom(f *testing.F) {
	for _, s := range []string{"lobby", "A-b_c", "", "../../etc", "x/y", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, ok := normalizeRoom(in)
		if !ok {
			return
		}
		if len(got) == 0 || len(got) > MaxRoomNameLength || strings.ContainsAny(got, "/.?#% ") {
			t.Fatalf("normalizeRoom(%q) accepted %q", in, got)
		}
		if again, ok := normalizeRoom(got); !ok || again != got {
			t.Fatalf("not idempotent: %q -> %q", got, again)
		}
	})
}

func TestCleanFilename(t *testing.T) {
	tests := []struct{ in, want string }{
		{"photo.png", "photo.png"},
		{"C:\\Users\\me\\photo.png", "photo.png"},
		{"../../etc/passwd", "passwd"},
		{"a\x00b\nc", "abc"},
		{"", "file"},
		{"..", "file"},
		{"dir/", "file"},
		{strings.Repeat("é", 150), strings.Repeat("é", 100)},
	}
	for _, tt := range tests {
		if got := cleanFilename(tt.in); got != tt.want {
			t.Errorf("cleanFilename(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzCleanFilename(f *testing.F) {
	for _, s := range []string{"a.png", "../x", "a\\b", "\x7f", strings.Repeat("ü", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := cleanFilename(in)
		if got == "" || got == "." || got == ".." || len(got) > 200 || strings.ContainsAny(got, "/\\\x00\n\r") {
			t.Fatalf("cleanFilename(%q) = %q", in, got)
		}
		if utf8.ValidString(in) && !utf8.ValidString(got) {
			t.Fatalf("cleanFilename(%q) broke UTF-8: %q", in, got)
		}
	})
}

func TestAttemptLimiter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newAttemptLimiter(3, time.Minute, 2)
	for range 3 {
		if !l.allow("r", now) {
			t.Fatal("refused before the limit")
		}
		l.fail("r", now)
	}
	if l.allow("r", now.Add(30*time.Second)) {
		t.Fatal("allowed after 3 failures in the window")
	}
	if !l.allow("r", now.Add(time.Minute)) {
		t.Fatal("refused after the window")
	}
	// Bounded keys.
	l.fail("a", now)
	l.fail("b", now)
	l.fail("c", now)
	if len(l.m) > 2 {
		t.Fatalf("limiter holds %d keys, bound 2", len(l.m))
	}
}
