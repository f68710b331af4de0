package wechattest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRequests bounds Requests; maxSent bounds the sent messages and typing
// events kept per account.
const (
	maxRequests = 10000
	maxSent     = 10000
)

// account is one bot account minted by a confirmed QR code.
type account struct {
	token, botID, owner string
	expired             bool
	msgs                []Message // retained inbound messages
	first               int       // index of msgs[0]
	wake                chan struct{}
	cursors             map[string]bool
	sent                []Sent
	typing              []Typing
	tickets             map[string]bool
	starts, stops       int
	sendRets            []int
	staleContext        bool
	contexts            map[string]string // peer → latest context_token issued
}

// Sent is one sendmessage the bot made.
type Sent struct {
	To           string      `json:"to"`
	ClientID     string      `json:"client_id"`
	ContextToken string      `json:"context_token,omitempty"`
	Item         MessageItem `json:"item"`
	// Text is the item's text; Media the decrypted bytes of a media item
	// and FileName its file name.
	Text     string    `json:"text,omitempty"`
	Media    []byte    `json:"media,omitempty"`
	FileName string    `json:"file_name,omitempty"`
	Ret      int       `json:"ret"`
	At       time.Time `json:"at"`
}

// Typing is one sendtyping call.
type Typing struct {
	User   string `json:"user"`
	Status int    `json:"status"`
}

type botHandler func(w http.ResponseWriter, r *http.Request, a *account, body []byte)

// envelope answers a bot call.
type envelope struct {
	Ret     int    `json:"ret"`
	ErrCode int    `json:"errcode,omitempty"`
	ErrMsg  string `json:"errmsg"`
}

// sessionTimeout is the -14 answer (the errmsg text is ours, §15).
func sessionTimeout() envelope { return envelope{Ret: -14, ErrCode: -14, ErrMsg: "session timeout"} }

// bot checks what every bot endpoint requires (§2, §3) and finds the
// account of the bearer token.
func (s *Server) bot(h botHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		uin := r.Header.Get("X-WECHAT-UIN")
		s.mu.Lock()
		s.requests = append(s.requests, Request{Path: r.URL.Path, UIN: uin})
		if len(s.requests) > maxRequests {
			s.requests = s.requests[1:]
		}
		s.mu.Unlock()
		if r.Header.Get("iLink-App-Id") == "" || r.Header.Get("iLink-App-ClientVersion") == "" {
			// Reportedly answered with -14 even for a valid token (§2).
			s.mu.Lock()
			s.violations = append(s.violations, r.URL.Path+": missing iLink-App-Id or iLink-App-ClientVersion")
			s.mu.Unlock()
			writeJSON(w, sessionTimeout())
			return
		}
		if !s.checkCommon(w, r) {
			return
		}
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			s.violate(w, r, "Content-Type %q", ct)
			return
		}
		if v := r.Header.Get("AuthorizationType"); v != "ilink_bot_token" {
			s.violate(w, r, "AuthorizationType %q", v)
			return
		}
		digits, err := base64.StdEncoding.DecodeString(uin)
		if _, perr := strconv.ParseUint(string(digits), 10, 32); err != nil || perr != nil {
			s.violate(w, r, "X-WECHAT-UIN %q is not base64 of a decimal uint32", uin)
			return
		}
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		a := s.accounts[token]
		s.mu.Unlock()
		if !ok || a == nil {
			s.violate(w, r, "unknown bearer token")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			s.violate(w, r, "body: %v", err)
			return
		}
		var bi struct {
			BaseInfo *baseInfo `json:"base_info"`
		}
		if err := json.Unmarshal(body, &bi); err != nil || bi.BaseInfo == nil || bi.BaseInfo.ChannelVersion == "" || bi.BaseInfo.BotAgent == "" {
			s.violate(w, r, "base_info missing or incomplete")
			return
		}
		s.mu.Lock()
		expired := a.expired
		s.mu.Unlock()
		if expired {
			writeJSON(w, sessionTimeout())
			return
		}
		h(w, r, a, body)
	}
}

// ExpireSession makes every later call of the bot (the latest account
// when botID is "") answer errcode -14, and ends its held long polls.
func (s *Server) ExpireSession(botID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.accountLocked(botID)
	if err != nil {
		return err
	}
	a.expired = true
	close(a.wake)
	a.wake = make(chan struct{})
	return nil
}

// FailSends makes the next sendmessage calls of the bot answer the given
// rets in order (for example -2, "prepare failed").
func (s *Server) FailSends(botID string, rets ...int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.accountLocked(botID)
	if err == nil {
		a.sendRets = append(a.sendRets, rets...)
	}
	return err
}

// StaleContext makes sendmessage answer ret -2 ("prepare failed")
// whenever it carries a context_token, as a stale token reportedly does.
func (s *Server) StaleContext(botID string, on bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.accountLocked(botID)
	if err == nil {
		a.staleContext = on
	}
	return err
}

func (s *Server) accountLocked(botID string) (*account, error) {
	if botID == "" {
		botID = s.lastBot
	}
	a := s.byBot[botID]
	if a == nil {
		return nil, errNoAccount
	}
	return a, nil
}

// Account describes a bot account of the fake.
type Account struct {
	BotID, Owner, Token string
	NotifyStarts        int
	NotifyStops         int
	Expired             bool
}

// Account returns the bot account botID ("" for the latest).
func (s *Server) Account(botID string) (Account, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.accountLocked(botID)
	if err != nil {
		return Account{}, err
	}
	return Account{BotID: a.botID, Owner: a.owner, Token: a.token, NotifyStarts: a.starts, NotifyStops: a.stops, Expired: a.expired}, nil
}

// Sent returns what the bot botID ("" for the latest) sent.
func (s *Server) Sent(botID string) []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.accountLocked(botID)
	if err != nil {
		return nil
	}
	return append([]Sent(nil), a.sent...)
}

// TypingEvents returns the bot's sendtyping calls.
func (s *Server) TypingEvents(botID string) []Typing {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.accountLocked(botID)
	if err != nil {
		return nil
	}
	return append([]Typing(nil), a.typing...)
}

// cursor makes an opaque get_updates_buf for index i.
func (s *Server) cursorLocked(a *account, i int) string {
	c := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%d:%s", i, randHex(4)))
	if len(a.cursors) > 10000 {
		clear(a.cursors)
	}
	a.cursors[c] = true
	return c
}

func cursorIndex(c string) (int, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	n, _, ok := strings.Cut(string(b), ":")
	i, err := strconv.Atoi(n)
	return i, ok && err == nil
}

func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, a *account, body []byte) {
	var req struct {
		Buf *string `json:"get_updates_buf"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Buf == nil {
		s.violate(w, r, "get_updates_buf missing")
		return
	}
	s.mu.Lock()
	from := a.first
	if *req.Buf != "" {
		i, ok := cursorIndex(*req.Buf)
		if !ok || !a.cursors[*req.Buf] {
			s.mu.Unlock()
			s.violate(w, r, "unknown get_updates_buf")
			return
		}
		from = max(i, a.first)
	}
	s.mu.Unlock()
	timer := time.NewTimer(s.opts.LongPoll)
	defer timer.Stop()
	for {
		s.mu.Lock()
		if a.expired {
			s.mu.Unlock()
			writeJSON(w, sessionTimeout())
			return
		}
		end := a.first + len(a.msgs)
		if from < end {
			msgs := append([]Message(nil), a.msgs[from-a.first:]...)
			next := s.cursorLocked(a, end)
			s.mu.Unlock()
			writeJSON(w, map[string]any{"ret": 0, "errmsg": "", "msgs": msgs, "get_updates_buf": next,
				"longpolling_timeout_ms": s.opts.LongPoll.Milliseconds()})
			return
		}
		wake := a.wake
		s.mu.Unlock()
		select {
		case <-wake:
		case <-timer.C:
			s.mu.Lock()
			next := s.cursorLocked(a, from)
			s.mu.Unlock()
			writeJSON(w, map[string]any{"ret": 0, "errmsg": "", "msgs": []Message{}, "get_updates_buf": next,
				"longpolling_timeout_ms": s.opts.LongPoll.Milliseconds()})
			return
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		}
	}
}

func (s *Server) notify(start bool) botHandler {
	return func(w http.ResponseWriter, r *http.Request, a *account, body []byte) {
		s.mu.Lock()
		if start {
			a.starts++
		} else {
			a.stops++
		}
		s.mu.Unlock()
		writeJSON(w, envelope{})
	}
}

func (s *Server) getConfig(w http.ResponseWriter, r *http.Request, a *account, body []byte) {
	var req struct {
		User string `json:"ilink_user_id"`
	}
	if json.Unmarshal(body, &req) != nil || req.User == "" {
		s.violate(w, r, "ilink_user_id missing")
		return
	}
	t := "tt_" + randHex(8)
	s.mu.Lock()
	if a.tickets == nil || len(a.tickets) > 10000 {
		a.tickets = map[string]bool{}
	}
	a.tickets[t] = true
	s.mu.Unlock()
	writeJSON(w, map[string]any{"ret": 0, "errmsg": "", "typing_ticket": base64.StdEncoding.EncodeToString([]byte(t))})
}

func (s *Server) sendTyping(w http.ResponseWriter, r *http.Request, a *account, body []byte) {
	var req struct {
		User   string `json:"ilink_user_id"`
		Ticket string `json:"typing_ticket"`
		Status int    `json:"status"`
	}
	if json.Unmarshal(body, &req) != nil || req.User == "" || (req.Status != 1 && req.Status != 2) {
		s.violate(w, r, "sendtyping wants ilink_user_id and status 1 or 2")
		return
	}
	t, _ := base64.StdEncoding.DecodeString(req.Ticket)
	s.mu.Lock()
	known := a.tickets[string(t)]
	if known && len(a.typing) < maxSent {
		a.typing = append(a.typing, Typing{User: req.User, Status: req.Status})
	}
	s.mu.Unlock()
	if !known {
		s.violate(w, r, "unknown typing_ticket")
		return
	}
	writeJSON(w, envelope{})
}

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request, a *account, body []byte) {
	var req struct {
		Msg *Message `json:"msg"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Msg == nil {
		s.violate(w, r, "msg missing")
		return
	}
	m := req.Msg
	switch {
	case m.ToUserID == "":
		s.violate(w, r, "to_user_id missing")
		return
	case m.ClientID == "":
		s.violate(w, r, "client_id missing")
		return
	case m.MessageType != 2 || m.MessageState != 2:
		s.violate(w, r, "message_type %d, message_state %d; want 2 and 2", m.MessageType, m.MessageState)
		return
	case len(m.ItemList) != 1:
		s.violate(w, r, "%d items; one item per sendmessage", len(m.ItemList))
		return
	}
	sent := Sent{To: m.ToUserID, ClientID: m.ClientID, ContextToken: m.ContextToken, Item: m.ItemList[0], At: time.Now()}
	it := m.ItemList[0]
	var media *CDNMedia
	switch {
	case it.Type == ItemText && it.TextItem != nil:
		sent.Text = it.TextItem.Text
	case it.Type == ItemImage && it.ImageItem != nil:
		media = it.ImageItem.Media
	case it.Type == ItemFile && it.FileItem != nil:
		media, sent.FileName = it.FileItem.Media, it.FileItem.FileName
	case it.Type == ItemVideo && it.VideoItem != nil:
		media = it.VideoItem.Media
	case it.Type == ItemVoice && it.VoiceItem != nil:
		media = it.VoiceItem.Media
	default:
		s.violate(w, r, "item type %d without its payload", it.Type)
		return
	}
	if media != nil {
		plain, err := s.openMedia(media)
		if err != nil {
			s.violate(w, r, "media: %v", err)
			return
		}
		sent.Media = plain
	}
	s.mu.Lock()
	ret := 0
	switch {
	case len(a.sendRets) > 0:
		ret, a.sendRets = a.sendRets[0], a.sendRets[1:]
	case a.staleContext && m.ContextToken != "":
		ret = -2
	}
	sent.Ret = ret
	if len(a.sent) < maxSent {
		a.sent = append(a.sent, sent)
	}
	if ret == -14 {
		a.expired = true
	}
	s.mu.Unlock()
	switch ret {
	case 0:
		writeJSON(w, envelope{})
	case -2:
		writeJSON(w, envelope{Ret: -2, ErrMsg: "prepare failed"})
	case -14:
		writeJSON(w, sessionTimeout())
	default:
		writeJSON(w, envelope{Ret: ret, ErrMsg: "injected failure"})
	}
}

// Delivered returns the sent messages that the fake accepted (ret 0).
func (s *Server) Delivered(botID string) []Sent {
	var out []Sent
	for _, m := range s.Sent(botID) {
		if m.Ret == 0 {
			out = append(out, m)
		}
	}
	return out
}

// openMedia decrypts a stored CDN object with the key of media, accepting
// both aes_key encodings.
func (s *Server) openMedia(m *CDNMedia) ([]byte, error) {
	s.mu.Lock()
	o := s.objects[m.EncryptQueryParam]
	s.mu.Unlock()
	if o == nil {
		return nil, fmt.Errorf("unknown encrypt_query_param")
	}
	key, err := DecodeKey(m.AESKey)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(key, o.key) {
		return nil, fmt.Errorf("aes_key does not match the uploaded object's key")
	}
	return Decrypt(key, o.ct)
}
