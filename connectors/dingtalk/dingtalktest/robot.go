package dingtalktest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Conversation types of a bot message.
const (
	ConversationSingle = "1"
	ConversationGroup  = "2"
)

// Message is a user message to a robot, for Say.
type Message struct {
	ClientID string
	// ConversationID is the conversation (default "cid-" + the sender's
	// staff id for 1:1, required for a group).
	ConversationID string
	// ConversationType is ConversationSingle (default) or
	// ConversationGroup.
	ConversationType string
	// SenderStaffID and SenderNick are the writer (default "alice",
	// "Alice").
	SenderStaffID string
	SenderNick    string
	// Type is the msgtype: "text" (default), "picture", "file",
	// "richText", "audio".
	Type string
	// Text is a text message's content (DingTalk keeps the leading
	// space left where a group @-mention was cut out).
	Text string
	// DownloadCode and FileName describe a picture's or file's content
	// (AddFile returns a code); RichText is a richText's parts.
	DownloadCode string
	FileName     string
	RichText     []map[string]string
	// AtBot marks a group message that @-mentions the robot (isInAtList).
	AtBot bool
	// ID is the msgId (default a new one).
	ID string
}

// BotMessage returns the data of the CALLBACK push of m (the documented
// receive-message fields), and registers its sessionWebhook.
func (s *Server) BotMessage(m Message) (data string, msgID string) {
	if m.ConversationType == "" {
		m.ConversationType = ConversationSingle
	}
	if m.SenderStaffID == "" {
		m.SenderStaffID = "alice"
	}
	if m.SenderNick == "" {
		m.SenderNick = "Alice"
	}
	if m.ConversationID == "" {
		m.ConversationID = "cid-" + m.SenderStaffID
	}
	if m.Type == "" {
		m.Type = "text"
	}
	if m.ID == "" {
		m.ID = newID("msg")
	}
	s.mu.Lock()
	a := s.apps[m.ClientID]
	sess := newID("sess")
	exp := time.Now().Add(SessionTTL)
	s.sessions[sess] = session{clientID: m.ClientID, conv: m.ConversationID, user: m.SenderStaffID, exp: exp}
	s.mu.Unlock()
	d := map[string]any{
		"conversationId": m.ConversationID, "chatbotCorpId": "dingcorp", "chatbotUserId": "$:LWCP_v1:$bot",
		"msgId": m.ID, "senderNick": m.SenderNick, "isAdmin": false, "senderStaffId": m.SenderStaffID,
		"sessionWebhookExpiredTime": exp.UnixMilli(), "createAt": time.Now().UnixMilli(), "senderCorpId": "dingcorp",
		"conversationType": m.ConversationType, "senderId": "$:LWCP_v1:$" + m.SenderStaffID,
		"sessionWebhook": s.hs.URL + PathSession + "?session=" + sess, "robotCode": a.RobotCode, "msgtype": m.Type,
	}
	if m.ConversationType == ConversationGroup {
		d["conversationTitle"] = "Test group"
		d["isInAtList"] = m.AtBot
		if m.AtBot {
			d["atUsers"] = []map[string]string{{"dingtalkId": "$:LWCP_v1:$bot"}}
		}
	}
	switch m.Type {
	case "text":
		d["text"] = map[string]string{"content": m.Text}
	case "picture":
		d["content"] = map[string]string{"downloadCode": m.DownloadCode, "pictureDownloadCode": m.DownloadCode}
	case "file":
		d["content"] = map[string]string{"downloadCode": m.DownloadCode, "fileName": m.FileName}
	case "audio":
		d["content"] = map[string]any{"downloadCode": m.DownloadCode, "duration": 3000, "recognition": m.Text}
	case "richText":
		d["content"] = map[string]any{"richText": m.RichText}
	}
	b, _ := json.Marshal(d)
	return string(b), m.ID
}

// Say pushes m over the newest Stream connection of its app and returns
// the msgId and the client's response (its code is 200 on success).
// Without a connection it returns ErrNotConnected: like DingTalk, the
// fake keeps nothing for later.
func (s *Server) Say(ctx context.Context, m Message) (string, Response, error) {
	sc := s.latest(m.ClientID)
	if sc == nil {
		return "", Response{}, ErrNotConnected
	}
	data, id := s.BotMessage(m)
	resp, err := s.push(ctx, sc, TypeCallback, TopicBotMessage, data)
	return id, resp, err
}

// record appends m to the sent messages (bounded).
func (s *Server) record(m Sent) int {
	m.At = time.Now()
	if len(s.sent) >= MaxSent {
		s.sent = s.sent[1:]
		for k, i := range s.cards {
			if i == 0 {
				delete(s.cards, k)
			} else {
				s.cards[k] = i - 1
			}
		}
	}
	s.sent = append(s.sent, m)
	return len(s.sent) - 1
}

// msgParam reads a robot API message's msgParam for msgKey.
func msgParam(key, param string) (Sent, bool) {
	var p struct {
		Content  string `json:"content"`
		Title    string `json:"title"`
		Text     string `json:"text"`
		PhotoURL string `json:"photoURL"`
		MediaID  string `json:"mediaId"`
		FileName string `json:"fileName"`
		FileType string `json:"fileType"`
	}
	if json.Unmarshal([]byte(param), &p) != nil {
		return Sent{}, false
	}
	m := Sent{Kind: key}
	switch key {
	case "sampleText":
		m.Text = p.Content
		return m, p.Content != ""
	case "sampleMarkdown":
		m.Text = p.Text
		return m, p.Text != "" && p.Title != ""
	case "sampleImageMsg":
		m.MediaID = p.PhotoURL
		return m, p.PhotoURL != ""
	case "sampleFile":
		m.MediaID, m.FileName = p.MediaID, p.FileName
		return m, p.MediaID != "" && p.FileName != "" && p.FileType != ""
	}
	return Sent{}, false
}

// robotSend is oToMessages/batchSend (route "oto") and
// groupMessages/send (route "group").
func (s *Server) robotSend(w http.ResponseWriter, r *http.Request, route string) {
	s.count(route)
	a, ok := s.auth(w, r)
	if !ok || s.injected(w, r.URL.Path) {
		return
	}
	var in struct {
		RobotCode          string   `json:"robotCode"`
		UserIDs            []string `json:"userIds"`
		OpenConversationID string   `json:"openConversationId"`
		MsgKey             string   `json:"msgKey"`
		MsgParam           string   `json:"msgParam"`
	}
	if err := decode(r, &in); err != nil {
		apiError(w, http.StatusBadRequest, "InvalidParameter", "body is not JSON")
		return
	}
	if in.RobotCode != a.RobotCode {
		apiError(w, http.StatusBadRequest, "invalidParameter.robotCode", "robot 不存在")
		return
	}
	m, ok := msgParam(in.MsgKey, in.MsgParam)
	if !ok {
		apiError(w, http.StatusBadRequest, "invalidParameter.msgParam", "msgKey or msgParam is invalid")
		return
	}
	if len(m.Text) > 5000 {
		apiError(w, http.StatusBadRequest, "invalidParameter.msgParam", "content too long")
		return
	}
	m.ClientID, m.Via = a.ClientID, route
	s.mu.Lock()
	defer s.mu.Unlock()
	if route == "oto" {
		if len(in.UserIDs) != 1 {
			apiError(w, http.StatusBadRequest, "invalidParameter.userIds", "userIds must name 1 to 20 users (the fake takes one)")
			return
		}
		m.UserID, m.ConversationID = in.UserIDs[0], "cid-"+in.UserIDs[0]
		s.record(m)
		writeJSON(w, http.StatusOK, map[string]any{"processQueryKey": newID("pqk"), "invalidStaffIdList": []string{}, "flowControlledStaffIdList": []string{}})
		return
	}
	if in.OpenConversationID == "" {
		apiError(w, http.StatusBadRequest, "invalidParameter.openConversationId", "openConversationId is required")
		return
	}
	m.ConversationID = in.OpenConversationID
	s.record(m)
	writeJSON(w, http.StatusOK, map[string]any{"processQueryKey": newID("pqk")})
}

// sessionSend is POST {sessionWebhook}: the old API's envelope.
func (s *Server) sessionSend(w http.ResponseWriter, r *http.Request) {
	s.count("session")
	if s.injected(w, r.URL.Path) {
		return
	}
	s.mu.Lock()
	sess, ok := s.sessions[r.URL.Query().Get("session")]
	s.mu.Unlock()
	if !ok || time.Now().After(sess.exp) {
		// The errcode of an expired session is not documented (fact
		// sheet, unknowns); 300001 is what the fake answers.
		oapiError(w, 300001, "session is expired")
		return
	}
	var in struct {
		MsgType string `json:"msgtype"`
		Text    struct {
			Content string `json:"content"`
		} `json:"text"`
		Markdown struct {
			Title string `json:"title"`
			Text  string `json:"text"`
		} `json:"markdown"`
	}
	if err := decode(r, &in); err != nil {
		oapiError(w, 400, "invalid json")
		return
	}
	m := Sent{ClientID: sess.clientID, Via: "session", ConversationID: sess.conv, UserID: sess.user, Kind: in.MsgType}
	switch in.MsgType {
	case "text":
		m.Text = in.Text.Content
	case "markdown":
		m.Text = in.Markdown.Text
	default:
		oapiError(w, 400, "unsupported msgtype")
		return
	}
	if m.Text == "" {
		oapiError(w, 400, "empty content")
		return
	}
	s.mu.Lock()
	s.record(m)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"errcode": 0, "errmsg": "ok"})
}

// download is POST /v1.0/robot/messageFiles/download.
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	s.count("download")
	a, ok := s.auth(w, r)
	if !ok || s.injected(w, r.URL.Path) {
		return
	}
	var in struct {
		DownloadCode string `json:"downloadCode"`
		RobotCode    string `json:"robotCode"`
	}
	if err := decode(r, &in); err != nil || in.RobotCode != a.RobotCode {
		apiError(w, http.StatusBadRequest, "invalidParameter.robotCode", "robotCode is invalid")
		return
	}
	s.mu.Lock()
	_, ok = s.files[in.DownloadCode]
	s.mu.Unlock()
	if !ok {
		apiError(w, http.StatusBadRequest, "invalidParameter.downloadCode", "downloadCode is invalid or expired")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"downloadUrl": s.hs.URL + pathFile + in.DownloadCode})
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	s.count("file")
	s.mu.Lock()
	f, ok := s.files[strings.TrimPrefix(r.URL.Path, pathFile)]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(f.data)
}

// upload is POST oapi /media/upload?access_token=...&type=...
// (multipart field "media").
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	s.count("media")
	s.mu.Lock()
	_, ok := s.tokens[r.URL.Query().Get("access_token")]
	s.mu.Unlock()
	if !ok {
		oapiError(w, 40014, "不合法的access_token")
		return
	}
	if s.injected(w, r.URL.Path) {
		return
	}
	typ := r.URL.Query().Get("type")
	limit := map[string]int64{"image": 20 << 20, "voice": 2 << 20, "video": 20 << 20, "file": 20 << 20}[typ]
	if limit == 0 {
		oapiError(w, 40004, "不合法的媒体文件类型")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit+1<<20)
	fh, hdr, err := r.FormFile("media")
	if err != nil {
		oapiError(w, 40005, "不合法的文件类型")
		return
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil || int64(len(data)) > limit {
		oapiError(w, 40006, "不合法的文件大小")
		return
	}
	id := "@" + newID("lA")
	s.mu.Lock()
	if len(s.media) < MaxFiles {
		s.media[id] = file{data: data, name: hdr.Filename}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"errcode": 0, "errmsg": "ok", "media_id": id, "type": typ, "created_at": time.Now().UnixMilli()})
}

// cardDeliver is POST /v1.0/card/instances/createAndDeliver.
func (s *Server) cardDeliver(w http.ResponseWriter, r *http.Request) {
	s.count("card")
	a, ok := s.auth(w, r)
	if !ok || s.injected(w, r.URL.Path) {
		return
	}
	var in struct {
		CardTemplateID string `json:"cardTemplateId"`
		OutTrackID     string `json:"outTrackId"`
		CallbackType   string `json:"callbackType"`
		CardData       struct {
			CardParamMap map[string]string `json:"cardParamMap"`
		} `json:"cardData"`
		OpenSpaceID             string          `json:"openSpaceId"`
		ImGroupOpenDeliverModel json.RawMessage `json:"imGroupOpenDeliverModel"`
		ImRobotOpenDeliverModel json.RawMessage `json:"imRobotOpenDeliverModel"`
	}
	if err := decode(r, &in); err != nil || in.CardTemplateID == "" || in.OutTrackID == "" {
		apiError(w, http.StatusBadRequest, "param.invalid", "cardTemplateId and outTrackId are required")
		return
	}
	space, ok := strings.CutPrefix(in.OpenSpaceID, "dtv1.card//")
	kind, id, _ := strings.Cut(space, ".")
	if !ok || id == "" || (kind != "IM_GROUP" && kind != "IM_ROBOT") ||
		(kind == "IM_GROUP" && len(in.ImGroupOpenDeliverModel) == 0) || (kind == "IM_ROBOT" && len(in.ImRobotOpenDeliverModel) == 0) {
		apiError(w, http.StatusBadRequest, "param.invalid", "openSpaceId and its deliver model are required")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.cards[in.OutTrackID]; dup {
		apiError(w, http.StatusBadRequest, "param.outTrackIdExist", "outTrackId already exists")
		return
	}
	m := Sent{ClientID: a.ClientID, Via: "card", Kind: "card", OutTrackID: in.OutTrackID, Text: in.CardData.CardParamMap["content"]}
	if kind == "IM_ROBOT" {
		m.UserID, m.ConversationID = id, "cid-"+id
	} else {
		m.ConversationID = id
	}
	s.cards[in.OutTrackID] = s.record(m)
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "result": map[string]any{"outTrackId": in.OutTrackID,
		"deliverResults": []map[string]any{{"spaceType": kind, "spaceId": id, "success": true}}}})
}

// cardStream is PUT /v1.0/card/streaming.
func (s *Server) cardStream(w http.ResponseWriter, r *http.Request) {
	s.count("stream")
	_, ok := s.auth(w, r)
	if !ok || s.injected(w, r.URL.Path) {
		return
	}
	var in struct {
		OutTrackID string `json:"outTrackId"`
		GUID       string `json:"guid"`
		Key        string `json:"key"`
		Content    string `json:"content"`
		IsFull     bool   `json:"isFull"`
		IsFinalize bool   `json:"isFinalize"`
		IsError    bool   `json:"isError"`
	}
	if err := decode(r, &in); err != nil || in.OutTrackID == "" || in.GUID == "" || in.Key == "" {
		apiError(w, http.StatusBadRequest, "param.invalid", "outTrackId, guid and key are required")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.cards[in.OutTrackID]
	if !ok {
		apiError(w, http.StatusBadRequest, "param.cardNotExist", "card not found")
		return
	}
	m := &s.sent[i]
	if m.Finalized {
		apiError(w, http.StatusBadRequest, "param.cardFinalized", fmt.Sprintf("card %s is finalized", in.OutTrackID))
		return
	}
	if in.IsFull {
		m.Text = in.Content
	} else {
		m.Text += in.Content
	}
	m.Streams++
	m.Finalized = in.IsFinalize
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "result": true})
}
