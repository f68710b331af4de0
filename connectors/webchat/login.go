package webchat

import (
	"errors"
	"net/http"
)

// chatPage serves GET <base>/: the chat of the channel this browser signed
// in to by QR, or a note on how to sign in.
func (w *webSide) chatPage(rw http.ResponseWriter, r *http.Request) {
	s, ok := w.session(r)
	signedIn := ok && s.home != ""
	if !signedIn {
		w.render(rw, w.pages.notice, http.StatusOK, pageData{
			Title:   "Web Chat",
			Message: "This browser is not signed in. Scan the QR code your agent shows you, or open its login link.",
		})
		return
	}
	w.render(rw, w.pages.chat, http.StatusOK, pageData{Title: "Web Chat", SignedIn: true})
}

// loginPage serves GET <base>/login/<token>: a confirm page; the sign-in
// moves to "scanned".
func (w *webSide) loginPage(rw http.ResponseWriter, r *http.Request) {
	token := r.PathValue("token")
	if err := w.be.loginScanned(r.Context(), token); err != nil {
		w.loginFailed(rw, r, err)
		return
	}
	w.render(rw, w.pages.login, http.StatusOK, pageData{Title: "Sign in to Web Chat", State: "confirm"})
}

// loginConfirm serves POST <base>/login/<token> (the Confirm button): the
// sign-in becomes "authenticated", the browser's cookie is bound to the
// channel and the browser is sent to the chat page.
func (w *webSide) loginConfirm(rw http.ResponseWriter, r *http.Request) {
	if !w.sameOrigin(r) { // no login CSRF: only the confirm page may post here
		w.render(rw, w.pages.notice, http.StatusForbidden, pageData{Title: "Web Chat", Error: "Cross-site sign-in refused."})
		return
	}
	token := r.PathValue("token")
	id := w.cookieID(r)
	channel, err := w.be.loginConfirm(r.Context(), token, sessionKey(id))
	if err != nil {
		w.loginFailed(rw, r, err)
		return
	}
	w.bindSession(rw, id, "", channel)
	w.log.Info("webchat: browser signed in by QR", "channel", channel)
	http.Redirect(rw, r, w.base+"/", http.StatusSeeOther)
}

func (w *webSide) loginFailed(rw http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errLoginInvalid) {
		// A browser that already signed in (say, by this very link) gets a
		// way back to its chat.
		s, ok := w.session(r)
		w.render(rw, w.pages.login, http.StatusNotFound, pageData{Title: "Sign in to Web Chat", State: "invalid", SignedIn: ok && s.home != ""})
		return
	}
	w.log.Warn("webchat: login", "error", err)
	w.render(rw, w.pages.notice, http.StatusServiceUnavailable, pageData{Title: "Web Chat", Error: "Sign-in is not possible right now. Try again."})
}
