package openai_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/textproto"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/host/openai"
	"github.com/xconn/xconn/host/openai/openaitest"
	"github.com/xconn/xconn/store"
)

// chatSystem is the web chat connector, an embedded host and the openai
// agent against the fake model server, over loopback sockets: the path a
// room message takes in `xconn demo --agent openai`.
type chatSystem struct {
	t       *testing.T
	model   *openaitest.Server
	host    *host.Host
	hdb     *store.DB
	baseURL string
	logs    *syncBuilder
}

const chatAPIKey = "chat-test-api-key-5c1d"

func newChatSystem(t *testing.T, mod func(*openai.Options)) *chatSystem {
	t.Helper()
	return newChatSystemTraced(t, mod, nil, nil)
}

// newChatSystemTraced is newChatSystem with connTP handed to the connector
// and hostTP to the host and the agent (nil: tracing off).
func newChatSystemTraced(t *testing.T, mod func(*openai.Options), connTP, hostTP trace.TracerProvider) *chatSystem {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	s := &chatSystem{t: t, logs: &syncBuilder{}}
	log := slogTo(s.logs)

	cdb, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "webchat.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cdb.Close() })
	s.hdb, err = store.Open(ctx, "sqlite:"+filepath.Join(dir, "host.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.hdb.Close() })

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.baseURL = "http://" + ln.Addr().String()
	conn, err := webchat.New(webchat.Options{SDK: connector.Options{Store: cdb, APIKey: chatAPIKey,
		DataDir: filepath.Join(dir, "files"), Logger: log, TracerProvider: connTP}, PublicURL: s.baseURL})
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Server().Start(ctx); err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- conn.Server().Serve(sctx, ln) }()

	s.model = openaitest.NewServer(openaitest.Options{APIKey: "sk-chat-canary-77"})
	o := openai.Options{Model: "fake-model", BaseURL: s.model.URL, APIKey: "sk-chat-canary-77", Logger: log,
		Retry: openai.RetryPolicy{MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}, TracerProvider: hostTP}
	if mod != nil {
		mod(&o)
	}
	agent, err := openai.New(o)
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(host.Options{Store: s.hdb, Delivery: s.hdb, Agent: agent, Logger: log,
		FilesDir: filepath.Join(dir, "host-files"), ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond,
		TracerProvider: hostTP})
	if err != nil {
		t.Fatal(err)
	}
	agent.Bind(h, s.hdb)
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s.host = h
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		if err := h.Close(cctx); err != nil {
			t.Errorf("host close: %v", err)
		}
		stop()
		if err := <-served; err != nil {
			t.Errorf("connector: %v", err)
		}
		s.model.Close()
		if strings.Contains(s.logs.String(), "sk-chat-canary-77") {
			t.Error("the model API key is in the logs")
		}
	})
	if _, err := h.Admit(ctx, s.baseURL, chatAPIKey); err != nil {
		t.Fatalf("admit: %v", err)
	}
	for {
		if c, ok := h.Connector(webchat.CardID); ok && c.Link == host.LinkOnline {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the data plane did not come online")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s
}

// room signs user in to a room by the form flow and returns a browser in
// the room with its event stream.
func (s *chatSystem) room(user, room, code string) (*roomBrowser, store.UserChannel) {
	t := s.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	si, err := s.host.Connect(ctx, user, webchat.CardID, webchat.FlowRoom, map[string]string{"room": room, "access_code": code})
	if err != nil {
		t.Fatalf("connect room: %v", err)
	}
	uc, err := si.Wait(ctx)
	if err != nil {
		t.Fatalf("room sign-in: %v", err)
	}
	jar, _ := cookiejar.New(nil)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	b := &roomBrowser{t: t, c: &http.Client{Jar: jar, Transport: tr, Timeout: 30 * time.Second},
		api: s.baseURL + "/webchat/api", room: room}
	res, err := b.c.PostForm(s.baseURL+"/webchat/rooms/"+room, url.Values{"access_code": {code}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("enter room: %s", res.Status)
	}
	b.openEvents()
	return b, uc
}

// roomBrowser is a browser in one room: it posts messages and reads the
// room's event stream.
type roomBrowser struct {
	t      *testing.T
	c      *http.Client
	api    string
	room   string
	events chan sse
}

type sse struct{ Type, Data string }

func (b *roomBrowser) openEvents() {
	t := b.t
	sc := *b.c
	sc.Timeout = 0
	res, err := sc.Get(b.api + "/events?room=" + b.room)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		t.Fatalf("events: %s", res.Status)
	}
	b.events = make(chan sse, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(b.events)
		br := bufio.NewReader(res.Body)
		var ev sse
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "":
				if ev.Type != "" {
					b.events <- ev
				}
				ev = sse{}
			case strings.HasPrefix(line, "event: "):
				ev.Type = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.Data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	t.Cleanup(func() { res.Body.Close(); <-done })
}

func (b *roomBrowser) post(text string) string {
	b.t.Helper()
	body, _ := json.Marshal(map[string]string{"text": text})
	return b.send("application/json", bytes.NewReader(body))
}

func (b *roomBrowser) postFile(text, name, mimeType string, content []byte) string {
	b.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("text", text)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="`+name+`"`)
	h.Set("Content-Type", mimeType)
	pw, _ := mw.CreatePart(h)
	pw.Write(content)
	mw.Close()
	return b.send(mw.FormDataContentType(), &buf)
}

func (b *roomBrowser) send(contentType string, body io.Reader) string {
	b.t.Helper()
	res, err := b.c.Post(b.api+"/messages?room="+b.room, contentType, body)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		MessageID string `json:"message_id"`
	}
	json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode != http.StatusAccepted {
		b.t.Fatalf("post: %s", res.Status)
	}
	return out.MessageID
}

// assistantMessage is one final the page showed, with the deltas streamed
// for it before.
type assistantMessage struct {
	webchat.MessageEvent
	Streamed string
}

// collect reads events until n assistant messages arrived; it returns
// them and the activities seen ("thinking", "tool:<name>", "idle").
func (b *roomBrowser) collect(n int) ([]assistantMessage, []string) {
	b.t.Helper()
	var out []assistantMessage
	var acts []string
	streamed := map[string]*strings.Builder{}
	timeout := time.After(20 * time.Second)
	for len(out) < n {
		select {
		case ev, ok := <-b.events:
			if !ok {
				b.t.Fatal("event stream ended")
			}
			switch ev.Type {
			case webchat.EventActivity:
				var a webchat.ActivityEvent
				json.Unmarshal([]byte(ev.Data), &a)
				if a.ToolName != "" {
					a.Status += ":" + a.ToolName
				}
				acts = append(acts, a.Status)
			case webchat.EventDelta:
				var d webchat.DeltaEvent
				json.Unmarshal([]byte(ev.Data), &d)
				if streamed[d.MessageID] == nil {
					streamed[d.MessageID] = &strings.Builder{}
				}
				streamed[d.MessageID].WriteString(d.Text)
			case webchat.EventMessage:
				var m webchat.MessageEvent
				json.Unmarshal([]byte(ev.Data), &m)
				if m.From != "assistant" {
					continue
				}
				am := assistantMessage{MessageEvent: m}
				if sb := streamed[m.MessageID]; sb != nil {
					am.Streamed = sb.String()
				}
				out = append(out, am)
			}
		case <-timeout:
			b.t.Fatalf("timed out with %d of %d assistant messages: %+v", len(out), n, out)
		}
	}
	return out, acts
}

func TestWebchatPlainReply(t *testing.T) {
	s := newChatSystem(t, nil)
	s.model.Enqueue(openaitest.Text("Hello from the model, streamed word by word."))
	b, _ := s.room("ann", "lobby", "code-1234")
	b.post("hi model")
	msgs, acts := b.collect(1)
	if msgs[0].Text != "Hello from the model, streamed word by word." || msgs[0].Streamed != msgs[0].Text {
		t.Fatalf("message %+v", msgs[0])
	}
	if len(acts) == 0 || acts[0] != "thinking" {
		t.Fatalf("activities %q", acts)
	}
	reqs := s.model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	ms := reqs[0].Body.Messages
	// The Connector Skill is the system guidance; the tools are offered.
	if ms[0].Role != "system" || !strings.Contains(ms[0].Text(), "connector-im-webchat") {
		t.Fatalf("system message %q", ms[0].Text())
	}
	if ms[len(ms)-1].Text() != "hi model" || !contains(reqs[0].Body.ToolNames(), "webchat_message_send") {
		t.Fatalf("request %+v tools %q", ms, reqs[0].Body.ToolNames())
	}
}

// A tool round trip: the model says something, calls webchat_message_send
// (its text appears on the page), gets the result back and answers; the
// two assistant messages around the call are two finals.
func TestWebchatToolRoundTrip(t *testing.T) {
	s := newChatSystem(t, nil)
	b, uc := s.room("bob", "lobby", "code-1234")
	s.model.Enqueue(
		openaitest.Calls("I will post a note first.",
			openaitest.ToolCall{ID: "call_note_1", Name: "webchat_message_send",
				Arguments: `{"connector_channel_id":"` + uc.ChannelID + `","text":"A note from a tool."}`}),
		openaitest.Text("The note is posted."),
	)
	b.post("please post a note")
	msgs, acts := b.collect(3)
	// The first assistant message streams before the tool runs; its final
	// (through the host's outbox) may reach the page after the tool's
	// message, where it replaces its streamed text in place.
	byText := map[string]assistantMessage{}
	for _, m := range msgs {
		byText[m.Text] = m
	}
	first, note, last := byText["I will post a note first."], byText["A note from a tool."], byText["The note is posted."]
	if first.MessageID == "" || note.MessageID == "" || last.MessageID == "" || msgs[2].MessageID != last.MessageID {
		t.Fatalf("messages %+v", msgs)
	}
	if first.MessageID == last.MessageID || first.Streamed != first.Text || last.Streamed != last.Text {
		t.Fatalf("finals %+v", msgs)
	}
	if !contains(acts, "tool:webchat_message_send") {
		t.Fatalf("activities %q", acts)
	}
	reqs := s.model.WaitRequests(2, 5*time.Second)
	if sys := reqs[0].Body.Messages[0].Text(); !strings.Contains(sys, "connector_channel_id "+uc.ChannelID) {
		t.Fatalf("the system message does not name the channel:\n%s", sys)
	}
	ms := reqs[1].Body.Messages
	res := ms[len(ms)-1]
	if res.Role != "tool" || res.ToolCallID != "call_note_1" || !strings.Contains(res.Text(), "message_id") {
		t.Fatalf("tool result fed back: %+v", res)
	}
}

func TestWebchatRateLimitThenSuccess(t *testing.T) {
	s := newChatSystem(t, nil)
	r := openaitest.Error(http.StatusTooManyRequests, "Rate limit reached for requests")
	r.RetryAfter = "1"
	s.model.Enqueue(r, openaitest.Text("Sorry for the wait."))
	b, _ := s.room("cy", "lobby", "code-1234")
	start := time.Now()
	b.post("hello?")
	msgs, _ := b.collect(1)
	if msgs[0].Text != "Sorry for the wait." || time.Since(start) < time.Second {
		t.Fatalf("message %+v after %v", msgs[0], time.Since(start))
	}
	if n := len(s.model.Requests()); n != 2 {
		t.Fatalf("%d model requests", n)
	}
}

func TestWebchatImageInput(t *testing.T) {
	s := newChatSystem(t, nil)
	s.model.Enqueue(openaitest.Text("A yellow disc on blue."))
	b, _ := s.room("di", "lobby", "code-1234")
	img := testPNG()
	b.postFile("what is in this picture?", "disc.png", "image/png", img)
	msgs, _ := b.collect(1)
	if msgs[0].Text != "A yellow disc on blue." {
		t.Fatalf("message %+v", msgs[0])
	}
	ms := s.model.Requests()[0].Body.Messages
	last := ms[len(ms)-1]
	urls := last.ImageURLs()
	if len(urls) != 1 || !strings.HasPrefix(urls[0], "data:image/png;base64,") || !strings.Contains(last.Text(), "what is in this picture?") {
		t.Fatalf("user message %q with images %d", last.Text(), len(urls))
	}
}

func slogTo(w *syncBuilder) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// testPNG returns a small PNG image: a disc on a gradient.
func testPNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 64, 40))
	for x := range 64 {
		for y := range 40 {
			c := color.RGBA{R: uint8(40 + x), G: uint8(90 + y), B: 200, A: 255}
			if dx, dy := x-32, y-20; dx*dx+dy*dy < 12*12 {
				c = color.RGBA{R: 250, G: 200, B: 40, A: 255}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	return buf.Bytes()
}

// The built-in channel tools: the model lists the user's channels, then
// sends to the second of two rooms, chosen by its connector_channel_id.
func TestWebchatChannelTools(t *testing.T) {
	s := newChatSystem(t, nil)
	one, _ := s.room("eve", "one", "code-1111")
	two, uc2 := s.room("eve", "two", "code-2222")
	s.model.Enqueue(
		openaitest.Calls("", openaitest.ToolCall{ID: "call_list", Name: host.ToolChannelsList, Arguments: `{}`}),
		openaitest.Calls("", openaitest.ToolCall{ID: "call_send", Name: host.ToolMessageSend,
			Arguments: `{"connector_channel_id":"` + uc2.ChannelID + `","text":"Hello from room one."}`}),
		openaitest.Text("I told room two."),
	)
	one.post("tell room two hello")
	msgs, acts := one.collect(1)
	if msgs[0].Text != "I told room two." {
		t.Fatalf("room one got %+v", msgs)
	}
	got, _ := two.collect(1)
	if got[0].Text != "Hello from room one." {
		t.Fatalf("room two got %+v", got)
	}
	if !contains(acts, "tool:"+host.ToolChannelsList) || !contains(acts, "tool:"+host.ToolMessageSend) {
		t.Fatalf("activities %q", acts)
	}
	reqs := s.model.WaitRequests(3, 5*time.Second)
	if names := reqs[0].Body.ToolNames(); !contains(names, host.ToolChannelsList) || !contains(names, host.ToolMessageSend) {
		t.Fatalf("tools offered %q", names)
	}
	ms := reqs[1].Body.Messages
	list := ms[len(ms)-1]
	if list.Role != "tool" || list.ToolCallID != "call_list" || !strings.Contains(list.Text(), uc2.ChannelID) || strings.Count(list.Text(), `"connector_channel_id"`) != 2 {
		t.Fatalf("channel list fed back: %s", list.Text())
	}
	ms = reqs[2].Body.Messages
	if sent := ms[len(ms)-1]; sent.ToolCallID != "call_send" || !strings.Contains(sent.Text(), "queued") {
		t.Fatalf("send result fed back: %s", sent.Text())
	}
}

// TestWebchatUploadReference: a file the user posted is offered to the model
// as a file_ref; the model passes it to webchat_message_send's file argument
// (an upload reference), the host uploads it to the connector for the
// channel, and the page shows the same bytes.
func TestWebchatUploadReference(t *testing.T) {
	s := newChatSystem(t, nil)
	b, uc := s.room("eve", "lobby", "code-1234")
	refRE := regexp.MustCompile(`hfile_[A-Za-z0-9_-]+`)
	s.model.EnqueueFunc(func(r openaitest.Request) openaitest.Response {
		ms := r.Body.Messages
		ref := refRE.FindString(ms[len(ms)-1].Text())
		return openaitest.Calls("", openaitest.ToolCall{ID: "call_file_1", Name: "webchat_message_send",
			Arguments: `{"connector_channel_id":"` + uc.ChannelID + `","text":"Here it is again.","file":"` + ref + `"}`})
	})
	s.model.Enqueue(openaitest.Text("Sent it back."))
	b.postFile("send this back to me", "notes.txt", "text/plain", []byte("the user's notes"))
	msgs, _ := b.collect(2)
	var withFile *assistantMessage
	for i := range msgs {
		if len(msgs[i].Files) > 0 {
			withFile = &msgs[i]
		}
	}
	if withFile == nil || withFile.Files[0].Filename != "notes.txt" || withFile.Files[0].Size != int64(len("the user's notes")) || withFile.Text != "Here it is again." {
		t.Fatalf("messages %+v", msgs)
	}
	reqs := s.model.WaitRequests(2, 5*time.Second)
	var params string
	for _, tl := range reqs[0].Body.Tools {
		if tl.Function.Name == "webchat_message_send" {
			params = string(tl.Function.Parameters)
		}
	}
	if !strings.Contains(params, "file_ref") || strings.Contains(params, "xagent-upload-ref") {
		t.Fatalf("the file argument is not projected as a file_ref: %s", params)
	}
	if res := reqs[1].Body.Messages[len(reqs[1].Body.Messages)-1]; res.Role != "tool" || !strings.Contains(res.Text(), "sent") {
		t.Fatalf("tool result %+v", res)
	}
}
