package slacktest

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxFormBytes bounds a Web API request body (uploads excepted).
const maxFormBytes = 1 << 20

// params reads a Web API call's parameters: the query, then a form
// (urlencoded or multipart) or a JSON object body.
func params(r *http.Request) (url.Values, error) {
	v := url.Values{}
	for k, vs := range r.URL.Query() {
		v[k] = vs
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	body := http.MaxBytesReader(nil, r.Body, maxFormBytes)
	switch ct {
	case "application/json":
		raw, err := io.ReadAll(body)
		if err != nil {
			return nil, err
		}
		if len(strings.TrimSpace(string(raw))) == 0 {
			return v, nil
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		for k, x := range m {
			switch x := x.(type) {
			case string:
				v.Set(k, x)
			case nil:
			default:
				b, _ := json.Marshal(x)
				v.Set(k, string(b))
			}
		}
	case "multipart/form-data":
		r.Body = body
		if err := r.ParseMultipartForm(maxFormBytes); err != nil {
			return nil, err
		}
		for k, vs := range r.MultipartForm.Value {
			v[k] = vs
		}
	default:
		raw, err := io.ReadAll(body)
		if err != nil {
			return nil, err
		}
		f, err := url.ParseQuery(string(raw))
		if err != nil {
			return nil, err
		}
		for k, vs := range f {
			v[k] = vs
		}
	}
	return v, nil
}

// token is the call's token: the Authorization header's bearer, else the
// token parameter.
func token(r *http.Request, v url.Values) string {
	if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && t != "" {
		return t
	}
	return v.Get("token")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func ok(w http.ResponseWriter, fields map[string]any) {
	if fields == nil {
		fields = map[string]any{}
	}
	fields["ok"] = true
	writeJSON(w, http.StatusOK, fields)
}

func fail(w http.ResponseWriter, code string) {
	writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": code})
}

// serveAPI serves one Web API method.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, method string) {
	v, err := params(r)
	if err != nil {
		fail(w, "invalid_form_data")
		return
	}
	tok := token(r, v)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[method]++
	if f, hit := s.failure(method); hit {
		if f.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(f.retryAfter))
			writeJSON(w, http.StatusTooManyRequests, map[string]any{"ok": false, "error": "ratelimited"})
			return
		}
		fail(w, f.err)
		return
	}
	if method == "apps.connections.open" {
		s.connectionsOpen(w, tok)
		return
	}
	if tok == "" {
		fail(w, "not_authed")
		return
	}
	a := s.bots[tok]
	if a == nil {
		if s.apps[tok] != nil {
			fail(w, "not_allowed_token_type")
			return
		}
		fail(w, "invalid_auth")
		return
	}
	if a.botRevoked {
		fail(w, "token_revoked")
		return
	}
	switch method {
	case "auth.test":
		ok(w, map[string]any{"url": "https://" + strings.ToLower(a.Team) + ".slack.com/", "team": a.Team, "user": a.BotName,
			"team_id": a.TeamID, "user_id": a.BotUserID, "bot_id": a.BotID, "is_enterprise_install": false})
	case "chat.postMessage":
		s.postMessage(w, a, v)
	case "chat.update":
		s.update(w, a, v)
	case "chat.delete":
		s.delete(w, a, v)
	case "assistant.threads.setStatus":
		s.setStatus(w, v)
	case "conversations.history":
		s.history(w, a, v, false)
	case "conversations.replies":
		s.history(w, a, v, true)
	case "conversations.info":
		c, e := s.conv(v.Get("channel"))
		if e != "" {
			fail(w, e)
			return
		}
		ok(w, map[string]any{"channel": map[string]any{"id": c.ID, "name": c.Name, "is_im": c.channelType() == "im",
			"is_channel": c.channelType() == "channel", "is_private": c.channelType() == "group", "is_member": !c.NotMember, "user": c.User}})
	case "files.getUploadURLExternal":
		s.getUploadURL(w, v)
	case "files.completeUploadExternal":
		s.completeUpload(w, a, v)
	default:
		fail(w, "unknown_method")
	}
}

// failure pops the failure planned for this call of method, if any.
func (s *Server) failure(method string) (failure, bool) {
	l := s.fails[method]
	for i := range l {
		l[i].nth--
	}
	for i, f := range l {
		if f.nth <= 0 {
			s.fails[method] = slices.Delete(l, i, i+1)
			return f, true
		}
	}
	return failure{}, false
}

// conv finds a conversation the bot is a member of.
func (s *Server) conv(id string) (*Conversation, string) {
	c := s.convs[id]
	switch {
	case id == "":
		return nil, "channel_not_found"
	case c == nil:
		return nil, "channel_not_found"
	case c.NotMember:
		return nil, "not_in_channel"
	}
	return c, ""
}

func (s *Server) connectionsOpen(w http.ResponseWriter, tok string) {
	a := s.apps[tok]
	switch {
	case tok == "":
		fail(w, "not_authed")
		return
	case a == nil && s.bots[tok] != nil:
		fail(w, "not_allowed_token_type")
		return
	case a == nil:
		fail(w, "invalid_auth")
		return
	case a.appRevoked:
		fail(w, "token_revoked")
		return
	}
	s.nextID++
	ticket := fmt.Sprintf("ticket-%d-%s", s.nextID, a.AppID)
	a.tickets[ticket] = true
	u := "ws" + strings.TrimPrefix(s.base, "http") + "/link/?ticket=" + url.QueryEscape(ticket) + "&app_id=" + url.QueryEscape(a.AppID)
	ok(w, map[string]any{"url": u})
}

// checkText refuses an empty or too long text (blocks and attachments
// are not modelled).
func checkText(v url.Values) string {
	t := v.Get("text")
	switch {
	case t == "" && v.Get("blocks") == "" && v.Get("attachments") == "":
		return "no_text"
	case utf8.RuneCountInString(t) > MaxTextLen:
		return "msg_too_long"
	}
	return ""
}

func (s *Server) postMessage(w http.ResponseWriter, a *appState, v url.Values) {
	c, e := s.conv(v.Get("channel"))
	if e == "" {
		e = checkText(v)
	}
	thread := v.Get("thread_ts")
	if e == "" && thread != "" && s.find(c.ID, thread) == nil {
		e = "thread_not_found"
	}
	if e != "" {
		fail(w, e)
		return
	}
	m := &Message{Channel: c.ID, TS: s.nextTS(), ThreadTS: thread, User: a.BotUserID, BotID: a.BotID, Text: v.Get("text")}
	s.appendMessage(m)
	s.botPosted(m)
	s.notify()
	ok(w, map[string]any{"channel": c.ID, "ts": m.TS, "message": s.messageJSON(m)})
}

// find returns the live message ts of conv.
func (s *Server) find(conv, ts string) *Message {
	for _, m := range s.msgs[conv] {
		if m.TS == ts && !m.Deleted {
			return m
		}
	}
	return nil
}

func (s *Server) update(w http.ResponseWriter, a *appState, v url.Values) {
	c, e := s.conv(v.Get("channel"))
	if e == "" {
		e = checkText(v)
	}
	var m *Message
	if e == "" {
		if m = s.find(c.ID, v.Get("ts")); m == nil {
			e = "message_not_found"
		} else if m.BotID != a.BotID {
			e = "cant_update_message"
		}
	}
	if e != "" {
		fail(w, e)
		return
	}
	if t := v.Get("text"); t != m.Text {
		m.Edits = append(m.Edits, m.Text)
		m.Text = t
	}
	s.notify()
	ok(w, map[string]any{"channel": c.ID, "ts": m.TS, "text": m.Text, "message": s.messageJSON(m)})
}

func (s *Server) delete(w http.ResponseWriter, a *appState, v url.Values) {
	c, e := s.conv(v.Get("channel"))
	var m *Message
	if e == "" {
		if m = s.find(c.ID, v.Get("ts")); m == nil {
			e = "message_not_found"
		} else if m.BotID != a.BotID {
			e = "cant_delete_message"
		}
	}
	if e != "" {
		fail(w, e)
		return
	}
	m.Deleted = true
	s.notify()
	ok(w, map[string]any{"channel": c.ID, "ts": m.TS})
}

// setStatus records the status of a thread (an existing message's ts);
// an empty status clears it.
func (s *Server) setStatus(w http.ResponseWriter, v url.Values) {
	c, e := s.conv(v.Get("channel_id"))
	if e == "" && s.find(c.ID, v.Get("thread_ts")) == nil {
		e = "invalid_thread_ts"
	}
	if e != "" {
		fail(w, e)
		return
	}
	k := c.ID + "/" + v.Get("thread_ts")
	if l := s.statuses[k]; len(l) < MaxMessages {
		s.statuses[k] = append(l, v.Get("status"))
	}
	s.notify()
	ok(w, nil)
}

// tsLess orders two message timestamps ("seconds.micros").
func tsLess(a, b string) bool {
	as, af, _ := strings.Cut(a, ".")
	bs, bf, _ := strings.Cut(b, ".")
	ai, _ := strconv.ParseInt(as, 10, 64)
	bi, _ := strconv.ParseInt(bs, 10, 64)
	if ai != bi {
		return ai < bi
	}
	return af < bf
}

// history serves conversations.history (top-level messages, newest first)
// and conversations.replies (a thread, parent first, oldest first), with
// oldest, latest, inclusive, limit and cursor paging.
func (s *Server) history(w http.ResponseWriter, _ *appState, v url.Values, replies bool) {
	c, e := s.conv(v.Get("channel"))
	if e != "" {
		fail(w, e)
		return
	}
	oldest, latest, inclusive := v.Get("oldest"), v.Get("latest"), v.Get("inclusive") == "true" || v.Get("inclusive") == "1"
	limit, _ := strconv.Atoi(v.Get("limit"))
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 999)
	parent := v.Get("ts")
	if replies && s.find(c.ID, parent) == nil {
		fail(w, "thread_not_found")
		return
	}
	var list []*Message
	for _, m := range s.msgs[c.ID] {
		if m.Deleted {
			continue
		}
		if replies && m.TS != parent && m.ThreadTS != parent {
			continue
		}
		if !replies && m.ThreadTS != "" && m.ThreadTS != m.TS {
			continue // thread replies are not in the channel's history
		}
		if oldest != "" && (tsLess(m.TS, oldest) || (!inclusive && m.TS == oldest)) && !(replies && m.TS == parent) {
			continue
		}
		if latest != "" && (tsLess(latest, m.TS) || (!inclusive && m.TS == latest)) {
			continue
		}
		list = append(list, m)
	}
	if !replies {
		slices.Reverse(list)
	}
	start, _ := strconv.Atoi(strings.TrimPrefix(v.Get("cursor"), "next:"))
	start = max(0, min(start, len(list)))
	end := min(start+limit, len(list))
	page := list[start:end]
	out := make([]any, 0, len(page))
	for _, m := range page {
		j := s.messageJSON(m)
		if !replies {
			n, last := 0, ""
			for _, r := range s.msgs[c.ID] {
				if r.ThreadTS == m.TS && r.TS != m.TS && !r.Deleted {
					n, last = n+1, r.TS
				}
			}
			if n > 0 {
				j["thread_ts"], j["reply_count"], j["latest_reply"] = m.TS, n, last
			}
		}
		out = append(out, j)
	}
	res := map[string]any{"messages": out, "has_more": end < len(list), "pin_count": 0}
	if end < len(list) {
		res["response_metadata"] = map[string]any{"next_cursor": "next:" + strconv.Itoa(end)}
	} else {
		res["response_metadata"] = map[string]any{"next_cursor": ""}
	}
	ok(w, res)
}

func (s *Server) getUploadURL(w http.ResponseWriter, v url.Values) {
	name := v.Get("filename")
	n, err := strconv.Atoi(v.Get("length"))
	switch {
	case name == "":
		fail(w, "invalid_arguments")
		return
	case err != nil || n <= 0 || n > MaxFileBytes:
		fail(w, "invalid_arguments")
		return
	}
	s.nextID++
	id := fmt.Sprintf("F%08d", s.nextID)
	s.uploads[id] = &pendingUpload{file: &File{ID: id, Name: name, Title: name}, length: n}
	ok(w, map[string]any{"upload_url": s.base + "/upload/v1/" + id, "file_id": id})
}

// serveUpload takes the bytes of a file at its upload URL: a raw body or
// a multipart form with the file under "file", as Slack accepts both.
func (s *Server) serveUpload(w http.ResponseWriter, r *http.Request, id string) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body := http.MaxBytesReader(w, r.Body, MaxFileBytes+1<<20)
	var data []byte
	var mt string
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "multipart/form-data" {
		r.Body = body
		if err := r.ParseMultipartForm(8 << 20); err != nil {
			http.Error(w, "bad multipart", http.StatusBadRequest)
			return
		}
		f, h, err := r.FormFile("file")
		if err != nil {
			http.Error(w, "no file", http.StatusBadRequest)
			return
		}
		defer f.Close()
		data, err = io.ReadAll(f)
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		mt = h.Header.Get("Content-Type")
	} else {
		var err error
		if data, err = io.ReadAll(body); err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		mt = ct
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.uploads[id]
	if u == nil || u.done {
		http.Error(w, "unknown upload", http.StatusNotFound)
		return
	}
	u.file.Data, u.done = data, true
	if mt == "" || mt == "application/octet-stream" {
		mt = http.DetectContentType(data)
		if i := strings.IndexByte(mt, ';'); i >= 0 {
			mt = mt[:i]
		}
	}
	u.file.MimeType = mt
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(w, "OK - %d", len(data))
}

func (s *Server) completeUpload(w http.ResponseWriter, a *appState, v url.Values) {
	var items []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal([]byte(v.Get("files")), &items); err != nil || len(items) == 0 {
		fail(w, "invalid_arguments")
		return
	}
	var files []*File
	for _, it := range items {
		u := s.uploads[it.ID]
		if u == nil || !u.done {
			fail(w, "file_not_found")
			return
		}
		if len(u.file.Data) != u.length {
			fail(w, "file_upload_size_mismatch")
			return
		}
		if it.Title != "" {
			u.file.Title = it.Title
		}
		files = append(files, u.file)
	}
	channel := v.Get("channel_id")
	if channel == "" {
		channel, _, _ = strings.Cut(v.Get("channels"), ",")
	}
	var out []any
	for _, f := range files {
		delete(s.uploads, f.ID)
		s.files[f.ID] = f
		out = append(out, map[string]any{"id": f.ID, "title": f.Title})
	}
	if channel != "" {
		c, e := s.conv(channel)
		if e != "" {
			fail(w, e)
			return
		}
		thread := v.Get("thread_ts")
		if thread != "" && s.find(c.ID, thread) == nil {
			fail(w, "thread_not_found")
			return
		}
		m := &Message{Channel: c.ID, TS: s.nextTS(), ThreadTS: thread, User: a.BotUserID, BotID: a.BotID,
			Text: v.Get("initial_comment"), Files: files}
		s.appendMessage(m)
		s.botPosted(m)
		s.notify()
	}
	ok(w, map[string]any{"files": out})
}

// serveFile serves a file's url_private to a request with a valid bot
// token; without one, Slack redirects to the workspace's sign-in page
// (redir names the file), as the fake does.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, rest string) {
	id, _, _ := strings.Cut(rest, "/")
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	a := s.bots[tok]
	f := s.files[id]
	s.mu.Unlock()
	if a == nil || a.botRevoked {
		http.Redirect(w, r, "/?redir="+url.QueryEscape(r.URL.Path), http.StatusFound)
		return
	}
	if f == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.MimeType)
	w.Header().Set("Content-Length", strconv.Itoa(len(f.Data)))
	_, _ = w.Write(f.Data)
}
