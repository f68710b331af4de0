package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/host/openai"
	"github.com/xconn/xconn/host/openai/openaitest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// syncBuilder is a log sink safe for concurrent writes.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// event is one call on a recordStream.
type event struct {
	Kind   string // activity, delta, final
	Status protocol.ActivityStatus
	Tool   string
	Text   string
	MsgID  string
}

// recordStream is a host.ReplyStream that records what the agent does.
type recordStream struct {
	mu     sync.Mutex
	events []event
	cur    string
	n      int
}

func (r *recordStream) Activity(_ context.Context, status protocol.ActivityStatus, tool string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{Kind: "activity", Status: status, Tool: tool})
	return nil
}

func (r *recordStream) Delta(_ context.Context, text string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == "" {
		r.n++
		r.cur = fmt.Sprintf("amsg_%d", r.n)
	}
	r.events = append(r.events, event{Kind: "delta", Text: text, MsgID: r.cur})
	return nil
}

func (r *recordStream) Final(_ context.Context, text string, _ ...host.OutgoingFile) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.cur
	if id == "" {
		r.n++
		id = fmt.Sprintf("amsg_%d", r.n)
	}
	r.cur = ""
	r.events = append(r.events, event{Kind: "final", Text: text, MsgID: id})
	return id, nil
}

func (r *recordStream) finals() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event
	for _, e := range r.events {
		if e.Kind == "final" {
			out = append(out, e)
		}
	}
	return out
}

func (r *recordStream) deltas(msgID string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, e := range r.events {
		if e.Kind == "delta" && e.MsgID == msgID {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

func (r *recordStream) activities() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if e.Kind == "activity" {
			out = append(out, string(e.Status)+":"+e.Tool)
		}
	}
	return out
}

// fakeHost implements openai.Host with scripted tools.
type fakeHost struct {
	mu    sync.Mutex
	defs  []host.FunctionDef
	skill string
	calls []invocation
	run   func(toolID string, args json.RawMessage) (json.RawMessage, error)
}

type invocation struct {
	ToolID, CallID string
	Args           string
}

func (f *fakeHost) Tools(context.Context, string, string) ([]host.FunctionDef, error) {
	return f.defs, nil
}

func (f *fakeHost) Invoke(_ context.Context, _, _, toolID string, args json.RawMessage, callID string, _ ...host.InvokeOption) (*host.Result, error) {
	f.mu.Lock()
	f.calls = append(f.calls, invocation{ToolID: toolID, CallID: callID, Args: string(args)})
	f.mu.Unlock()
	out, err := f.run(toolID, args)
	if err != nil {
		return nil, err
	}
	return &host.Result{ToolID: toolID, Output: out}, nil
}

func (f *fakeHost) Connector(cardID string) (*host.Connector, bool) {
	return &host.Connector{CardID: cardID, Skill: []byte(f.skill)}, true
}

func newAgent(t *testing.T, srv *openaitest.Server, h openai.Host, mem openai.Memory, mod func(*openai.Options)) *openai.Agent {
	t.Helper()
	o := openai.Options{Host: h, Memory: mem, Model: "fake-model", BaseURL: srv.URL,
		Retry: openai.RetryPolicy{MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}}
	if mod != nil {
		mod(&o)
	}
	a, err := openai.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func userMsg(id, text string) *host.UserMessage {
	return &host.UserMessage{CardID: "im.test", UserChannelID: "uc_1", ChannelID: "ch_1", UserID: "u1",
		Profile: protocol.ProfileIMv2, MessageID: id, Text: text}
}

func TestPlainReply(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Options{APIKey: "sk-test-canary-123"})
	defer srv.Close()
	srv.Enqueue(openaitest.Text("Hello there, friend."))
	fh := &fakeHost{skill: "---\nname: connector-test\n---\nBe kind."}
	a := newAgent(t, srv, fh, nil, func(o *openai.Options) { o.APIKey = "sk-test-canary-123" })
	rs := &recordStream{}
	if err := a.HandleMessage(context.Background(), userMsg("m1", "hi"), rs); err != nil {
		t.Fatal(err)
	}
	f := rs.finals()
	if len(f) != 1 || f[0].Text != "Hello there, friend." || rs.deltas(f[0].MsgID) != f[0].Text {
		t.Fatalf("finals %+v, deltas %q", f, rs.deltas("amsg_1"))
	}
	acts := rs.activities()
	if acts[0] != "thinking:" || acts[len(acts)-1] != "idle:" {
		t.Fatalf("activities %q", acts)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !reqs[0].Streamed || reqs[0].Body.Model != "fake-model" || reqs[0].Authorization != "Bearer sk-test-canary-123" {
		t.Fatalf("requests %+v", reqs)
	}
	ms := reqs[0].Body.Messages
	if ms[0].Role != "system" || !strings.Contains(ms[0].Text(), "Be kind.") || ms[len(ms)-1].Text() != "hi" {
		t.Fatalf("messages %+v", ms)
	}
}

// Memory: the second message sees the first exchange; a new agent on
// the same store (a restart) too; the window bounds it.
func TestMemoryAcrossRestart(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "h.db"), store.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := openaitest.NewServer(openaitest.Options{})
	defer srv.Close()
	srv.Enqueue(openaitest.Text("Nice to meet you, Ada."), openaitest.Text("You are Ada."))
	a := newAgent(t, srv, &fakeHost{}, db, nil)
	if err := a.HandleMessage(ctx, userMsg("m1", "I am Ada"), &recordStream{}); err != nil {
		t.Fatal(err)
	}
	b := newAgent(t, srv, &fakeHost{}, db, nil)
	if err := b.HandleMessage(ctx, userMsg("m2", "Who am I?"), &recordStream{}); err != nil {
		t.Fatal(err)
	}
	ms := srv.Requests()[1].Body.Messages
	var roles []string
	for _, m := range ms {
		roles = append(roles, m.Role+":"+m.Text())
	}
	want := []string{"user:I am Ada", "assistant:Nice to meet you, Ada.", "user:Who am I?"}
	if !slices.Equal(roles[1:], want) {
		t.Fatalf("messages %q, want system then %q", roles, want)
	}

	// A window of 2 messages keeps only the last exchange.
	srv.Enqueue(openaitest.Text("ok"))
	c := newAgent(t, srv, &fakeHost{}, db, func(o *openai.Options) { o.MemoryMessages = 2 })
	if err := c.HandleMessage(ctx, userMsg("m3", "again"), &recordStream{}); err != nil {
		t.Fatal(err)
	}
	ms = srv.Requests()[2].Body.Messages
	if len(ms) != 4 || ms[1].Text() != "Who am I?" {
		t.Fatalf("windowed messages: %d %+v", len(ms), ms)
	}
	entries, _ := db.ListMemory(ctx, "uc_1")
	if len(entries) != 2 {
		t.Fatalf("stored %d entries, want 2 (the window)", len(entries))
	}
}

func TestToolRoundTrip(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Options{})
	defer srv.Close()
	fh := &fakeHost{
		defs: []host.FunctionDef{
			{Name: "im.test.send", Description: "Send a text.", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
			{Name: "weather_get", Description: "Weather."},
		},
		run: func(toolID string, args json.RawMessage) (json.RawMessage, error) {
			if toolID == "weather_get" {
				return nil, protocol.Errorf(protocol.CodeInvalidArguments, "city is required")
			}
			return json.RawMessage(`{"sent":true}`), nil
		},
	}
	mapped := openai.FunctionName("im.test.send")
	if mapped == "im.test.send" || !strings.HasPrefix(mapped, "im_test_send_") || len(mapped) > 64 {
		t.Fatalf("mapped name %q", mapped)
	}
	srv.Enqueue(
		openaitest.Calls("Let me send that.",
			openaitest.ToolCall{ID: "call_a", Name: mapped, Arguments: `{"text":"hello, world"}`},
			openaitest.ToolCall{ID: "call_b", Name: "weather_get", Arguments: `{}`}),
		openaitest.Text("Sent it; the weather needs a city."),
	)
	a := newAgent(t, srv, fh, nil, nil)
	rs := &recordStream{}
	if err := a.HandleMessage(context.Background(), userMsg("m1", "send hello"), rs); err != nil {
		t.Fatal(err)
	}
	// Two assistant messages, each its own final with its own id.
	f := rs.finals()
	if len(f) != 2 || f[0].Text != "Let me send that." || f[1].Text != "Sent it; the weather needs a city." || f[0].MsgID == f[1].MsgID {
		t.Fatalf("finals %+v", f)
	}
	if rs.deltas(f[0].MsgID) != f[0].Text || rs.deltas(f[1].MsgID) != f[1].Text {
		t.Fatal("deltas do not add up to the finals")
	}
	// The calls reached the host unchanged, with the model's call ids.
	want := []invocation{{"im.test.send", "call_a", `{"text":"hello, world"}`}, {"weather_get", "call_b", `{}`}}
	if !slices.Equal(fh.calls, want) {
		t.Fatalf("invocations %+v", fh.calls)
	}
	acts := rs.activities()
	if !slices.Contains(acts, "tool:im.test.send") || !slices.Contains(acts, "tool:weather_get") {
		t.Fatalf("activities %q", acts)
	}
	// The results went back to the model.
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if names := reqs[0].Body.ToolNames(); !slices.Equal(names, []string{mapped, "weather_get"}) {
		t.Fatalf("tools %q", names)
	}
	ms := reqs[1].Body.Messages
	n := len(ms)
	if ms[n-3].Role != "assistant" || len(ms[n-3].ToolCalls) != 2 || ms[n-3].ToolCalls[0].Function.Arguments != `{"text":"hello, world"}` {
		t.Fatalf("assistant message %+v", ms[n-3])
	}
	if ms[n-2].Role != "tool" || ms[n-2].ToolCallID != "call_a" || ms[n-2].Text() != `{"sent":true}` {
		t.Fatalf("tool result %+v", ms[n-2])
	}
	if ms[n-1].ToolCallID != "call_b" || !strings.Contains(ms[n-1].Text(), "invalid_arguments") {
		t.Fatalf("tool error %+v", ms[n-1])
	}
}

// The tool rounds are bounded: past them the model gets no tools.
func TestToolRoundsBounded(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Options{})
	defer srv.Close()
	fh := &fakeHost{defs: []host.FunctionDef{{Name: "loop"}},
		run: func(string, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }}
	for i := range 2 {
		srv.Enqueue(openaitest.Calls("", openaitest.ToolCall{ID: fmt.Sprint("c", i), Name: "loop", Arguments: `{}`}))
	}
	srv.Enqueue(openaitest.Text("done"))
	a := newAgent(t, srv, fh, nil, func(o *openai.Options) { o.MaxToolRounds = 2 })
	rs := &recordStream{}
	if err := a.HandleMessage(context.Background(), userMsg("m1", "go"), rs); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || len(reqs[2].Body.Tools) != 0 || len(reqs[1].Body.Tools) != 1 {
		t.Fatalf("%d requests; tools in the last %d", len(reqs), len(reqs[len(reqs)-1].Body.Tools))
	}
	if f := rs.finals(); len(f) != 1 || f[0].Text != "done" {
		t.Fatalf("finals %+v", f)
	}
}

func TestRetries(t *testing.T) {
	t.Run("429 then success", func(t *testing.T) {
		srv := openaitest.NewServer(openaitest.Options{})
		defer srv.Close()
		r429 := openaitest.Error(http.StatusTooManyRequests, "Rate limit reached")
		r429.RetryAfter = "0.2"
		srv.Enqueue(r429, openaitest.Text("finally"))
		a := newAgent(t, srv, &fakeHost{}, nil, nil)
		rs := &recordStream{}
		start := time.Now()
		if err := a.HandleMessage(context.Background(), userMsg("m1", "hi"), rs); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 200*time.Millisecond {
			t.Fatalf("retried after %v, before Retry-After", d)
		}
		if f := rs.finals(); len(f) != 1 || f[0].Text != "finally" || len(srv.Requests()) != 2 {
			t.Fatalf("finals %+v after %d requests", f, len(srv.Requests()))
		}
	})
	t.Run("5xx and stream errors then success", func(t *testing.T) {
		srv := openaitest.NewServer(openaitest.Options{})
		defer srv.Close()
		srv.Enqueue(openaitest.Error(http.StatusBadGateway, "upstream"), openaitest.Response{StreamError: "overloaded"},
			openaitest.Response{Truncate: true}, openaitest.Text("ok"))
		a := newAgent(t, srv, &fakeHost{}, nil, nil)
		rs := &recordStream{}
		if err := a.HandleMessage(context.Background(), userMsg("m1", "hi"), rs); err != nil {
			t.Fatal(err)
		}
		if f := rs.finals(); len(f) != 1 || f[0].Text != "ok" || len(srv.Requests()) != 4 {
			t.Fatalf("finals %+v after %d requests", f, len(srv.Requests()))
		}
	})
	t.Run("401 is not retried", func(t *testing.T) {
		srv := openaitest.NewServer(openaitest.Options{APIKey: "right"})
		defer srv.Close()
		srv.Enqueue(openaitest.Text("never"))
		var logs syncBuilder
		a := newAgent(t, srv, &fakeHost{}, nil, func(o *openai.Options) {
			o.APIKey = "sk-wrong-canary-987"
			o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		})
		rs := &recordStream{}
		if err := a.HandleMessage(context.Background(), userMsg("m1", "hi"), rs); err != nil {
			t.Fatal(err)
		}
		f := rs.finals()
		if len(srv.Requests()) != 1 || len(f) != 1 || f[0].Text != openai.DefaultMisconfigured {
			t.Fatalf("%d requests, finals %+v; want one request and %q", len(srv.Requests()), f, openai.DefaultMisconfigured)
		}
		if strings.Contains(f[0].Text+logs.String(), "sk-wrong-canary-987") || !strings.Contains(logs.String(), "check the API key") {
			t.Fatalf("API key leaked or 401 unexplained:\n%s", logs.String())
		}
	})
	t.Run("retries spent: apology, message remembered", func(t *testing.T) {
		srv := openaitest.NewServer(openaitest.Options{})
		defer srv.Close()
		srv.SetFallback(openaitest.Error(http.StatusServiceUnavailable, "down"))
		a := newAgent(t, srv, &fakeHost{}, nil, func(o *openai.Options) { o.Retry.MaxAttempts = 3 })
		rs := &recordStream{}
		if err := a.HandleMessage(context.Background(), userMsg("m1", "remember me"), rs); err != nil {
			t.Fatal(err)
		}
		if f := rs.finals(); len(f) != 1 || !strings.HasPrefix(f[0].Text, openai.DefaultApology) || len(srv.Requests()) != 3 {
			t.Fatalf("finals %+v after %d requests", f, len(srv.Requests()))
		}
		srv.Enqueue(openaitest.Text("back"))
		if err := a.HandleMessage(context.Background(), userMsg("m2", "hello?"), rs); err != nil {
			t.Fatal(err)
		}
		ms := srv.Requests()[3].Body.Messages
		if len(ms) != 3 || ms[1].Text() != "remember me" {
			t.Fatalf("next request %+v", ms)
		}
	})
	t.Run("a long Retry-After is not waited for", func(t *testing.T) {
		srv := openaitest.NewServer(openaitest.Options{})
		defer srv.Close()
		r := openaitest.Error(http.StatusTooManyRequests, "slow down")
		r.RetryAfter = "3600"
		srv.Enqueue(r)
		a := newAgent(t, srv, &fakeHost{}, nil, nil)
		rs := &recordStream{}
		if err := a.HandleMessage(context.Background(), userMsg("m1", "hi"), rs); err != nil {
			t.Fatal(err)
		}
		if f := rs.finals(); len(f) != 1 || !strings.Contains(f[0].Text, "rate limiting") {
			t.Fatalf("finals %+v", f)
		}
	})
	t.Run("idle stream times out", func(t *testing.T) {
		srv := openaitest.NewServer(openaitest.Options{})
		defer srv.Close()
		srv.Enqueue(openaitest.Response{Hang: true}, openaitest.Response{Deltas: []string{"par", "tial"}, Hang: true})
		a := newAgent(t, srv, &fakeHost{}, nil, func(o *openai.Options) { o.IdleTimeout = 100 * time.Millisecond })
		rs := &recordStream{}
		if err := a.HandleMessage(context.Background(), userMsg("m1", "hi"), rs); err != nil {
			t.Fatal(err)
		}
		// The first hang is retried; the second broke after text reached the
		// user: that text is kept, marked as cut off, not retried.
		f := rs.finals()
		if len(f) != 1 || !strings.HasPrefix(f[0].Text, "partial") || !strings.Contains(f[0].Text, "cut off") || len(srv.Requests()) != 2 {
			t.Fatalf("finals %+v after %d requests", f, len(srv.Requests()))
		}
	})
	t.Run("request timeout", func(t *testing.T) {
		srv := openaitest.NewServer(openaitest.Options{})
		defer srv.Close()
		srv.SetFallback(openaitest.Response{Delay: time.Minute})
		a := newAgent(t, srv, &fakeHost{}, nil, func(o *openai.Options) {
			o.RequestTimeout = 100 * time.Millisecond
			o.Retry.MaxAttempts = 2
		})
		rs := &recordStream{}
		if err := a.HandleMessage(context.Background(), userMsg("m1", "hi"), rs); err != nil {
			t.Fatal(err)
		}
		if f := rs.finals(); len(f) != 1 || !strings.Contains(f[0].Text, "did not answer in time") || len(srv.Requests()) != 2 {
			t.Fatalf("finals %+v after %d requests", f, len(srv.Requests()))
		}
	})
	t.Run("cancelled: not answered, error for redelivery", func(t *testing.T) {
		srv := openaitest.NewServer(openaitest.Options{})
		defer srv.Close()
		srv.Enqueue(openaitest.Response{Delay: time.Minute})
		a := newAgent(t, srv, &fakeHost{}, nil, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		rs := &recordStream{}
		if err := a.HandleMessage(ctx, userMsg("m1", "hi"), rs); err == nil {
			t.Fatal("no error after cancel")
		}
		if f := rs.finals(); len(f) != 0 {
			t.Fatalf("finals %+v", f)
		}
	})
}

func TestImageInput(t *testing.T) {
	dir := t.TempDir()
	png := filepath.Join(dir, "cat.png")
	pngData := []byte("\x89PNG\r\n\x1a\nfake-image-bytes")
	os.WriteFile(png, pngData, 0o600)
	pdf := filepath.Join(dir, "doc.pdf")
	os.WriteFile(pdf, []byte("%PDF-1.4"), 0o600)
	msg := userMsg("m1", "what is this?")
	msg.Files = []host.File{
		{Path: png, Filename: "cat.png", MimeType: "image/png", Type: protocol.FileImage, Size: int64(len(pngData))},
		{Path: pdf, Filename: "doc.pdf", MimeType: "application/pdf", Type: protocol.FileFile, Size: 8},
	}

	srv := openaitest.NewServer(openaitest.Options{})
	defer srv.Close()
	srv.Enqueue(openaitest.Text("A cat."), openaitest.Text("Still a cat."))
	a := newAgent(t, srv, &fakeHost{}, nil, nil)
	if err := a.HandleMessage(context.Background(), msg, &recordStream{}); err != nil {
		t.Fatal(err)
	}
	last := srv.Requests()[0].Body.Messages[1]
	urls := last.ImageURLs()
	if len(urls) != 1 || !strings.HasPrefix(urls[0], "data:image/png;base64,") {
		t.Fatalf("image parts %q", urls)
	}
	if txt := last.Text(); !strings.Contains(txt, "what is this?") || !strings.Contains(txt, "doc.pdf (application/pdf, 8 bytes)") {
		t.Fatalf("text %q", txt)
	}
	// Memory keeps the note, not the image.
	if err := a.HandleMessage(context.Background(), userMsg("m2", "and now?"), &recordStream{}); err != nil {
		t.Fatal(err)
	}
	prev := srv.Requests()[1].Body.Messages[1]
	if len(prev.ImageURLs()) != 0 || !strings.Contains(prev.Text(), "[image: cat.png (image/png") {
		t.Fatalf("remembered %q", prev.Text())
	}

	// A server that refuses images gets the notes instead.
	srv2 := openaitest.NewServer(openaitest.Options{})
	defer srv2.Close()
	srv2.Enqueue(openaitest.Error(http.StatusBadRequest, "image input is not supported"), openaitest.Text("I cannot see images."))
	b := newAgent(t, srv2, &fakeHost{}, nil, nil)
	rs := &recordStream{}
	if err := b.HandleMessage(context.Background(), msg, rs); err != nil {
		t.Fatal(err)
	}
	reqs := srv2.Requests()
	if len(reqs) != 2 || len(reqs[1].Body.Messages[1].ImageURLs()) != 0 || rs.finals()[0].Text != "I cannot see images." {
		t.Fatalf("%d requests; finals %+v", len(reqs), rs.finals())
	}
}

func TestFunctionName(t *testing.T) {
	long := strings.Repeat("a", 100)
	for _, id := range []string{"ok_name-1", "im.wechat.send", long, "a.b", "a_b"} {
		n := openai.FunctionName(id)
		if len(n) > 64 || strings.ContainsAny(n, ".") || n != openai.FunctionName(id) {
			t.Fatalf("%q -> %q", id, n)
		}
	}
	if openai.FunctionName("a.b") == openai.FunctionName("a_b") {
		t.Fatal("a.b and a_b collide")
	}
	if openai.FunctionName("ok_name-1") != "ok_name-1" {
		t.Fatal("a valid id was renamed")
	}
}

// Files in a tool result: the model gets the host's ModelOutput, images
// as image input (in a user message after the tool message) and other
// files as notes.
func TestToolResultFiles(t *testing.T) {
	dir := t.TempDir()
	shot := filepath.Join(dir, "shot.png")
	os.WriteFile(shot, []byte("\x89PNG\r\n\x1a\nscreen"), 0o600)
	fh := &fakeHost{defs: []host.FunctionDef{{Name: "device_screenshot"}}}
	fh.run = func(string, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{"raw":true}`), nil }
	h := &filesHost{fakeHost: fh, files: []host.File{
		{Ref: "hfile_shot", Path: shot, Filename: "shot.png", MimeType: "image/png", Size: 14},
		{Ref: "hfile_log", Path: filepath.Join(dir, "none.txt"), Filename: "log.txt", MimeType: "text/plain", Size: 2048},
	}}
	srv := openaitest.NewServer(openaitest.Options{})
	defer srv.Close()
	srv.Enqueue(openaitest.Calls("", openaitest.ToolCall{ID: "c1", Name: "device_screenshot", Arguments: `{}`}), openaitest.Text("I see the screen."))
	a := newAgent(t, srv, h, nil, nil)
	if err := a.HandleMessage(context.Background(), userMsg("m1", "look"), &recordStream{}); err != nil {
		t.Fatal(err)
	}
	ms := srv.Requests()[1].Body.Messages
	tool, files := ms[len(ms)-2], ms[len(ms)-1]
	if tool.Role != "tool" || tool.Text() != `{"shot":"hfile_shot"}` {
		t.Fatalf("tool message %+v", tool)
	}
	if files.Role != "user" || len(files.ImageURLs()) != 1 || !strings.Contains(files.Text(), "[file: log.txt (text/plain, 2.0 KB), file_ref hfile_log]") {
		t.Fatalf("files message %q, %d images", files.Text(), len(files.ImageURLs()))
	}
}

// filesHost returns files with every tool result.
type filesHost struct {
	*fakeHost
	files []host.File
}

func (f *filesHost) Invoke(ctx context.Context, userID, sessionID, toolID string, args json.RawMessage, callID string, opts ...host.InvokeOption) (*host.Result, error) {
	res, err := f.fakeHost.Invoke(ctx, userID, sessionID, toolID, args, callID, opts...)
	if err != nil {
		return nil, err
	}
	res.ModelOutput = json.RawMessage(`{"shot":"hfile_shot"}`)
	res.Files = f.files
	return res, nil
}

// Leading blank lines of an answer open no message and are trimmed.
func TestLeadingBlankTrimmed(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Options{})
	defer srv.Close()
	srv.Enqueue(openaitest.Response{Deltas: []string{"\n\n", " Hi", " there"}})
	a := newAgent(t, srv, &fakeHost{}, nil, nil)
	rs := &recordStream{}
	if err := a.HandleMessage(context.Background(), userMsg("m1", "hi"), rs); err != nil {
		t.Fatal(err)
	}
	f := rs.finals()
	if len(f) != 1 || f[0].Text != "Hi there" || rs.deltas(f[0].MsgID) != "Hi there" {
		t.Fatalf("finals %+v, deltas %q", f, rs.deltas(f[0].MsgID))
	}
}
