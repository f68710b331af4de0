package webchat

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Defaults of the browser session store.
const (
	// DefaultMaxSessions bounds the browser sessions kept in memory; the
	// least recently used one is dropped beyond it.
	DefaultMaxSessions = 10000
	// DefaultSessionTTL is how long an unused browser session lives.
	DefaultSessionTTL = 7 * 24 * time.Hour
	// DefaultMaxSessionsPerClient bounds the sessions created from one
	// client address: beyond it the client's own least recently used
	// session is dropped, never another client's.
	DefaultMaxSessionsPerClient = 64
	// DefaultUploadQuotaBytes is how many bytes one browser session may
	// post (text and files) per DefaultUploadQuotaWindow.
	DefaultUploadQuotaBytes = 32 << 20
	// DefaultUploadQuotaWindow is the window of DefaultUploadQuotaBytes.
	DefaultUploadQuotaWindow = time.Minute
	// maxRoomsPerSession bounds the rooms one browser session has entered.
	maxRoomsPerSession = 32
	// CookiePrefix starts the name of the web side's session cookie; see
	// [Connector.CookieName].
	CookiePrefix = "xconn_webchat_"
)

// cookieNameFor is the session cookie's name of a connector whose web side
// browsers reach at public under base: the prefix and a short hash of
// both. Browsers keep cookies per host, whatever the port, so two
// connectors on one host (a demo and a room served on its own) would
// otherwise overwrite each other's sign-in.
func cookieNameFor(public *url.URL, base string) string {
	sum := sha256.Sum256([]byte(public.String() + base))
	return CookiePrefix + hex.EncodeToString(sum[:5])
}

// sessionKey is the key a session is stored under: the hex SHA-256 of the
// cookie value, so that neither memory dumps nor persisted bindings hold a
// usable cookie.
func sessionKey(cookie string) string {
	sum := sha256.Sum256([]byte(cookie))
	return hex.EncodeToString(sum[:])
}

// browserSession is what a session cookie stands for: the channel the
// browser signed in to by QR (home) and the rooms it has entered.
type browserSession struct {
	key      string            // sessionKey of the cookie
	home     string            // channel id bound by QR sign-in, "" if none
	rooms    map[string]string // room name -> channel id
	lastSeen time.Time
	elem     *list.Element // in sessionStore.lru
	client   string        // address the session was created from ("" = restored)
	celem    *list.Element // in sessionStore.byClient[client]
	// upload quota: bytes posted since upStart
	upStart time.Time
	upBytes int64
}

// sessionStore keeps browser sessions in memory, bounded in number and
// lifetime, keyed by the hash of the cookie. The bound is fair: one client
// address holds at most maxPerClient sessions, and creating more drops its
// own least recently used one, so that a client cannot evict the others. Cookie values are random and
// unguessable. QR sign-ins are also recorded (as hashes) in the channel's
// encrypted binding and restored at start, so that a restart keeps those
// browsers signed in; room entries live in memory only (the access code is
// entered again after a restart). Safe for concurrent use.
type sessionStore struct {
	max          int
	maxPerClient int
	ttl          time.Duration
	quota        int64         // upload bytes per session per quotaWindow
	quotaWindow  time.Duration //

	mu       sync.Mutex
	m        map[string]*browserSession
	lru      *list.List            // front = most recently used; values are *browserSession
	byClient map[string]*list.List // per client address, front = most recently used
}

func newSessionStore(max int, ttl time.Duration) *sessionStore {
	if max <= 0 {
		max = DefaultMaxSessions
	}
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	return &sessionStore{max: max, maxPerClient: DefaultMaxSessionsPerClient, ttl: ttl,
		quota: DefaultUploadQuotaBytes, quotaWindow: DefaultUploadQuotaWindow,
		m: make(map[string]*browserSession), lru: list.New(), byClient: make(map[string]*list.List)}
}

// sessionView is a copy of a session's bindings, safe to use unlocked.
type sessionView struct {
	key   string
	home  string
	rooms map[string]string
}

func (v sessionView) channelFor(room string) string {
	if room == "" {
		return v.home
	}
	return v.rooms[room]
}

// get returns the live session with cookie value id, refreshing its use
// time.
func (s *sessionStore) get(id string, now time.Time) (sessionView, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	bs, ok := s.m[sessionKey(id)]
	if !ok {
		return sessionView{}, false
	}
	if now.Sub(bs.lastSeen) > s.ttl {
		s.removeLocked(bs)
		return sessionView{}, false
	}
	s.touchLocked(bs, now)
	return viewOf(bs), true
}

func (s *sessionStore) touchLocked(bs *browserSession, now time.Time) {
	bs.lastSeen = now
	s.lru.MoveToFront(bs.elem)
	if l := s.byClient[bs.client]; l != nil && bs.celem != nil {
		l.MoveToFront(bs.celem)
	}
}

func viewOf(bs *browserSession) sessionView {
	rooms := make(map[string]string, len(bs.rooms))
	for k, v := range bs.rooms {
		rooms[k] = v
	}
	return sessionView{key: bs.key, home: bs.home, rooms: rooms}
}

// bind attaches channel to the session of cookie value id (creating it when
// unknown or expired, as a session of client address client) for room
// ("" = the QR-bound home channel).
func (s *sessionStore) bind(id, client, room, channel string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	bs := s.obtainLocked(sessionKey(id), client, now)
	if room == "" {
		bs.home = channel
		return
	}
	if _, ok := bs.rooms[room]; !ok && len(bs.rooms) >= maxRoomsPerSession {
		for k := range bs.rooms { // drop an arbitrary room to stay bounded
			delete(bs.rooms, k)
			break
		}
	}
	bs.rooms[room] = channel
}

// restore binds the session stored under key to home channel (a QR
// sign-in recorded in a channel binding, at start).
func (s *sessionStore) restore(key, channel string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.obtainLocked(key, "", now).home = channel
}

// unbind removes the binding of room ("" = home) from the session of
// cookie value id (a sign-out of this browser) and returns the channel it
// named.
func (s *sessionStore) unbind(id, room string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	bs, ok := s.m[sessionKey(id)]
	if !ok {
		return ""
	}
	if room == "" {
		ch := bs.home
		bs.home = ""
		return ch
	}
	ch := bs.rooms[room]
	delete(bs.rooms, room)
	return ch
}

// spend charges n upload bytes to the session of cookie value id at now
// and reports whether the session's quota allowed it (a refused post is
// not charged). A session that is unknown is refused.
func (s *sessionStore) spend(id string, n int64, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	bs, ok := s.m[sessionKey(id)]
	if !ok {
		return false
	}
	if now.Sub(bs.upStart) >= s.quotaWindow {
		bs.upStart, bs.upBytes = now, 0
	}
	if bs.upBytes+n > s.quota {
		return false
	}
	bs.upBytes += n
	return true
}

// obtainLocked returns the live session under key, creating it for client
// when needed: at client's bound its own least recently used session is
// dropped first, at the store's bound the globally least recently used.
func (s *sessionStore) obtainLocked(key, client string, now time.Time) *browserSession {
	bs, ok := s.m[key]
	if ok && now.Sub(bs.lastSeen) > s.ttl {
		s.removeLocked(bs)
		ok = false
	}
	if !ok {
		for cl := s.byClient[client]; client != "" && cl != nil && cl.Len() >= s.maxPerClient; {
			s.removeLocked(cl.Back().Value.(*browserSession))
		}
		for len(s.m) >= s.max {
			s.removeLocked(s.lru.Back().Value.(*browserSession))
		}
		cl := s.byClient[client]
		if cl == nil {
			cl = list.New()
			s.byClient[client] = cl
		}
		bs = &browserSession{key: key, client: client, rooms: make(map[string]string)}
		bs.elem = s.lru.PushFront(bs)
		bs.celem = cl.PushFront(bs)
		s.m[key] = bs
	}
	s.touchLocked(bs, now)
	return bs
}

// unbindChannel removes channel from every session (the channel was closed
// or deleted).
func (s *sessionStore) unbindChannel(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, bs := range s.m {
		if bs.home == channel {
			bs.home = ""
		}
		for r, c := range bs.rooms {
			if c == channel {
				delete(bs.rooms, r)
			}
		}
	}
}

func (s *sessionStore) removeLocked(bs *browserSession) {
	s.lru.Remove(bs.elem)
	if l := s.byClient[bs.client]; l != nil {
		l.Remove(bs.celem)
		if l.Len() == 0 {
			delete(s.byClient, bs.client)
		}
	}
	delete(s.m, bs.key)
}

// len reports the number of sessions.
func (s *sessionStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// sessionCookie builds the session cookie called name: HttpOnly,
// SameSite=Lax, Secure when the public URL is https, scoped to the web
// side's path.
func sessionCookie(name, id, path string, secure bool, ttl time.Duration) *http.Cookie {
	return &http.Cookie{
		Name:     name,
		Value:    id,
		Path:     path,
		MaxAge:   int(ttl / time.Second),
		HttpOnly: true,
		Secure:   secure,
		SameSite: http.SameSiteLaxMode,
	}
}
