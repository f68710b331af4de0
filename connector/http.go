package connector

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/xconn/xconn/protocol"
)

// routes builds the mux of every endpoint under PathPrefix.
func (s *Server) routes() *http.ServeMux {
	p := strings.TrimRight(s.opts.PathPrefix, "/")
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+p+protocol.PathCard, withWriteDeadline(ServeWriteTimeout, s.tracedHTTP(protocol.PathCard, s.serveCard)))
	mux.HandleFunc("GET "+p+protocol.PathSkill, withWriteDeadline(ServeWriteTimeout, s.tracedHTTP(protocol.PathSkill, s.serveSkill)))
	mux.HandleFunc("GET "+p+protocol.PathHealth, withWriteDeadline(ServeWriteTimeout, s.tracedHTTP(protocol.PathHealth, s.serveHealth)))
	mux.HandleFunc("GET "+p+protocol.PathWS, s.serveWS) // wsconn bounds each frame write
	mux.HandleFunc("POST "+p+protocol.PathFileUploads, withWriteDeadline(ServeReadTimeout+ServeWriteTimeout, s.tracedHTTP(protocol.PathFileUploads, s.serveUpload)))
	mux.HandleFunc("GET "+p+protocol.PathFileRefsPrefix+"{ref}", withWriteDeadline(ServeDownloadTimeout, s.tracedHTTP(protocol.PathFileRefsPrefix+"{ref}", s.serveFileRef)))
	metrics := s.requireKey(promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET "+p+"/metrics", withWriteDeadline(ServeWriteTimeout, metrics.ServeHTTP))
	return mux
}

// checkAPIKey enforces the system API key in constant time: 401 when
// missing, 403 when wrong. It reports whether the request may proceed.
func (s *Server) checkAPIKey(w http.ResponseWriter, r *http.Request) bool {
	if s.opts.APIKey == "" {
		return true
	}
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if h == "" || !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="xconn"`)
		writeJSONError(w, http.StatusUnauthorized, "unauthorized", "system API key required")
		return false
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(s.opts.APIKey)) != 1 {
		// A security event, logged without the presented key and rate
		// limited so a scanner cannot flood the log.
		s.logLimited("api_key_rejected", "system API key rejected", "remote", r.RemoteAddr, "path", r.URL.Path)
		writeJSONError(w, http.StatusForbidden, "forbidden", "system API key rejected")
		return false
	}
	return true
}

func (s *Server) requireKey(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.checkAPIKey(w, r) {
			h.ServeHTTP(w, r)
		}
	})
}

func (s *Server) started() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == stateStarted
}

// liveErr is nil while the server runs, else ErrNotStarted or ErrClosed.
func (s *Server) liveErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateNew:
		return ErrNotStarted
	case stateClosed:
		return ErrClosed
	}
	return nil
}

func (s *Server) serveCard(w http.ResponseWriter, r *http.Request) {
	if !s.started() {
		writeJSONError(w, http.StatusServiceUnavailable, "unavailable", "connector is not running")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(s.cardJSON)
}

func (s *Server) serveSkill(w http.ResponseWriter, r *http.Request) {
	if len(s.opts.Skill) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(s.opts.Skill)
}

func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	if !s.checkAPIKey(w, r) {
		return
	}
	if !s.started() {
		writeJSONError(w, http.StatusServiceUnavailable, "unavailable", "connector is not running")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(s.healthJSON)
}

type httpError struct {
	Error   string `json:"error"`
	Message string `json:"message,omitempty"`
}

func writeJSONError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(httpError{Error: code, Message: msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeJSONError(w, http.StatusInternalServerError, "internal_error", "cannot encode the response")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// isTooLarge reports an http.MaxBytesReader overrun or the upload limit.
func isTooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe) || errors.Is(err, errTooLarge)
}
