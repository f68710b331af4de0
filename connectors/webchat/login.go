package webchat

import (
	"errors"
	"net/http"
)

// chatPage serves GET <base>/: the chat of the channel this browser signed
// in to by QR, or a note on how to sign in.
func (c *Connector) chatPage(rw http.ResponseWriter, r *http.Request) {
	s, ok := c.session(r)
	signedIn := ok && s.home != ""
	if !signedIn {
		c.render(rw, c.pages.notice, http.StatusOK, pageData{
			Title: "Web Chat",
			Message: "This browser is not signed in. Scan the QR code your agent shows you, or open its login link. " +
				"No QR code on screen? Ask the agent for a new one: xconn demo --signin prints one.",
		})
		return
	}
	c.render(rw, c.pages.chat, http.StatusOK, pageData{Title: "Web Chat", SignedIn: true})
}

// loginPage serves GET <base>/login/<token>: a confirm page; the sign-in
// moves to "scanned".
func (c *Connector) loginPage(rw http.ResponseWriter, r *http.Request) {
	token := r.PathValue("token")
	if err := c.markScanned(r.Context(), token); err != nil {
		c.loginFailed(rw, r, err)
		return
	}
	c.render(rw, c.pages.login, http.StatusOK, pageData{Title: "Sign in to Web Chat", State: "confirm"})
}

// loginConfirm serves POST <base>/login/<token> (the Confirm button): the
// sign-in becomes "authenticated", the browser's cookie is bound to the
// channel and the browser is sent to the chat page.
func (c *Connector) loginConfirm(rw http.ResponseWriter, r *http.Request) {
	if !c.sameOrigin(r) { // no login CSRF: only the confirm page may post here
		c.render(rw, c.pages.notice, http.StatusForbidden, pageData{Title: "Web Chat", Error: "Cross-site sign-in refused."})
		return
	}
	token := r.PathValue("token")
	id := c.cookieID(r)
	channel, err := c.confirmLogin(r.Context(), token, sessionKey(id))
	if err != nil {
		c.loginFailed(rw, r, err)
		return
	}
	c.bindSession(rw, r, id, "", channel)
	c.log.Info("webchat: browser signed in by QR", "channel", channel, "chat_page", c.WebURL())
	http.Redirect(rw, r, c.base+"/", http.StatusSeeOther)
}

func (c *Connector) loginFailed(rw http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errLoginInvalid) {
		// A browser that already signed in (say, by this very link) gets a
		// way back to its chat.
		s, ok := c.session(r)
		c.render(rw, c.pages.login, http.StatusNotFound, pageData{Title: "Sign in to Web Chat", State: "invalid", SignedIn: ok && s.home != ""})
		return
	}
	c.log.Warn("webchat: login", "error", err)
	c.render(rw, c.pages.notice, http.StatusServiceUnavailable, pageData{Title: "Web Chat", Error: "Sign-in is not possible right now. Try again."})
}
