package wechattest

import (
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// QR statuses of get_qrcode_status (§5.2).
const (
	QRWait              = "wait"
	QRScanned           = "scaned"
	QRScannedRedirect   = "scaned_but_redirect"
	QRExpired           = "expired"
	QRNeedVerifyCode    = "need_verifycode"
	QRVerifyCodeBlocked = "verify_code_blocked"
	QRBindedRedirect    = "binded_redirect"
	QRConfirmed         = "confirmed"
)

// maxQRSessions bounds the QR sessions the fake keeps.
const maxQRSessions = 1000

type qrSession struct {
	id         string
	created    time.Time
	script     []string
	expired    bool
	opened     bool
	redirected bool
	tokens     []string // local_token_list of the request
	account    *account // minted on confirmation
}

// ScriptQR queues statuses that the next issued QR code answers on its
// first status polls, one per poll, before its natural behaviour (wait
// until opened, then confirmed). "expired" makes the code stay expired;
// "scaned_but_redirect" moves it to RedirectHost, and polls at the main
// host keep answering the redirect; "binded_redirect" answers without
// credentials. Each call scripts one more future code.
func (s *Server) ScriptQR(statuses ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts = append(s.scripts, statuses)
}

// QRCodes returns how many QR codes get_bot_qrcode issued.
func (s *Server) QRCodes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.qrOrder)
}

// LastLocalTokens returns the local_token_list of the last QR request.
func (s *Server) LastLocalTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.qrOrder) == 0 {
		return nil
	}
	return append([]string(nil), s.qrs[s.qrOrder[len(s.qrOrder)-1]].tokens...)
}

func (s *Server) handleGetQR(w http.ResponseWriter, r *http.Request) {
	if !s.checkCommon(w, r) {
		return
	}
	if r.URL.Query().Get("bot_type") != "3" {
		s.violate(w, r, "bot_type %q, want 3", r.URL.Query().Get("bot_type"))
		return
	}
	var body struct {
		LocalTokenList []string `json:"local_token_list"`
	}
	if b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20)); len(b) > 0 {
		if err := json.Unmarshal(b, &body); err != nil {
			s.violate(w, r, "body: %v", err)
			return
		}
	}
	if len(body.LocalTokenList) > 10 {
		s.violate(w, r, "local_token_list has %d tokens, at most 10", len(body.LocalTokenList))
		return
	}
	q := &qrSession{id: "qr_" + randHex(12), created: time.Now(), tokens: body.LocalTokenList}
	s.mu.Lock()
	if len(s.scripts) > 0 {
		q.script, s.scripts = s.scripts[0], s.scripts[1:]
	}
	s.qrs[q.id] = q
	s.qrOrder = append(s.qrOrder, q.id)
	if len(s.qrOrder) > maxQRSessions {
		delete(s.qrs, s.qrOrder[0])
		s.qrOrder = s.qrOrder[1:]
	}
	s.mu.Unlock()
	writeJSON(w, map[string]string{"qrcode": q.id, "qrcode_img_content": s.URL + "/qr/" + q.id})
}

// handleScan is the QR code's URL: opening it scans and confirms the code.
func (s *Server) handleScan(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	q := s.qrs[r.PathValue("id")]
	ok := q != nil && !q.expired && time.Since(q.created) < s.opts.QRLifetime
	if ok {
		q.opened = true
	}
	s.mu.Unlock()
	if !ok {
		http.Error(w, "this QR code is unknown or expired", http.StatusGone)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "Scanned and confirmed: the connector signs in on its next status poll.\n")
}

// Confirm scans and confirms the most recent QR code, as opening its URL
// does. It reports false when there is none or it expired.
func (s *Server) Confirm() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.qrOrder) == 0 {
		return false
	}
	q := s.qrs[s.qrOrder[len(s.qrOrder)-1]]
	if q.expired || time.Since(q.created) >= s.opts.QRLifetime {
		return false
	}
	q.opened = true
	return true
}

type qrStatus struct {
	Status       string `json:"status"`
	BotToken     string `json:"bot_token,omitempty"`
	BotID        string `json:"ilink_bot_id,omitempty"`
	BaseURL      string `json:"baseurl,omitempty"`
	UserID       string `json:"ilink_user_id,omitempty"`
	RedirectHost string `json:"redirect_host,omitempty"`
}

func (s *Server) handleQRStatus(w http.ResponseWriter, r *http.Request, atRedirect bool) {
	if !s.checkCommon(w, r) {
		return
	}
	if r.Header.Get("Authorization") != "" {
		s.violate(w, r, "a bearer token on a QR endpoint")
		return
	}
	s.mu.Lock()
	q := s.qrs[r.URL.Query().Get("qrcode")]
	if q == nil {
		s.mu.Unlock()
		s.violate(w, r, "unknown qrcode")
		return
	}
	defer s.mu.Unlock()
	if len(q.script) > 0 {
		st := q.script[0]
		q.script = q.script[1:]
		out := qrStatus{Status: st}
		switch st {
		case QRExpired:
			q.expired = true
		case QRScannedRedirect:
			q.redirected = true
			out.RedirectHost = s.RedirectHost
		case QRConfirmed:
			out = s.confirmedLocked(q)
		}
		writeJSON(w, out)
		return
	}
	switch {
	case q.expired || time.Since(q.created) >= s.opts.QRLifetime:
		q.expired = true
		writeJSON(w, qrStatus{Status: QRExpired})
	case q.redirected && !atRedirect:
		writeJSON(w, qrStatus{Status: QRScannedRedirect, RedirectHost: s.RedirectHost})
	case q.opened:
		writeJSON(w, s.confirmedLocked(q))
	default:
		writeJSON(w, qrStatus{Status: QRWait})
	}
}

// confirmedLocked mints (once) the account of a confirmed code.
func (s *Server) confirmedLocked(q *qrSession) qrStatus {
	if q.account == nil {
		a := &account{token: "tok_" + randHex(20), botID: randHex(8) + "@im.bot", owner: "o_" + randHex(6) + "@im.wechat",
			wake: make(chan struct{}), cursors: map[string]bool{}}
		q.account = a
		s.accounts[a.token] = a
		s.byBot[a.botID] = a
		s.lastBot = a.botID
	}
	return qrStatus{Status: QRConfirmed, BotToken: q.account.token, BotID: q.account.botID, BaseURL: s.URL, UserID: q.account.owner}
}
