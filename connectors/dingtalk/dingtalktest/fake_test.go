package dingtalktest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/xconn/xconn/connectors/dingtalk/dingtalktest"
)

const (
	appKey    = "dingabcdefgh12345678"
	appSecret = "secret-0123456789abcdef"
)

func start(t *testing.T) (*dingtalktest.Server, string) {
	t.Helper()
	f := dingtalktest.New()
	f.AddApp(dingtalktest.App{ClientID: appKey, ClientSecret: appSecret})
	u := f.Start()
	t.Cleanup(f.Close)
	return f, u
}

func call(t *testing.T, method, url string, hdr map[string]string, in any, out any) int {
	t.Helper()
	b, _ := json.Marshal(in)
	req, _ := http.NewRequest(method, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if out != nil {
		_ = json.NewDecoder(res.Body).Decode(out)
	}
	return res.StatusCode
}

func token(t *testing.T, base string) string {
	t.Helper()
	var out struct {
		AccessToken string `json:"accessToken"`
		ExpireIn    int    `json:"expireIn"`
	}
	if code := call(t, "POST", base+dingtalktest.PathToken, nil, map[string]string{"appKey": appKey, "appSecret": appSecret}, &out); code != 200 || out.AccessToken == "" || out.ExpireIn != dingtalktest.TokenTTL {
		t.Fatalf("token: %d %+v", code, out)
	}
	return out.AccessToken
}

// TestStreamRoundTrip speaks the Stream protocol to the fake as a client
// written from the protocol document: register, dial with the ticket,
// answer a SYSTEM ping with its opaque, ack a bot message, and see a
// used ticket refused.
func TestStreamRoundTrip(t *testing.T) {
	f, base := start(t)
	f.SetPing(20 * time.Millisecond)
	var ep struct{ Endpoint, Ticket string }
	body := map[string]any{"clientId": appKey, "clientSecret": appSecret, "ua": "test/1",
		"subscriptions": []map[string]string{{"type": "CALLBACK", "topic": dingtalktest.TopicBotMessage}, {"type": "SYSTEM", "topic": "*"}}}
	if code := call(t, "POST", base+dingtalktest.PathOpen, nil, body, &ep); code != 200 || ep.Ticket == "" {
		t.Fatalf("open: %d %+v", code, ep)
	}
	bad := map[string]any{"clientId": appKey, "clientSecret": "wrong", "subscriptions": body["subscriptions"]}
	if code := call(t, "POST", base+dingtalktest.PathOpen, nil, bad, nil); code != http.StatusUnauthorized {
		t.Fatalf("open with a wrong secret: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, ep.Endpoint+"?ticket="+ep.Ticket, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if _, _, err := websocket.Dial(ctx, ep.Endpoint+"?ticket="+ep.Ticket, nil); err == nil {
		t.Fatal("a ticket was accepted twice")
	}
	type result struct {
		id   string
		resp dingtalktest.Response
		err  error
	}
	if err := f.WaitConnected(ctx, appKey); err != nil {
		t.Fatal(err)
	}
	said := make(chan result, 1)
	go func() {
		id, resp, err := f.Say(ctx, dingtalktest.Message{ClientID: appKey, Text: "hello"})
		said <- result{id, resp, err}
	}()
	gotMsg := false
	for !gotMsg || f.Pongs(appKey) == 0 {
		_, data, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var fr dingtalktest.Frame
		if err := json.Unmarshal(data, &fr); err != nil {
			t.Fatal(err)
		}
		resp := dingtalktest.Response{Code: 200, Message: "OK", Headers: map[string]string{"messageId": fr.Headers["messageId"], "contentType": "application/json"}}
		switch {
		case fr.Type == "SYSTEM" && fr.Headers["topic"] == "ping":
			resp.Data = fr.Data
		case fr.Type == "CALLBACK" && fr.Headers["topic"] == dingtalktest.TopicBotMessage:
			var m struct {
				MsgID, SessionWebhook, ConversationType, RobotCode string
				Text                                               struct{ Content string }
			}
			json.Unmarshal([]byte(fr.Data), &m)
			if m.Text.Content != "hello" || m.ConversationType != "1" || m.RobotCode != appKey || !strings.HasPrefix(m.SessionWebhook, base) {
				t.Fatalf("bot message %s", fr.Data)
			}
			resp.Data = `{"response": null}`
			gotMsg = true
		}
		b, _ := json.Marshal(resp)
		if err := c.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
	}
	r := <-said
	if r.err != nil || r.resp.Code != 200 || r.id == "" {
		t.Fatalf("Say: %+v", r)
	}
	c.Close(websocket.StatusNormalClosure, "")
	for i := 0; f.Connected(appKey) && i < 200; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if _, _, err := f.Say(ctx, dingtalktest.Message{ClientID: appKey, Text: "late"}); err != dingtalktest.ErrNotConnected {
		t.Fatalf("Say without a connection: %v", err)
	}
}

// TestRobotAPIs checks the send, file and card endpoints with the
// documented bodies, and their refusals.
func TestRobotAPIs(t *testing.T) {
	f, base := start(t)
	tok := token(t, base)
	h := map[string]string{"x-acs-dingtalk-access-token": tok}
	for _, tc := range []struct {
		path string
		hdr  map[string]string
		body map[string]any
		want int
	}{
		{dingtalktest.PathOTO, h, map[string]any{"robotCode": appKey, "userIds": []string{"alice"}, "msgKey": "sampleText", "msgParam": `{"content":"hi alice"}`}, 200},
		{dingtalktest.PathGroup, h, map[string]any{"robotCode": appKey, "openConversationId": "cidG", "msgKey": "sampleMarkdown", "msgParam": `{"title":"t","text":"hi group"}`}, 200},
		{dingtalktest.PathOTO, map[string]string{"x-acs-dingtalk-access-token": "nope"}, map[string]any{"robotCode": appKey, "userIds": []string{"alice"}, "msgKey": "sampleText", "msgParam": `{"content":"x"}`}, 401},
		{dingtalktest.PathOTO, h, map[string]any{"robotCode": "other", "userIds": []string{"alice"}, "msgKey": "sampleText", "msgParam": `{"content":"x"}`}, 400},
		{dingtalktest.PathGroup, h, map[string]any{"robotCode": appKey, "openConversationId": "cidG", "msgKey": "sampleText", "msgParam": `{}`}, 400},
	} {
		if code := call(t, "POST", base+tc.path, tc.hdr, tc.body, nil); code != tc.want {
			t.Errorf("%s %v: HTTP %d, want %d", tc.path, tc.body, code, tc.want)
		}
	}
	if got := f.Sent("cid-alice"); len(got) != 1 || got[0].Text != "hi alice" || got[0].Via != "oto" {
		t.Errorf("sent to alice: %+v", got)
	}
	if got := f.Sent("cidG"); len(got) != 1 || got[0].Text != "hi group" || got[0].Kind != "sampleMarkdown" {
		t.Errorf("sent to the group: %+v", got)
	}

	// A user file: downloadCode → downloadUrl → bytes.
	code := f.AddFile("a.txt", []byte("file body"))
	var dl struct {
		DownloadURL string `json:"downloadUrl"`
	}
	if c := call(t, "POST", base+dingtalktest.PathDownload, h, map[string]string{"downloadCode": code, "robotCode": appKey}, &dl); c != 200 || dl.DownloadURL == "" {
		t.Fatalf("download: %d %+v", c, dl)
	}
	res, err := http.Get(dl.DownloadURL)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.ReadFrom(res.Body)
	res.Body.Close()
	if buf.String() != "file body" {
		t.Fatalf("file %q", buf.String())
	}

	// Media upload (oapi, token in the query).
	var mb bytes.Buffer
	mw := multipart.NewWriter(&mb)
	fw, _ := mw.CreateFormFile("media", "pic.png")
	fw.Write([]byte("\x89PNG data"))
	mw.Close()
	res, err = http.Post(base+dingtalktest.PathMedia+"?type=image&access_token="+tok, mw.FormDataContentType(), &mb)
	if err != nil {
		t.Fatal(err)
	}
	var up struct {
		ErrCode int    `json:"errcode"`
		MediaID string `json:"media_id"`
	}
	json.NewDecoder(res.Body).Decode(&up)
	res.Body.Close()
	if data, name, ok := f.Media(up.MediaID); up.ErrCode != 0 || !ok || name != "pic.png" || string(data) != "\x89PNG data" {
		t.Fatalf("upload %+v", up)
	}

	// An AI card streamed, then finalized; a finalized card refuses more.
	card := map[string]any{"cardTemplateId": "tpl.schema", "outTrackId": "track1", "callbackType": "STREAM",
		"cardData": map[string]any{"cardParamMap": map[string]string{"content": ""}}, "openSpaceId": "dtv1.card//IM_ROBOT.alice",
		"imRobotOpenSpaceModel": map[string]any{"supportForward": true}, "imRobotOpenDeliverModel": map[string]any{"spaceType": "IM_ROBOT"}}
	if c := call(t, "POST", base+dingtalktest.PathCardDeliver, h, card, nil); c != 200 {
		t.Fatalf("createAndDeliver: %d", c)
	}
	for _, up := range []map[string]any{
		{"outTrackId": "track1", "guid": "g1", "key": "content", "content": "Hel", "isFull": true},
		{"outTrackId": "track1", "guid": "g2", "key": "content", "content": "Hello", "isFull": true, "isFinalize": true},
	} {
		if c := call(t, "PUT", base+dingtalktest.PathCardStream, h, up, nil); c != 200 {
			t.Fatalf("streaming %v: %d", up, c)
		}
	}
	if c := call(t, "PUT", base+dingtalktest.PathCardStream, h, map[string]any{"outTrackId": "track1", "guid": "g3", "key": "content", "content": "x", "isFull": true}, nil); c != 400 {
		t.Fatalf("streaming a finalized card: %d", c)
	}
	if got := f.Sent("cid-alice"); len(got) != 2 || got[1].Text != "Hello" || !got[1].Finalized || got[1].Streams != 2 {
		t.Fatalf("card %+v", got)
	}
}

// TestSessionWebhook posts to a message's sessionWebhook until it
// expires.
func TestSessionWebhook(t *testing.T) {
	f, _ := start(t)
	data, _ := f.BotMessage(dingtalktest.Message{ClientID: appKey, ConversationType: dingtalktest.ConversationGroup, ConversationID: "cidG", AtBot: true, Text: " hi"})
	var m struct {
		SessionWebhook string `json:"sessionWebhook"`
		IsInAtList     bool   `json:"isInAtList"`
	}
	json.Unmarshal([]byte(data), &m)
	var out struct {
		ErrCode int `json:"errcode"`
	}
	if call(t, "POST", m.SessionWebhook, nil, map[string]any{"msgtype": "text", "text": map[string]string{"content": "answer"}}, &out); out.ErrCode != 0 || !m.IsInAtList {
		t.Fatalf("session send: %+v", out)
	}
	f.ExpireSessions()
	if call(t, "POST", m.SessionWebhook, nil, map[string]any{"msgtype": "text", "text": map[string]string{"content": "late"}}, &out); out.ErrCode == 0 {
		t.Fatal("an expired session was accepted")
	}
	if got := f.Sent("cidG"); len(got) != 1 || got[0].Text != "answer" || got[0].Via != "session" {
		t.Fatalf("sent %+v", got)
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
