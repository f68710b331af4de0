package webchat

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// MaxRoomNameLength bounds a room name.
const MaxRoomNameLength = 64

// normalizeRoom lower-cases a room name and checks it: 1 to 64 of a-z,
// 0-9, '-' and '_'.
func normalizeRoom(room string) (string, bool) {
	room = strings.ToLower(strings.TrimSpace(room))
	if room == "" || len(room) > MaxRoomNameLength {
		return "", false
	}
	for _, c := range room {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "", false
		}
	}
	return room, true
}

// roomPage serves GET <base>/rooms/<room>: the room's chat for a browser
// that entered the access code, else the access code form. The form is
// shown for every well-formed room name, open or not, so that room names
// cannot be probed.
func (c *Connector) roomPage(rw http.ResponseWriter, r *http.Request) {
	room, ok := normalizeRoom(r.PathValue("room"))
	if !ok {
		c.render(rw, c.pages.notice, http.StatusNotFound, pageData{Title: "Web Chat", Error: "That is not a room name."})
		return
	}
	if s, ok := c.session(r); ok && s.rooms[room] != "" {
		c.render(rw, c.pages.chat, http.StatusOK, pageData{Title: "Room " + room, Room: room, SignedIn: true})
		return
	}
	c.render(rw, c.pages.room, http.StatusOK, pageData{Title: "Room " + room, Room: room})
}

// roomEnter serves POST <base>/rooms/<room> with form field access_code.
// The code is compared in constant time (enterRoom) and never echoed. A
// room that is not open gets the same answer as a wrong code, so that room
// names cannot be probed. Failures are limited per client address and
// room, and per client address, so that a stranger's wrong codes never
// lock the room's users out.
func (c *Connector) roomEnter(rw http.ResponseWriter, r *http.Request) {
	room, ok := normalizeRoom(r.PathValue("room"))
	if !ok {
		c.render(rw, c.pages.notice, http.StatusNotFound, pageData{Title: "Web Chat", Error: "That is not a room name."})
		return
	}
	if !c.sameOrigin(r) {
		c.render(rw, c.pages.notice, http.StatusForbidden, pageData{Title: "Web Chat", Error: "Cross-site request refused."})
		return
	}
	r.Body = http.MaxBytesReader(rw, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		c.render(rw, c.pages.room, http.StatusBadRequest, pageData{Title: "Room " + room, Room: room, Error: "The form could not be read."})
		return
	}
	client := clientAddr(r)
	roomKey, clientKey := "room\x00"+room+"\x00"+client, "client\x00"+client
	now := time.Now()
	if !c.limiter.allow(roomKey, now) || !c.clientLimiter.allow(clientKey, now) {
		c.render(rw, c.pages.room, http.StatusTooManyRequests, pageData{Title: "Room " + room, Room: room, Error: "Too many wrong codes. Wait a minute and try again."})
		return
	}
	channel, err := c.enterRoom(room, r.PostFormValue("access_code"))
	switch {
	case errors.Is(err, errNoRoom), errors.Is(err, errWrongCode):
		c.log.Warn("webchat: wrong room access code", "room", room, "client", client)
		lockRoom := c.limiter.fail(roomKey, now)
		if c.clientLimiter.fail(clientKey, now) || lockRoom {
			c.log.Warn("webchat: client locked out of room entry for a while", "room", room, "client", client,
				"window", c.limiter.window)
		}
		c.render(rw, c.pages.room, http.StatusForbidden, pageData{Title: "Room " + room, Room: room, Error: "That access code is not right."})
		return
	case err != nil:
		c.log.Warn("webchat: enter room", "room", room, "error", err)
		c.render(rw, c.pages.notice, http.StatusServiceUnavailable, pageData{Title: "Web Chat", Error: "The room cannot be entered right now."})
		return
	}
	c.bindSession(rw, r, c.cookieID(r), room, channel)
	http.Redirect(rw, r, c.base+"/rooms/"+room, http.StatusSeeOther)
}

// clientAddr is the client's address as the listener saw it (the IP
// without the port). Behind a reverse proxy every client shares the
// proxy's address, and the per-client limits apply to them together.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Defaults of the access-code attempt limiter.
const (
	// DefaultMaxCodeFailures is the number of wrong access codes one
	// client address may enter for one room per window before its
	// attempts at that room are refused until the window ends.
	DefaultMaxCodeFailures = 10
	// DefaultMaxClientCodeFailures is the number of wrong access codes
	// one client address may enter over all rooms per window.
	DefaultMaxClientCodeFailures = 30
	// DefaultCodeFailureWindow is the window of DefaultMaxCodeFailures.
	DefaultCodeFailureWindow = time.Minute
	// maxLimiterKeys bounds the keys (client and room) a limiter tracks.
	maxLimiterKeys = 10000
)

// attemptLimiter counts failures per key in fixed windows. Bounded: beyond
// maxLimiterKeys, expired entries are swept and then an arbitrary one is
// dropped. Safe for concurrent use.
type attemptLimiter struct {
	max     int
	window  time.Duration
	maxKeys int

	mu sync.Mutex
	m  map[string]*attempts
}

type attempts struct {
	start    time.Time
	failures int
}

func newAttemptLimiter(max int, window time.Duration, maxKeys int) *attemptLimiter {
	if max <= 0 {
		max = DefaultMaxCodeFailures
	}
	if window <= 0 {
		window = DefaultCodeFailureWindow
	}
	if maxKeys <= 0 {
		maxKeys = maxLimiterKeys
	}
	return &attemptLimiter{max: max, window: window, maxKeys: maxKeys, m: make(map[string]*attempts)}
}

// allow reports whether another attempt for key is allowed at now.
func (l *attemptLimiter) allow(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.m[key]
	if !ok || now.Sub(a.start) >= l.window {
		return true
	}
	return a.failures < l.max
}

// fail records a failed attempt for key at now and reports whether this
// failure used up key's attempts (the lock-out starts now).
func (l *attemptLimiter) fail(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.m[key]
	if ok && now.Sub(a.start) < l.window {
		a.failures++
		return a.failures == l.max
	}
	if !ok && len(l.m) >= l.maxKeys {
		for k, v := range l.m {
			if now.Sub(v.start) >= l.window {
				delete(l.m, k)
			}
		}
		for k := range l.m {
			if len(l.m) < l.maxKeys {
				break
			}
			delete(l.m, k)
		}
	}
	l.m[key] = &attempts{start: now, failures: 1}
	return l.max == 1
}
