package webchat

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/xconn/xconn/connector"
)

// Defaults of the web side.
const (
	// DefaultWebPath is the path prefix of the web side.
	DefaultWebPath = "/webchat"
	// DefaultMaxUploadBytes bounds one message posted by a browser,
	// file included (10 MiB).
	DefaultMaxUploadBytes = 10 << 20
	// DefaultMaxTextBytes bounds the text of one message (64 KiB).
	DefaultMaxTextBytes = 64 << 10
	// keepAliveEvery is the interval of SSE keep-alive comments.
	keepAliveEvery = 20 * time.Second
	// sseWriteTimeout bounds one write to a browser stream.
	sseWriteTimeout = 10 * time.Second
)

// webSide serves the browser pages and API under one path prefix. It holds
// no goroutines of its own: SSE streams run on the HTTP server's handler
// goroutines and end when close is called. Safe for concurrent use.
type webSide struct {
	base      string   // path prefix without trailing slash, e.g. "/webchat"
	publicURL *url.URL // absolute URL the browsers use, for Origin checks and cookies
	maxUpload int64
	be        backend
	hub       *hub
	sessions  *sessionStore
	limiter   *attemptLimiter
	pages     *pages
	log       *slog.Logger
	now       func() time.Time
	mux       *http.ServeMux
}

type webConfig struct {
	base      string
	publicURL *url.URL
	maxUpload int64
	be        backend
	hub       *hub
	sessions  *sessionStore
	log       *slog.Logger
	now       func() time.Time
}

func newWebSide(c webConfig) (*webSide, error) {
	pg, err := loadPages()
	if err != nil {
		return nil, err
	}
	w := &webSide{
		base:      strings.TrimSuffix(c.base, "/"),
		publicURL: c.publicURL,
		maxUpload: c.maxUpload,
		be:        c.be,
		hub:       c.hub,
		sessions:  c.sessions,
		limiter:   newAttemptLimiter(0, 0, 0),
		pages:     pg,
		log:       c.log,
		now:       c.now,
		mux:       http.NewServeMux(),
	}
	if w.maxUpload <= 0 {
		w.maxUpload = DefaultMaxUploadBytes
	}
	b := w.base
	w.mux.HandleFunc("GET "+b+"/{$}", w.chatPage)
	w.mux.Handle("GET "+b+"/static/", http.StripPrefix(b+"/static/", staticHandler()))
	w.mux.HandleFunc("GET "+b+"/login/{token}", w.loginPage)
	w.mux.HandleFunc("POST "+b+"/login/{token}", w.loginConfirm)
	w.mux.HandleFunc("GET "+b+"/rooms/{room}", w.roomPage)
	w.mux.HandleFunc("POST "+b+"/rooms/{room}", w.roomEnter)
	w.mux.HandleFunc("POST "+b+"/api/messages", w.postMessage)
	w.mux.HandleFunc("GET "+b+"/api/events", w.events)
	w.mux.HandleFunc("GET "+b+"/media/{ref}", w.file)
	w.mux.HandleFunc("GET "+b, func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, b+"/", http.StatusFound)
	})
	return w, nil
}

// ServeHTTP serves the web side; every response carries conservative
// security headers.
func (w *webSide) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	h := rw.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // "no-referrer" would make form posts send Origin: null
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'")
	w.mux.ServeHTTP(rw, r)
}

// cookiePath is the path scope of the session cookie.
func (w *webSide) cookiePath() string { return w.base + "/" }

// secureCookies reports whether cookies are marked Secure.
func (w *webSide) secureCookies() bool {
	return w.publicURL != nil && w.publicURL.Scheme == "https"
}

// session returns the browser's session, if its cookie names a live one.
func (w *webSide) session(r *http.Request) (sessionView, bool) {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return sessionView{}, false
	}
	return w.sessions.get(c.Value, w.now())
}

// cookieID returns the browser's session cookie value when it names a live
// session, else a new random one.
func (w *webSide) cookieID(r *http.Request) string {
	if c, err := r.Cookie(CookieName); err == nil && c.Value != "" {
		if _, ok := w.sessions.get(c.Value, w.now()); ok {
			return c.Value
		}
	}
	return connector.NewID("wcs_")
}

// bindSession binds channel (for room, "" = home) to the session of cookie
// value id and sets the cookie.
func (w *webSide) bindSession(rw http.ResponseWriter, id, room, channel string) {
	w.sessions.bind(id, room, channel, w.now())
	http.SetCookie(rw, sessionCookie(id, w.cookiePath(), w.secureCookies(), w.sessions.ttl))
}

// sameOrigin refuses cross-site API writes: a present Origin header must
// name this host or the public URL's host. (The SameSite=Lax cookie already
// keeps cross-site POSTs unauthenticated; this is a second fence.)
func (w *webSide) sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	return w.publicURL != nil && strings.EqualFold(u.Host, w.publicURL.Host)
}

// roomOf returns the validated room query parameter ("" for home).
func roomOf(r *http.Request) (string, bool) {
	room := r.URL.Query().Get("room")
	if room == "" {
		return "", true
	}
	return normalizeRoom(room)
}

// close ends every browser stream (before the HTTP server shuts down).
func (w *webSide) close() { w.hub.close() }
