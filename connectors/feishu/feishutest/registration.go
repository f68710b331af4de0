package feishutest

import (
	"net/http"
	"strings"
)

// registration is the state of the QR app registration (§2.1): one
// device code at a time, approved by the test with ApproveRegistration.
type registration struct {
	deviceCode string
	begins     int
	addons     string
	appID      string
	secret     string
	denied     bool
}

// registration serves POST /oauth/v1/app/registration (form-encoded
// begin and poll).
func (s *Server) registration(w http.ResponseWriter, r *http.Request) {
	s.count("registration")
	if err := r.ParseForm(); err != nil || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_request"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.PostForm.Get("action") {
	case "begin":
		if r.PostForm.Get("archetype") != "PersonalAgent" || r.PostForm.Get("auth_method") != "client_secret" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_request"})
			return
		}
		s.reg = registration{deviceCode: newID("dc_"), begins: s.reg.begins + 1}
		writeJSON(w, http.StatusOK, map[string]any{"device_code": s.reg.deviceCode,
			"verification_uri_complete": s.hs.URL + "/verify?user_code=ABCD-EFGH", "verification_uri": s.hs.URL + "/verify",
			"user_code": "ABCD-EFGH", "interval": 1, "expire_in": 600})
	case "poll":
		switch {
		case r.PostForm.Get("device_code") != s.reg.deviceCode || s.reg.deviceCode == "":
			writeJSON(w, http.StatusOK, map[string]any{"error": "expired_token", "error_description": "unknown device code"})
		case s.reg.denied:
			writeJSON(w, http.StatusOK, map[string]any{"error": "access_denied", "error_description": "the user refused"})
		case s.reg.appID == "":
			writeJSON(w, http.StatusOK, map[string]any{"error": "authorization_pending"})
		default:
			writeJSON(w, http.StatusOK, map[string]any{"client_id": s.reg.appID, "client_secret": s.reg.secret,
				"user_info": map[string]string{"open_id": "ou_alice", "tenant_brand": "feishu"}})
		}
	default:
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_request"})
	}
}

// ApproveRegistration makes the pending registration succeed with a new
// app (registered as AddApp does); it reports whether one was pending.
func (s *Server) ApproveRegistration(appID, secret string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reg.deviceCode == "" {
		return false
	}
	s.reg.appID, s.reg.secret = appID, secret
	s.apps[appID] = secret
	return true
}

// DenyRegistration makes the pending registration fail with access_denied.
func (s *Server) DenyRegistration() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reg.denied = true
}
