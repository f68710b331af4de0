package wecom

import (
	"encoding/xml"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/xconn/xconn/connectors/wecom/internal/wxcrypt"
	"github.com/xconn/xconn/protocol"
)

// The callback URL of a self-built application (接收消息与事件):
// GET verifies the URL when an administrator saves it (echostr decrypted
// and echoed); POST carries one message as <xml><ToUserName/><AgentID/>
// <Encrypt/></xml>, signed in the query. WeCom waits 5 seconds for the
// answer and otherwise retries, three times in all; the answer is sent
// only after the message is in the durable outbox (a failure answers
// 500, so that WeCom retries), and retries are deduplicated by MsgId.
//
// Refusals: no channel bound to the corp_id/agent_id of the path (404), a
// timestamp outside the replay window or a nonce already used (403), a bad
// msg_signature (401), a ciphertext that does not open with the key, or
// is for another receiveid (400). Nothing is published then, and each
// kind is logged once per replay window.

const (
	// maxCallbackBody bounds one callback request.
	maxCallbackBody = 256 << 10
	// maxCallbacksInFlight bounds the callbacks handled at once; beyond it
	// a callback gets 503 and WeCom retries it.
	maxCallbacksInFlight = 32
)

// Refusal kinds, as logged.
const (
	refuseUnbound   = "no channel bound to this application"
	refuseReplay    = "replay (timestamp outside the window or nonce reused)"
	refuseSignature = "bad msg_signature"
	refuseDecrypt   = "cannot decrypt (wrong EncodingAESKey)"
	refuseReceiver  = "wrong receiveid (another corp)"
	refuseMalformed = "malformed callback"
)

// envelopeXML is a POST body.
type envelopeXML struct {
	ToUserName string `xml:"ToUserName"`
	AgentID    string `xml:"AgentID"`
	Encrypt    string `xml:"Encrypt"`
}

func (c *Connector) callback(w http.ResponseWriter, r *http.Request) {
	select {
	case c.callbackSlots <- struct{}{}:
		defer func() { <-c.callbackSlots }()
	default:
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	now := time.Now()
	corp, agentStr := r.PathValue("corp"), r.PathValue("agent")
	agent, err := strconv.Atoi(agentStr)
	key := appKey(corp, agent)
	where := []any{"corp_id", clip(corp), "agent_id", clip(agentStr), "remote", r.RemoteAddr}
	refuse := func(kind string, status int) {
		c.guard.refused(kind, now, where...)
		http.Error(w, http.StatusText(status), status)
	}
	if err != nil {
		refuse(refuseUnbound, http.StatusNotFound)
		return
	}
	m := c.apps.Members(key)
	chans := m.Channels()
	if len(chans) == 0 {
		refuse(refuseUnbound, http.StatusNotFound)
		return
	}
	mb := chans[0]
	cl, err := c.clients.Get(mb.Channel)
	if err != nil || cl.crypt == nil {
		// Signed in but its client is not up yet (a restore in
		// progress): WeCom retries.
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	q := r.URL.Query()
	sig, tsStr, nonce := q.Get("msg_signature"), q.Get("timestamp"), q.Get("nonce")
	ts, err := strconv.ParseInt(tsStr, 10, 64)
	if err != nil || !c.guard.fresh(time.Unix(ts, 0), now) {
		refuse(refuseReplay, http.StatusForbidden)
		return
	}
	nonceKey := key + "\x00" + nonce
	if r.Method == http.MethodGet {
		// The URL verification: echostr decrypted, its msg echoed as is.
		msg, err := cl.crypt.Open(sig, tsStr, nonce, q.Get("echostr"))
		if err != nil {
			refuse(refusalOf(err), statusOf(err))
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write(msg)
		return
	}
	if c.guard.seen(nonceKey, now) {
		refuse(refuseReplay, http.StatusForbidden)
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxCallbackBody+1))
	var env envelopeXML
	if err != nil || len(raw) > maxCallbackBody || xml.Unmarshal(raw, &env) != nil || env.Encrypt == "" {
		refuse(refuseMalformed, http.StatusBadRequest)
		return
	}
	plain, err := cl.crypt.Open(sig, tsStr, nonce, env.Encrypt)
	if err != nil {
		refuse(refusalOf(err), statusOf(err))
		return
	}
	if err := c.handleAppMessage(r.Context(), mb, plain); err != nil {
		if perr := protocol.AsError(err); perr != nil && perr.Code == protocol.CodeConnectionNotAuthenticated {
			// The channel signed out meanwhile: nothing will take it.
			w.WriteHeader(http.StatusOK)
			return
		}
		c.log.Warn("wecom: callback not handled (WeCom retries it)", append(where[:4:4], "err", err)...)
		http.Error(w, "not handled", http.StatusInternalServerError)
		return
	}
	c.guard.record(nonceKey, now)
	w.WriteHeader(http.StatusOK) // an empty answer: no passive reply
}

func refusalOf(err error) string {
	switch wxcrypt.KindOf(err) {
	case wxcrypt.KindSignature:
		return refuseSignature
	case wxcrypt.KindReceiver:
		return refuseReceiver
	}
	return refuseDecrypt
}

func statusOf(err error) int {
	if wxcrypt.KindOf(err) == wxcrypt.KindSignature {
		return http.StatusUnauthorized
	}
	return http.StatusBadRequest
}

// clip bounds a value from the request before it is logged.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
