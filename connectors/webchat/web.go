package webchat

import (
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
	// keepAliveEvery is the interval of the ping events that keep a quiet
	// stream open and tell the page it is alive (app.js).
	keepAliveEvery = 20 * time.Second
	// sseWriteTimeout bounds one write to a browser stream.
	sseWriteTimeout = 10 * time.Second
	// statusPollEvery is how often an event stream checks the chat's
	// state (served by xAgent, signed out, replaced).
	statusPollEvery = time.Second
)

// routes returns the web side: the browser pages and API under the web
// path, with conservative security headers on every response. It holds no
// goroutines of its own: SSE streams run on the HTTP server's handler
// goroutines and end when the SDK server closes (OnClose).
func (c *Connector) routes() http.Handler {
	mux := http.NewServeMux()
	b := c.base
	mux.HandleFunc("GET "+b+"/{$}", c.chatPage)
	mux.Handle("GET "+b+"/static/", http.StripPrefix(b+"/static/", staticHandler()))
	mux.HandleFunc("GET "+b+"/login/{token}", c.loginPage)
	mux.HandleFunc("POST "+b+"/login/{token}", c.loginConfirm)
	mux.HandleFunc("GET "+b+"/rooms/{room}", c.roomPage)
	mux.HandleFunc("POST "+b+"/rooms/{room}", c.roomEnter)
	mux.HandleFunc("POST "+b+"/api/messages", c.postMessage)
	mux.HandleFunc("GET "+b+"/api/events", c.events)
	mux.HandleFunc("GET "+b+"/media/{ref}", c.file)
	mux.HandleFunc("POST "+b+"/logout", c.logout)
	mux.HandleFunc("GET /{$}", c.home)
	mux.HandleFunc("GET /favicon.ico", func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, b+"/static/favicon.svg", http.StatusMovedPermanently)
	})
	mux.HandleFunc("GET "+b, func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, b+"/", http.StatusFound)
	})
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		h := rw.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin") // "no-referrer" would make form posts send Origin: null
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'")
		mux.ServeHTTP(rw, r)
	})
}

// CookieName returns the name of this connector's session cookie:
// CookiePrefix and a hash of its public URL and web path, one cookie per
// connector a browser reaches on a host.
func (c *Connector) CookieName() string { return c.cookieName }

// cookiePath is the path scope of the session cookie.
func (c *Connector) cookiePath() string { return c.base + "/" }

// secureCookies reports whether cookies are marked Secure.
func (c *Connector) secureCookies() bool {
	return c.public != nil && c.public.Scheme == "https"
}

// session returns the browser's session, if its cookie names a live one.
func (c *Connector) session(r *http.Request) (sessionView, bool) {
	ck, err := r.Cookie(c.cookieName)
	if err != nil || ck.Value == "" {
		return sessionView{}, false
	}
	return c.sessions.get(ck.Value, time.Now())
}

// cookieID returns the browser's session cookie value when it names a live
// session, else a new random one.
func (c *Connector) cookieID(r *http.Request) string {
	if ck, err := r.Cookie(c.cookieName); err == nil && ck.Value != "" {
		if _, ok := c.sessions.get(ck.Value, time.Now()); ok {
			return ck.Value
		}
	}
	return connector.NewID("wcs_")
}

// cookieValue returns the browser's session cookie value, or "".
func (c *Connector) cookieValue(r *http.Request) string {
	if ck, err := r.Cookie(c.cookieName); err == nil {
		return ck.Value
	}
	return ""
}

// home serves GET / (on the Server's root, or the web listener's): the
// browser's chat when it has one (its QR chat, else its only room), else
// the page that says how to sign in.
func (c *Connector) home(rw http.ResponseWriter, r *http.Request) {
	to := c.base + "/"
	if s, ok := c.session(r); ok && s.home == "" && len(s.rooms) == 1 {
		for room := range s.rooms {
			to = c.base + "/rooms/" + room
		}
	}
	http.Redirect(rw, r, to, http.StatusFound)
}

// logout serves POST <base>/logout (form field room, "" = the QR chat):
// this browser leaves the chat; other browsers and the channel stay
// signed in. A QR sign-in is also dropped from the channel's binding, so
// that a restart does not sign this browser in again.
func (c *Connector) logout(rw http.ResponseWriter, r *http.Request) {
	if !c.sameOrigin(r) {
		c.render(rw, c.pages.notice, http.StatusForbidden, pageData{Title: "Web Chat", Error: "Cross-site request refused."})
		return
	}
	r.Body = http.MaxBytesReader(rw, r.Body, 4096)
	_ = r.ParseForm()
	room, ok := normalizeRoom(r.PostFormValue("room"))
	if !ok {
		room = ""
	}
	id := c.cookieValue(r)
	channel := ""
	if id != "" {
		channel = c.sessions.unbind(id, room)
	}
	if channel != "" && room == "" {
		if err := c.forgetBrowser(r.Context(), channel, sessionKey(id)); err != nil {
			c.log.Warn("webchat: sign out", "channel", channel, "error", err)
		}
	}
	if channel != "" {
		c.log.Info("webchat: browser signed out", "channel", channel, "room", room)
	}
	to := c.base + "/"
	if room != "" {
		to = c.base + "/rooms/" + room
	}
	http.Redirect(rw, r, to, http.StatusSeeOther)
}

// bindSession binds channel (for room, "" = home) to the session of cookie
// value id (a session of r's client address when new) and sets the cookie.
func (c *Connector) bindSession(rw http.ResponseWriter, r *http.Request, id, room, channel string) {
	c.sessions.bind(id, clientAddr(r), room, channel, time.Now())
	http.SetCookie(rw, sessionCookie(c.cookieName, id, c.cookiePath(), c.secureCookies(), c.sessions.ttl))
}

// sameOrigin refuses cross-site API writes: a present Origin header must
// name this host or the public URL's host. (The SameSite=Lax cookie already
// keeps cross-site POSTs unauthenticated; this is a second fence.)
func (c *Connector) sameOrigin(r *http.Request) bool {
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
	return c.public != nil && strings.EqualFold(u.Host, c.public.Host)
}

// roomOf returns the validated room query parameter ("" for home).
func roomOf(r *http.Request) (string, bool) {
	room := r.URL.Query().Get("room")
	if room == "" {
		return "", true
	}
	return normalizeRoom(room)
}
