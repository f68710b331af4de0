package webchat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
)

// signInByQR runs the QR flow with a browser-like client and returns the
// channel id.
func signInByQR(t *testing.T, s *system, c *http.Client, user string) string {
	t.Helper()
	si, loginURL := s.startQR(t, user)

	res, err := c.Get(loginURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(page), `id="confirm"`) {
		t.Fatalf("login page: %s\n%s", res.Status, page)
	}
	waitStatus(t, si, protocol.AuthScanned)

	res, err = c.Post(loginURL, "application/x-www-form-urlencoded", nil)
	if err != nil {
		t.Fatal(err)
	}
	page, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/webchat/" || !strings.Contains(string(page), `id="composer"`) {
		t.Fatalf("after confirm: %s at %s\n%s", res.Status, res.Request.URL, page)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	uc, err := si.Wait(ctx)
	if err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	if !uc.Authenticated {
		t.Fatal("user channel not authenticated")
	}
	// The cookie is HttpOnly, SameSite=Lax and scoped to the web side.
	u, _ := url.Parse(s.baseURL + "/webchat/")
	var found bool
	for _, ck := range c.Jar.Cookies(u) {
		found = found || ck.Name == s.conn.CookieName()
	}
	if !found {
		t.Fatal("no session cookie after confirm")
	}
	return uc.ChannelID
}

func postJSON(t *testing.T, c *http.Client, url, text string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"text": text})
	res, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		MessageID string `json:"message_id"`
		Error     string `json:"error"`
	}
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out.MessageID + out.Error
}

func postFile(t *testing.T, c *http.Client, url, text, name, mimeType string, content []byte) (int, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if err := mw.WriteField("text", text); err != nil {
		t.Fatal(err)
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="`+name+`"`)
	h.Set("Content-Type", mimeType)
	pw, err := mw.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	pw.Write(content)
	mw.Close()
	res, err := c.Post(url, mw.FormDataContentType(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		MessageID string `json:"message_id"`
		Error     string `json:"error"`
	}
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out.MessageID + out.Error
}

// expectEcho reads events until the assistant's final answer to a user
// message with id userMsg; it checks that the user message was shown and
// that streamed deltas came first and add up to the final text. (The
// stream may start before the user message event: the page shows that
// after the message is stored, and xAgent may answer sooner.)
func expectEcho(t *testing.T, ev *sseStream, userMsg, wantText string) webchat.MessageEvent {
	t.Helper()
	sawUser := false
	var streamed strings.Builder
	var streamID string
	sawThinking := false
	for {
		e := ev.next(t, func(sseEvent) bool { return true })
		switch e.Type {
		case webchat.EventActivity:
			a := decode[webchat.ActivityEvent](t, e.Data)
			sawThinking = sawThinking || a.Status == protocol.ActivityThinking
		case webchat.EventDelta:
			d := decode[webchat.DeltaEvent](t, e.Data)
			if streamID == "" {
				streamID = d.MessageID
			}
			if d.MessageID != streamID {
				t.Fatalf("delta of %s while streaming %s", d.MessageID, streamID)
			}
			streamed.WriteString(d.Text)
		case webchat.EventMessage:
			m := decode[webchat.MessageEvent](t, e.Data)
			if m.From == "user" && m.MessageID == userMsg {
				sawUser = true
			}
			if m.From != "assistant" {
				continue
			}
			if !sawUser {
				t.Fatalf("assistant message %s before the user message %s", m.MessageID, userMsg)
			}
			if m.Text != wantText {
				t.Fatalf("final text %q, want %q", m.Text, wantText)
			}
			if streamID == "" || m.MessageID != streamID || streamed.String() != m.Text {
				t.Fatalf("final %s %q after deltas of %s %q", m.MessageID, m.Text, streamID, streamed.String())
			}
			if !sawThinking {
				t.Fatal("no thinking activity before the answer")
			}
			return m
		}
	}
}

func TestWebAPIFlow(t *testing.T) {
	s := newSystem(t, systemOptions{})
	c := newBrowserClient(t)
	api := s.baseURL + "/webchat/api"

	// Without a session the API refuses.
	if code, _ := postJSON(t, c, api+"/messages", "hi"); code != http.StatusUnauthorized {
		t.Fatalf("unsigned post: %d, want 401", code)
	}

	channel := signInByQR(t, s, c, "alice")
	ev := openEvents(t, c, api+"/events")
	st := ev.next(t, func(e sseEvent) bool { return e.Type == webchat.EventStatus })
	if got := decode[webchat.StatusEvent](t, st.Data); got.State != protocol.StatusConnected {
		t.Fatalf("status %+v, want connected", got)
	}

	// Text: the echo streams, then the final replaces it.
	code, id := postJSON(t, c, api+"/messages", "hello web chat")
	if code != http.StatusAccepted || !strings.HasPrefix(id, "wcm_") {
		t.Fatalf("post: %d %s", code, id)
	}
	expectEcho(t, ev, id, "You said: hello web chat")

	// An image goes to the agent and comes back as a file of the final.
	img := testPNG(t)
	code, id = postFile(t, c, api+"/messages", "look", "dot.png", "image/png", img)
	if code != http.StatusAccepted {
		t.Fatalf("upload: %d %s", code, id)
	}
	final := expectEcho(t, ev, id, "You said: look")
	if len(final.Files) != 1 || final.Files[0].Type != protocol.FileImage || final.Files[0].URL == "" {
		t.Fatalf("final files %+v", final.Files)
	}
	res, err := c.Get(s.baseURL + final.Files[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !bytes.Equal(got, img) || res.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("echoed image: %s %s, %d bytes (sent %d)", res.Status, res.Header.Get("Content-Type"), len(got), len(img))
	}
	// Another browser cannot read it.
	res, err = newBrowserClient(t).Get(s.baseURL + final.Files[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("file without session: %s", res.Status)
	}

	// The proactive tool reaches the page, once per tool call id.
	args, _ := json.Marshal(map[string]string{"connector_channel_id": channel, "text": "a reminder"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r1, err := s.host.Invoke(ctx, "alice", "", webchat.ToolSend, args, "call-1")
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	out := decode[webchat.SendResult](t, string(r1.Output))
	if out.Status != "sent" || out.MessageID == "" {
		t.Fatalf("tool result %s", r1.Output)
	}
	m := ev.next(t, func(e sseEvent) bool { return e.Type == webchat.EventMessage })
	if got := decode[webchat.MessageEvent](t, m.Data); got.MessageID != out.MessageID || got.Text != "a reminder" || got.From != "assistant" {
		t.Fatalf("proactive message %+v", got)
	}
	r2, err := s.host.Invoke(ctx, "alice", "", webchat.ToolSend, args, "call-1")
	if err != nil {
		t.Fatalf("repeat invoke: %v", err)
	}
	if string(r2.Output) != string(r1.Output) {
		t.Fatalf("repeat result %s, want %s", r2.Output, r1.Output)
	}

	// The tool's file argument is an upload reference: the host uploads a
	// conversation file for it, and the page shows that file.
	note := filepath.Join(t.TempDir(), "note.txt")
	if err := os.WriteFile(note, []byte("a file from the agent"), 0o600); err != nil {
		t.Fatal(err)
	}
	hf, err := s.host.RegisterFile("alice", host.OutgoingFile{Path: note})
	if err != nil {
		t.Fatal(err)
	}
	fargs, _ := json.Marshal(map[string]string{"connector_channel_id": channel, "file": hf.Ref})
	if _, err := s.host.Invoke(ctx, "alice", "", webchat.ToolSend, fargs, "call-2"); err != nil {
		t.Fatalf("invoke with a file: %v", err)
	}
	fm := decode[webchat.MessageEvent](t, ev.next(t, func(e sseEvent) bool { return e.Type == webchat.EventMessage }).Data)
	if len(fm.Files) != 1 || fm.Files[0].Filename != "note.txt" {
		t.Fatalf("proactive file message %+v", fm)
	}
	res, err = c.Get(s.baseURL + fm.Files[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || string(got) != "a file from the agent" {
		t.Fatalf("tool file: %s %q", res.Status, got)
	}

	// Bad requests.
	if code, _ := postJSON(t, c, api+"/messages", "   "); code != http.StatusBadRequest {
		t.Fatalf("empty text: %d", code)
	}
	req, _ := http.NewRequest(http.MethodPost, api+"/messages", strings.NewReader(`{"text":"x"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "https://evil.example")
	res, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin post: %s", res.Status)
	}

	// The tool's repeat produced no second message: the next event is the
	// echo of a new message.
	_, id = postJSON(t, c, api+"/messages", "last")
	next := ev.next(t, func(e sseEvent) bool { return e.Type == webchat.EventMessage })
	if !strings.Contains(next.Data, id) {
		t.Fatalf("unexpected message %s", next.Data)
	}
	if strings.Contains(s.logs.String(), testAPIKey) {
		t.Fatal("API key in the logs")
	}
}

func TestLoginLinkInvalid(t *testing.T) {
	s := newSystem(t, systemOptions{})
	c := newBrowserClient(t)
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		req, _ := http.NewRequest(method, s.baseURL+"/webchat/login/not-a-token", nil)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound || !strings.Contains(string(page), "Link expired") {
			t.Fatalf("%s unknown token: %s", method, res.Status)
		}
	}
	// A used link cannot sign in a second browser, and a cross-site form
	// cannot post the confirm.
	_, loginURL := s.startQR(t, "bob")
	req, _ := http.NewRequest(http.MethodPost, loginURL, nil)
	req.Header.Set("Origin", "https://evil.example")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-site confirm: %s", res.Status)
	}
	res, err = c.Post(loginURL, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("confirm: %s", res.Status)
	}
	// The browser that used it is pointed back to its chat.
	res, err = c.Get(loginURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound || !strings.Contains(string(page), `href="/webchat/"`) {
		t.Fatalf("used link, same browser: %s\n%s", res.Status, page)
	}
	res, err = newBrowserClient(t).Post(loginURL, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("reused login link: %s", res.Status)
	}
}

func TestLoginLinkRefresh(t *testing.T) {
	s := newSystem(t, systemOptions{})
	si, oldURL := s.startQR(t, "frank")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := si.Refresh(ctx); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	var newURL string
	for newURL == "" || newURL == oldURL {
		if ctx.Err() != nil {
			t.Fatal("no new QR code after refresh")
		}
		time.Sleep(10 * time.Millisecond)
		newURL = si.State().QRCodeText
	}
	if !strings.HasPrefix(newURL, s.baseURL+"/webchat/login/") {
		t.Fatalf("refreshed qr_code_text %q", newURL)
	}
	c := newBrowserClient(t)
	res, err := c.Get(oldURL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("replaced login link: %s", res.Status)
	}
	res, err = c.Post(newURL, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/webchat/" {
		t.Fatalf("new login link: %s at %s", res.Status, res.Request.URL)
	}
	if _, err := si.Wait(ctx); err != nil {
		t.Fatalf("sign-in after refresh: %v", err)
	}
}

func TestLoginLinkExpires(t *testing.T) {
	s := newSystem(t, systemOptions{loginTTL: 300 * time.Millisecond})
	_, loginURL := s.startQR(t, "carol")
	time.Sleep(500 * time.Millisecond)
	res, err := newBrowserClient(t).Get(loginURL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("expired login link: %s", res.Status)
	}
}

func TestRoomFlow(t *testing.T) {
	const code = "room-canary-code-31337"
	s := newSystem(t, systemOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	si, err := s.host.Connect(ctx, "dave", webchat.CardID, webchat.FlowRoom, map[string]string{"room": "Lobby", "access_code": code})
	if err != nil {
		t.Fatalf("connect room: %v", err)
	}
	uc, err := si.Wait(ctx)
	if err != nil {
		t.Fatalf("room sign-in: %v", err)
	}
	if !strings.Contains(string(uc.Descriptor), "Room lobby") || strings.Contains(string(uc.Descriptor), code) {
		t.Fatalf("descriptor %s", uc.Descriptor)
	}

	// A second room of the same name is refused.
	si2, err := s.host.Connect(ctx, "erin", webchat.CardID, webchat.FlowRoom, map[string]string{"room": "lobby", "access_code": "other-code"})
	if err == nil {
		if _, err = si2.Wait(ctx); err == nil {
			t.Fatal("a second channel got the same room")
		}
	}

	c := newBrowserClient(t)
	room := s.baseURL + "/webchat/rooms/lobby"
	get := func() string {
		res, err := c.Get(room)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return string(b)
	}
	if page := get(); !strings.Contains(page, `name="access_code"`) {
		t.Fatalf("room page without a code form:\n%s", page)
	}
	res, err := c.PostForm(room, url.Values{"access_code": {"wrong"}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden || strings.Contains(string(page), code) {
		t.Fatalf("wrong code: %s", res.Status)
	}
	res, err = c.PostForm(room, url.Values{"access_code": {code}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(page), `data-room="lobby"`) || strings.Contains(string(page), code) {
		t.Fatalf("right code: %s\n%s", res.Status, page)
	}

	// The room chat works through ?room=.
	api := s.baseURL + "/webchat/api"
	ev := openEvents(t, c, api+"/events?room=lobby")
	status, id := postJSON(t, c, api+"/messages?room=lobby", "hi room")
	if status != http.StatusAccepted {
		t.Fatalf("room post: %d %s", status, id)
	}
	expectEcho(t, ev, id, "You said: hi room")
	// Not in another room, not at home.
	if status, _ := postJSON(t, c, api+"/messages", "x"); status != http.StatusUnauthorized {
		t.Fatalf("home post from a room-only browser: %d", status)
	}
	if status, _ := postJSON(t, c, api+"/messages?room=other", "x"); status != http.StatusUnauthorized {
		t.Fatalf("post to another room: %d", status)
	}
	// An unknown room answers as an open one does: the code form, and a
	// wrong code (room names cannot be probed).
	for _, r := range []string{"lobby", "nowhere"} {
		fresh := newBrowserClient(t)
		res, err = fresh.Get(s.baseURL + "/webchat/rooms/" + r)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `name="access_code"`) {
			t.Fatalf("GET room %s: %s", r, res.Status)
		}
		res, err = fresh.PostForm(s.baseURL+"/webchat/rooms/"+r, url.Values{"access_code": {"guess"}})
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "That access code is not right.") {
			t.Fatalf("wrong code for room %s: %s\n%s", r, res.Status, body)
		}
	}
	// The code appears in no log line, no Card and no Skill.
	if strings.Contains(s.logs.String(), code) {
		t.Fatal("access code in the logs")
	}
	card, _ := json.Marshal(s.conn.Server().Card())
	if strings.Contains(string(card), code) || strings.Contains(string(webchat.Skill()), code) {
		t.Fatal("access code in the Card or Skill")
	}

	// Logout signs the room's browsers out.
	if err := s.host.Logout(ctx, uc.ID); err != nil {
		t.Fatalf("logout: %v", err)
	}
	if status, _ := postJSON(t, c, api+"/messages?room=lobby", "x"); status != http.StatusUnauthorized {
		t.Fatalf("post after logout: %d", status)
	}
}

func TestRestartKeepsBrowserSignedIn(t *testing.T) {
	s := newSystem(t, systemOptions{})
	c := newBrowserClient(t)
	channel := signInByQR(t, s, c, "gina")
	api := s.baseURL + "/webchat/api"

	s.restartConnector()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	chans, err := s.host.Channels(ctx, "gina", webchat.CardID)
	if err != nil || len(chans) != 1 || chans[0].ChannelID != channel {
		t.Fatalf("channels after restart: %+v, %v", chans, err)
	}
	// The browser's cookie still works: it was restored from the
	// channel's encrypted binding.
	ev := openEvents(t, c, api+"/events")
	code, id := postJSON(t, c, api+"/messages", "still here")
	if code != http.StatusAccepted {
		t.Fatalf("post after restart: %d %s", code, id)
	}
	expectEcho(t, ev, id, "You said: still here")
}

// TestCloseEndsEventStreams: closing the connector ends the browsers'
// event streams first, so the HTTP server's shutdown does not wait for
// them, and without telling the browsers that they were signed out.
func TestCloseEndsEventStreams(t *testing.T) {
	s := newSystem(t, systemOptions{})
	c := newBrowserClient(t)
	signInByQR(t, s, c, "hana")
	ev := openEvents(t, c, s.baseURL+"/webchat/api/events")
	ev.next(t, func(e sseEvent) bool { return e.Type == webchat.EventStatus })
	start := time.Now()
	s.stopConn()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("close took %v with an open event stream", d)
	}
	timeout := time.After(5 * time.Second)
	for {
		select {
		case e, ok := <-ev.events:
			if !ok {
				return
			}
			if e.Type == webchat.EventStatus {
				t.Fatalf("status event at shutdown: %s", e.Data)
			}
		case <-timeout:
			t.Fatal("the event stream is still open after close")
		}
	}
}
