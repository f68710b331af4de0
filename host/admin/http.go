package admin

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"
)

// Timeouts of [Server] and of the event streams.
const (
	// ReadHeaderTimeout bounds the connection's handshake: TLS, when the
	// listener is a TLS one, and the request headers.
	ReadHeaderTimeout = 5 * time.Second
	// ReadTimeout bounds reading a whole request.
	ReadTimeout = 10 * time.Second
	// WriteTimeout bounds writing a response; an event stream extends it
	// by eventWriteTimeout before each event instead.
	WriteTimeout = 15 * time.Second
	// IdleTimeout closes a kept-alive connection without requests.
	IdleTimeout = 60 * time.Second
	// eventWriteTimeout bounds writing one event to a stream: a client
	// that does not read is dropped.
	eventWriteTimeout = 10 * time.Second
	// heartbeat is the interval of a stream's comment line, which keeps
	// proxies from closing it and finds dead clients.
	heartbeat = 15 * time.Second
	// minRender is the shortest interval between two renders of a
	// stream, however often the host changes.
	minRender = 250 * time.Millisecond
	// maxLoginBody bounds the login form.
	maxLoginBody = 4 << 10
)

//go:embed static templates
var files embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"ago":    ago,
	"hhmmss": func(t time.Time) string { return t.Local().Format("15:04:05") },
	"stateClass": func(s string) string {
		switch s {
		case StateSignedIn:
			return "ok"
		case StateWaitingQR, StateSigningIn:
			return "wait"
		case StateExpired, StateRevoked, "error", "offline":
			return "bad"
		}
		return "warn"
	},
	"healthClass": func(s string) string {
		switch s {
		case "ok", "online":
			return "ok"
		case "unknown", "connecting":
			return "wait"
		case "degraded", "backoff":
			return "warn"
		}
		return "bad"
	},
	"join": strings.Join,
	// qrSrc passes a QR image to an img src: only a PNG data URL (which
	// html/template would otherwise refuse), nothing else.
	"qrSrc": func(s string) template.URL {
		if !strings.HasPrefix(s, "data:image/png;base64,") || strings.ContainsAny(s, "\"'<> ") {
			return ""
		}
		return template.URL(s) // #nosec: a checked base64 PNG data URL
	},
}).ParseFS(files, "templates/*.html"))

// ago renders how long ago t was, "never" for the zero time.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	switch {
	case d < 2*time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%d s ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return t.Local().Format("2006-01-02 15:04")
}

// Handler returns the page's HTTP handler: GET / (the page), GET and POST
// /login, POST /logout, GET /api/state (the Snapshot as JSON), GET
// /api/events (the live stream) and the page's static files.
func (a *Admin) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(files, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /login", a.serveLogin)
	mux.HandleFunc("POST /login", a.login)
	mux.HandleFunc("POST /logout", a.logout)
	mux.HandleFunc("GET /{$}", a.guard(a.servePage))
	mux.HandleFunc("GET /api/state", a.guard(a.serveState))
	mux.HandleFunc("GET /api/events", a.guard(a.serveEvents))
	return secureHeaders(mux)
}

// secureHeaders sets the headers every answer carries: nothing is cached,
// framed, sniffed or loaded from elsewhere.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// guard refuses a request without the token: a browser asking for the
// page goes to the login form, anything else gets 401.
func (a *Admin) guard(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.authorized(r) {
			next(w, r)
			return
		}
		if r.URL.Path == "/" && r.Header.Get("Authorization") == "" && strings.Contains(r.Header.Get("Accept"), "text/html") {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="xconn admin"`)
		http.Error(w, "unauthorized: present the operator token (Authorization: Bearer) or log in at /login", http.StatusUnauthorized)
	}
}

type loginData struct {
	Failed  bool
	Version string
}

func (a *Admin) serveLogin(w http.ResponseWriter, r *http.Request) {
	if a.authorized(r) {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	a.render(w, "login.html", http.StatusOK, loginData{Version: a.opts.Version})
}

func (a *Admin) login(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "forbidden: cross-site form post", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginBody)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad request: unreadable form", http.StatusBadRequest)
		return
	}
	if !a.tokenOK(r.PostForm.Get("token")) {
		a.log.Warn("admin: login refused: wrong token", "remote", remoteHost(r))
		a.render(w, "login.html", http.StatusUnauthorized, loginData{Failed: true, Version: a.opts.Version})
		return
	}
	a.setSession(w, r)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (a *Admin) logout(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "forbidden: cross-site form post", http.StatusForbidden)
		return
	}
	clearSession(w, r)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

func remoteHost(r *http.Request) string {
	h, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return h
}

// pageData is what the page template renders.
type pageData struct {
	Snapshot
	Now time.Time
}

func (a *Admin) servePage(w http.ResponseWriter, r *http.Request) {
	s := a.Snapshot(r.Context())
	a.render(w, "page.html", http.StatusOK, pageData{Snapshot: s, Now: s.At})
}

func (a *Admin) serveState(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(a.Snapshot(r.Context()))
}

func (a *Admin) render(w http.ResponseWriter, name string, code int, data any) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, data); err != nil {
		a.log.Error("admin: render", "template", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// serveEvents is the live stream: an event "state" carrying the page's
// main part as HTML whenever it changed, a comment line as heartbeat. At
// most MaxClients streams run; each ends after StreamLifetime, when its
// client stops reading, or when the page closes.
func (a *Admin) serveEvents(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	if a.clients >= a.opts.MaxClients {
		a.mu.Unlock()
		a.log.Warn("admin: event stream refused: too many open", "max", a.opts.MaxClients)
		w.Header().Set("Retry-After", "5")
		http.Error(w, "too many event streams", http.StatusServiceUnavailable)
		return
	}
	a.clients++
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.clients--
		a.mu.Unlock()
	}()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	ctx, cancel := context.WithTimeout(r.Context(), StreamLifetime)
	defer cancel()
	send := func(b []byte) bool {
		if err := rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return false
		}
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send([]byte("retry: 3000\n\n")) {
		return
	}
	refresh := time.NewTicker(a.opts.Refresh)
	defer refresh.Stop()
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	var last []byte
	for {
		gen := a.generation()
		frag, err := a.fragment(ctx)
		if err != nil {
			return
		}
		if !bytes.Equal(frag, last) {
			if !send(sseEvent("state", frag)) {
				return
			}
			last = frag
		}
		select {
		case <-gen:
		case <-refresh.C:
		case <-beat.C:
			if !send([]byte(": keep-alive\n\n")) {
				return
			}
			continue
		case <-ctx.Done():
			return
		case <-a.closed:
			return
		}
		select { // coalesce a burst of changes
		case <-time.After(minRender):
		case <-ctx.Done():
			return
		case <-a.closed:
			return
		}
	}
}

// fragment renders the page's main part for a stream.
func (a *Admin) fragment(ctx context.Context) ([]byte, error) {
	s := a.Snapshot(ctx)
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, "main", pageData{Snapshot: s, Now: s.At}); err != nil {
		a.log.Error("admin: render", "template", "main", "err", err)
		return nil, err
	}
	return buf.Bytes(), nil
}

// sseEvent frames data as one Server-Sent Event, a data line per line.
func sseEvent(name string, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString("event: " + name + "\n")
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		b.WriteString("data: ")
		b.Write(bytes.TrimRight(line, "\r"))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// Server returns an HTTP server of the page's handler with every timeout
// set: ReadHeaderTimeout (the handshake), ReadTimeout, WriteTimeout and
// IdleTimeout, and 16 KiB of headers at most.
func (a *Admin) Server() *http.Server {
	return &http.Server{Handler: a.Handler(), ReadHeaderTimeout: ReadHeaderTimeout, ReadTimeout: ReadTimeout,
		WriteTimeout: WriteTimeout, IdleTimeout: IdleTimeout, MaxHeaderBytes: 16 << 10}
}

// Serve serves the page on ln until ctx ends, then closes the open
// streams and shuts the server down (waiting up to 5 s for requests in
// flight). It returns nil after a shutdown by ctx.
func (a *Admin) Serve(ctx context.Context, ln net.Listener) error {
	srv := a.Server()
	srv.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		a.Close()
		return fmt.Errorf("admin: serve: %w", err)
	case <-ctx.Done():
	}
	a.Close()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-done; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("admin: shutdown: %w", err)
	}
	return nil
}
