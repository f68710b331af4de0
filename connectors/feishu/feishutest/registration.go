package feishutest

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// registration is the state of the QR app registration (§2.1): one
// device code at a time, approved by the test with ApproveRegistration.
type registration struct {
	deviceCode string
	begins     int
	polls      int
	addons     string
	appID      string
	secret     string
	denied     bool
	// errs are answers queued by PollAnswer, served before the state's.
	errs []string
	// scanned is what ScanRegistration read from the QR text.
	scanned *Registration
}

// Registration is what a QR text asks Feishu to create (§2.1): the
// query parameters of the verification URL and the decoded addons.
type Registration struct {
	DeviceUserCode string
	Name           string
	Source         string
	CreateOnly     bool
	From, TP       string
	Preset         bool
	TenantScopes   []string
	TenantEvents   []string
}

// ScanRegistration plays the user scanning the QR text: it checks that
// the text is the pending registration's verification URL with the
// parameters of §2.1, decodes the addons (base64url without padding of
// gzipped JSON) and returns them. Approve or deny it afterwards.
func (s *Server) ScanRegistration(qrText string) (Registration, error) {
	u, err := url.Parse(qrText)
	if err != nil {
		return Registration{}, fmt.Errorf("feishutest: QR text: %w", err)
	}
	q := u.Query()
	r := Registration{DeviceUserCode: q.Get("user_code"), Name: q.Get("name"), Source: q.Get("source"),
		CreateOnly: q.Get("createOnly") == "true", From: q.Get("from"), TP: q.Get("tp")}
	if s.hs == nil || !strings.HasPrefix(qrText, s.hs.URL+"/verify?") {
		return r, fmt.Errorf("feishutest: QR text %q is not the verification URL", qrText)
	}
	raw, err := base64.RawURLEncoding.DecodeString(q.Get("addons"))
	if err != nil {
		return r, fmt.Errorf("feishutest: addons are not base64url without padding: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return r, fmt.Errorf("feishutest: addons are not gzip: %w", err)
	}
	js, err := io.ReadAll(io.LimitReader(zr, 1<<16))
	if err != nil {
		return r, fmt.Errorf("feishutest: addons: %w", err)
	}
	var a struct {
		Preset *bool `json:"preset"`
		Scopes struct {
			Tenant []string `json:"tenant"`
			User   []string `json:"user"`
		} `json:"scopes"`
		Events struct {
			Items struct {
				Tenant []string `json:"tenant"`
				User   []string `json:"user"`
			} `json:"items"`
		} `json:"events"`
		Callbacks *struct {
			Items []any `json:"items"`
		} `json:"callbacks"`
	}
	if err := json.Unmarshal(js, &a); err != nil || a.Preset == nil || a.Callbacks == nil {
		return r, fmt.Errorf("feishutest: addons JSON %s lacks preset or callbacks (%v)", js, err)
	}
	r.Preset, r.TenantScopes, r.TenantEvents = *a.Preset, a.Scopes.Tenant, a.Events.Items.Tenant
	s.mu.Lock()
	s.reg.addons = string(js)
	s.reg.scanned = &r
	s.mu.Unlock()
	return r, nil
}

// PollAnswer queues an error answer (authorization_pending, slow_down,
// access_denied, expired_token, or any other) for the next poll.
func (s *Server) PollAnswer(errCode string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reg.errs = append(s.reg.errs, errCode)
}

// Polls returns how many registration polls the fake answered.
func (s *Server) Polls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reg.polls
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
		s.reg = registration{deviceCode: newID("dc_"), begins: s.reg.begins + 1, polls: s.reg.polls, errs: s.reg.errs}
		writeJSON(w, http.StatusOK, map[string]any{"device_code": s.reg.deviceCode,
			"verification_uri_complete": s.hs.URL + "/verify?user_code=ABCD-EFGH", "verification_uri": s.hs.URL + "/verify",
			"user_code": "ABCD-EFGH", "interval": 1, "expire_in": 600})
	case "poll":
		s.reg.polls++
		if len(s.reg.errs) > 0 && r.PostForm.Get("device_code") == s.reg.deviceCode {
			e := s.reg.errs[0]
			s.reg.errs = s.reg.errs[1:]
			writeJSON(w, http.StatusOK, map[string]any{"error": e, "error_description": "injected"})
			return
		}
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
