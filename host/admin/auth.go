package admin

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// cookieName is the login session cookie.
const cookieName = "xconn_admin"

// tokenOK compares a presented token with the operator's in constant time
// (over SHA-256 digests, so the length does not show either).
func (a *Admin) tokenOK(presented string) bool {
	p := sha256.Sum256([]byte(presented))
	w := sha256.Sum256(a.key)
	return subtle.ConstantTimeCompare(p[:], w[:]) == 1
}

// authorized reports whether r carries the token as a bearer credential
// or a valid session cookie.
func (a *Admin) authorized(r *http.Request) bool {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		return ok && strings.EqualFold(scheme, "Bearer") && a.tokenOK(strings.TrimSpace(tok))
	}
	c, err := r.Cookie(cookieName)
	return err == nil && a.sessionOK(c.Value, time.Now())
}

// sessionValue returns a session cookie value good until exp: the expiry
// and its HMAC-SHA256 under the token. A new token ends every session.
func (a *Admin) sessionValue(exp time.Time) string {
	e := strconv.FormatInt(exp.Unix(), 10)
	return e + "." + base64.RawURLEncoding.EncodeToString(a.mac(e))
}

func (a *Admin) mac(s string) []byte {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte("xconn admin session\x00" + s))
	return m.Sum(nil)
}

func (a *Admin) sessionOK(v string, now time.Time) bool {
	e, sig, ok := strings.Cut(v, ".")
	if !ok || len(e) > 20 || len(sig) > 64 {
		return false
	}
	exp, err := strconv.ParseInt(e, 10, 64)
	if err != nil || now.Unix() >= exp || exp > now.Add(SessionTTL+time.Minute).Unix() {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	return err == nil && hmac.Equal(got, a.mac(e))
}

// setSession sets the login cookie: HttpOnly, SameSite=Strict, Secure on
// TLS, for the whole page.
func (a *Admin) setSession(w http.ResponseWriter, r *http.Request) {
	exp := time.Now().Add(SessionTTL)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: a.sessionValue(exp), Path: "/", MaxAge: int(SessionTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

func clearSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

// sameOrigin refuses a state-changing form post from another site. A
// browser's Fetch Metadata decides when sent (same-origin, or none for a
// user's own navigation); else the Origin, when sent, must be this page's.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin" || site == "none"
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true // not a browser: curl and scripts, which have the token anyway
	}
	return o == "http://"+r.Host || o == "https://"+r.Host
}
