package connector

import (
	"sync"
	"time"

	"github.com/xconn/xconn/protocol"
)

// authSession is one live sign-in session. Fields are guarded by
// authTable.mu.
type authSession struct {
	id        string
	channelID string
	flowID    string
	flow      AuthFlow
	status    protocol.AuthStatus
	message   string
	expiresAt time.Time // session deadline (Options.AuthSessionTTL)

	// QR state.
	token       string
	qrText      string
	qrImage     string
	codeExpires time.Time
	prevStatus  protocol.ConnectionStatus // channel status before the session
	finishing   bool                      // a terminal transition is in progress
	data        *qrData                   // the flow's own state (WithQRData); shared by copies
}

// authTable holds live sign-in sessions, bounded by max. Safe for
// concurrent use.
type authTable struct {
	max int

	mu     sync.Mutex
	byID   map[string]*authSession
	tokens map[string]string // QR token -> session id
}

func newAuthTable(max int) *authTable {
	return &authTable{max: max, byID: map[string]*authSession{}, tokens: map[string]string{}}
}

// add stores a session; it reports false at the bound.
func (t *authTable) add(a *authSession) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.byID) >= t.max {
		return false
	}
	t.byID[a.id] = a
	if a.token != "" {
		t.tokens[a.token] = a.id
	}
	return true
}

// with runs f on the session id under the table lock.
func (t *authTable) with(id string, f func(a *authSession)) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.byID[id]
	if ok {
		f(a)
	}
	return ok
}

// byToken returns the id of the session holding a QR token.
func (t *authTable) byToken(token string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.tokens[token]
	return id, ok
}

// setToken replaces a session's QR token; the caller holds no lock.
func (t *authTable) setToken(id, token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.byID[id]
	if !ok {
		return
	}
	delete(t.tokens, a.token)
	a.token = token
	t.tokens[token] = id
}

func (t *authTable) remove(id string) (*authSession, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.byID[id]
	if ok {
		delete(t.byID, id)
		delete(t.tokens, a.token)
	}
	return a, ok
}

// dropChannel removes every session of a channel and returns their ids.
func (t *authTable) dropChannel(channelID string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ids []string
	for id, a := range t.byID {
		if a.channelID == channelID {
			delete(t.byID, id)
			delete(t.tokens, a.token)
			ids = append(ids, id)
		}
	}
	return ids
}

// expired removes sessions past their deadline plus keep, and returns them.
func (t *authTable) expired(now time.Time, keep time.Duration) []*authSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*authSession
	for id, a := range t.byID {
		if now.After(a.expiresAt.Add(keep)) {
			delete(t.byID, id)
			delete(t.tokens, a.token)
			out = append(out, a)
		}
	}
	return out
}

// len returns the number of live sessions.
func (t *authTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}

// ids returns the ids of the live sessions.
func (t *authTable) ids() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.byID))
	for id := range t.byID {
		out = append(out, id)
	}
	return out
}
