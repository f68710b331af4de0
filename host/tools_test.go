package host

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/xconn/xconn/protocol"
)

type routed struct {
	RoutedTo   string          `json:"routed_to"`
	Arguments  json.RawMessage `json:"arguments"`
	ToolCallID string          `json:"tool_call_id"`
}

func TestToolsProjectionAndExport(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	ctx := ctxT(t)
	if defs, err := th.Tools(ctx, "gus", ""); err != nil || len(defs) != 0 {
		t.Fatalf("tools before sign-in: %v %v", defs, err)
	}
	th.signinRoom(t, "gus", "im.fake")
	defs, err := th.Tools(ctx, "gus", "")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]FunctionDef{}
	for _, d := range defs {
		names[d.Name] = d
	}
	for _, want := range []string{"im_fake_send", "im_fake_slow", "im_fake.dotted"} {
		if _, ok := names[want]; !ok {
			t.Fatalf("tool %s missing from %v", want, defs)
		}
	}
	if _, ok := names["im_fake_off"]; ok {
		t.Fatal("an unavailable tool was projected")
	}
	if d := names["im_fake_send"]; d.Description != "Send text." || !strings.Contains(string(d.Parameters), "connector_channel_id") || d.CardID != "im.fake" {
		t.Fatalf("def = %+v", d)
	}
	if names[ToolChannelsList].Builtin != true || names[ToolMessageSend].Builtin != true {
		t.Fatalf("built-in channel tools missing: %v", defs)
	}
	defs = cardDefs(defs)
	oa, bad := ExportOpenAI(defs)
	if len(oa) != 2 || len(bad) != 1 || bad[0].ToolID != "im_fake.dotted" {
		t.Fatalf("openai export: %v, unsupported %v", oa, bad)
	}
	an, bad := ExportAnthropic(defs)
	if len(an) != 2 || len(bad) != 1 {
		t.Fatalf("anthropic export: %v, unsupported %v", an, bad)
	}
	b, _ := json.Marshal(oa[0])
	if !strings.Contains(string(b), `"type":"function"`) || !strings.Contains(string(b), `"parameters":{`) {
		t.Fatalf("openai json = %s", b)
	}
}

func TestExportNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ok   bool
	}{
		{"send_message", true},
		{"send-message-2", true},
		{"a", true},
		{strings.Repeat("x", 64), true},
		{strings.Repeat("x", 65), false},
		{"im.send", false},
		{"has space", false},
		{"", false},
		{"ünïcode", false},
	}
	for _, tt := range tests {
		defs := []FunctionDef{{Name: tt.name, Parameters: json.RawMessage(`{"type":"object"}`)}}
		oa, bad1 := ExportOpenAI(defs)
		an, bad2 := ExportAnthropic(defs)
		if (len(oa) == 1) != tt.ok || (len(an) == 1) != tt.ok || (len(bad1) == 1) == tt.ok || (len(bad2) == 1) == tt.ok {
			t.Errorf("%q: openai %v/%v anthropic %v/%v, want ok=%v", tt.name, oa, bad1, an, bad2, tt.ok)
		}
	}
}

func TestInvokeResolution(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	var (
		mu     sync.Mutex
		denied = map[string]bool{}
	)
	th := newTestHost(t, "", func(o *Options) {
		o.Governance = func(_ context.Context, userID, sessionID, cardID string, tool *protocol.Tool) bool {
			mu.Lock()
			defer mu.Unlock()
			return !denied[tool.ToolID]
		}
	})
	th.admitOnline(t, f)
	ctx := ctxT(t)
	first := th.signinRoom(t, "hal", "im.fake")
	second := th.signinRoom(t, "hal", "im.fake")

	// No binding: the first usable channel; the model's connector_channel_id
	// does not route.
	args := json.RawMessage(`{"connector_channel_id":"` + second.ChannelID + `","text":"hi"}`)
	res, err := th.Invoke(ctx, "hal", "s-free", "im_fake_send", args, "call-1")
	if err != nil {
		t.Fatal(err)
	}
	var out routed
	_ = json.Unmarshal(res.Output, &out)
	if res.ChannelID != first.ChannelID || out.RoutedTo != first.ChannelID {
		t.Fatalf("routed to %s/%s, want the first channel %s", res.ChannelID, out.RoutedTo, first.ChannelID)
	}
	if string(out.Arguments) != string(args) || out.ToolCallID != "call-1" {
		t.Fatalf("arguments changed: %s, call id %q", out.Arguments, out.ToolCallID)
	}

	// A session bound to the second channel routes there only.
	if err := th.BindSession(ctx, second.ID, "s-bound"); err != nil {
		t.Fatal(err)
	}
	res, err = th.Invoke(ctx, "hal", "s-bound", "im_fake_send", json.RawMessage(`{"connector_channel_id":"`+first.ChannelID+`","text":"x"}`), "call-2")
	if err != nil || res.ChannelID != second.ChannelID {
		t.Fatalf("bound call: %+v %v", res, err)
	}
	defs, _ := th.Tools(ctx, "hal", "s-bound")
	if len(defs) == 0 {
		t.Fatal("bound session sees no tools")
	}

	// Unavailable tool, unknown tool, another user, governance.
	if _, err := th.Invoke(ctx, "hal", "", "im_fake_off", nil, "c3"); code(err) != protocol.CodeConnectorChannelUnavailable {
		t.Fatalf("unavailable tool: %v", err)
	}
	if _, err := th.Invoke(ctx, "hal", "s-bound", "im_fake_off", nil, "c3b"); code(err) != protocol.CodeConnectorChannelUnavailable {
		t.Fatalf("unavailable tool on bound channel: %v", err)
	}
	if _, err := th.Invoke(ctx, "hal", "", "nope", nil, "c4"); code(err) != protocol.CodeUnknownTool {
		t.Fatalf("unknown tool: %v", err)
	}
	if _, err := th.Invoke(ctx, "ivy", "", "im_fake_send", nil, "c5"); code(err) != protocol.CodeConnectionNotFound {
		t.Fatalf("user without channels: %v", err)
	}
	if _, err := th.Invoke(ctx, "hal", "", "im_fake_send", json.RawMessage(`{bad`), "c6"); code(err) != protocol.CodeInvalidArguments {
		t.Fatalf("bad json: %v", err)
	}
	mu.Lock()
	denied["im_fake_send"] = true
	mu.Unlock()
	if _, err := th.Invoke(ctx, "hal", "", "im_fake_send", nil, "c7"); code(err) != CodeToolDenied {
		t.Fatalf("governance: %v", err)
	}
	defs, _ = th.Tools(ctx, "hal", "")
	for _, d := range defs {
		if d.Name == "im_fake_send" {
			t.Fatal("governance did not filter the projection")
		}
	}
}

func TestInvokeBoundSessionOtherConnector(t *testing.T) {
	t.Parallel()
	f1 := newFakeConnector(t, "im.one", "")
	f2 := newFakeConnector(t, "im.two", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f1)
	th.admitOnline(t, f2)
	ctx := ctxT(t)
	one := th.signinRoom(t, "jo", "im.one")
	th.signinRoom(t, "jo", "im.two")
	if err := th.BindSession(ctx, one.ID, "sess"); err != nil {
		t.Fatal(err)
	}
	if _, err := th.Invoke(ctx, "jo", "sess", "im_two_send", nil, "c1"); code(err) != protocol.CodeConnectorChannelConnectorMismatch {
		t.Fatalf("tool of another connector in a bound session: %v", err)
	}
	res, err := th.Invoke(ctx, "jo", "", "im_two_send", json.RawMessage(`{}`), "c2")
	if err != nil || res.CardID != "im.two" {
		t.Fatalf("unbound call: %+v %v", res, err)
	}
}

func TestInvokeProgress(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	th.signinRoom(t, "kim", "im.fake")
	var mu sync.Mutex
	var got []protocol.ToolProgressPayload
	res, err := th.Invoke(ctxT(t), "kim", "", "im_fake_slow", json.RawMessage(`{}`), "c1", WithProgress(func(p *protocol.ToolProgressPayload) {
		mu.Lock()
		got = append(got, *p)
		mu.Unlock()
	}))
	if err != nil || res == nil {
		t.Fatal(err)
	}
	eventually(t, "progress event", func() bool { return th.events.has(EventToolProgress, nil) })
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].Status != "running" || got[0].Progress == nil || *got[0].Progress != 0.5 {
		t.Fatalf("progress = %+v", got)
	}

}

// Two concurrent calls of one tool on one channel: each sees its own
// progress (by request_id, or by the tool_call_id the push names), and a
// push that names neither reaches no call; alone, a call gets it.
func TestInvokeProgressMatchedToItsCall(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	f.set(func(f *fakeConnector) { f.holdSlow = true })
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	uc := th.signinRoom(t, "kit", "im.fake")
	ctx := ctxT(t)

	var mu sync.Mutex
	seen := map[string][]string{}
	call := func(callID string, done chan<- error) {
		_, err := th.Invoke(ctx, "kit", "", "im_fake_slow", json.RawMessage(`{}`), callID, WithProgress(func(p *protocol.ToolProgressPayload) {
			mu.Lock()
			seen[callID] = append(seen[callID], p.Message)
			mu.Unlock()
		}))
		done <- err
	}
	held := func(n int) []*protocol.Envelope {
		var out []*protocol.Envelope
		eventually(t, fmt.Sprintf("%d calls held", n), func() bool {
			f.mu.Lock()
			defer f.mu.Unlock()
			out = append([]*protocol.Envelope(nil), f.held...)
			return len(out) == n
		})
		f.set(func(f *fakeConnector) { f.held = nil })
		return out
	}
	push := func(requestID, callID, msg string) {
		pp := protocol.ToolProgressPayload{ToolID: "im_fake_slow", Status: "running", Message: msg}
		pp.ToolCallID = callID
		env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: "prog-" + msg, RequestID: requestID,
			ConnectorChannelID: uc.ChannelID, Type: protocol.TypeToolProgressPush}
		if err := env.SetPayload(pp); err != nil {
			t.Fatal(err)
		}
		f.sendOn(uc.ChannelID, env)
	}
	answer := func(req *protocol.Envelope) {
		ack := req.Reply(protocol.TypeToolInvokeAck)
		ack.PacketID = "ack-" + req.PacketID
		_ = ack.SetPayload(protocol.ToolInvokeAckPayload{ToolID: "im_fake_slow", Result: json.RawMessage(`{}`)})
		f.sendOn(uc.ChannelID, ack)
	}
	callIDOf := func(req *protocol.Envelope) string {
		var p protocol.ToolInvokePayload
		_ = req.DecodePayload(&p)
		return p.Context.ToolCallID
	}

	done := make(chan error, 2)
	go call("A", done)
	go call("B", done)
	reqs := held(2)
	for _, req := range reqs {
		id := callIDOf(req)
		push(req.RequestID, "", "req-"+id)
		push("", id, "tcid-"+id)
	}
	push("", "", "anonymous")
	for _, req := range reqs {
		answer(req)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// One call alone takes a push that names no call.
	go call("C", done)
	reqs = held(1)
	push("", "", "alone")
	answer(reqs[0])
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[string][]string{"A": {"req-A", "tcid-A"}, "B": {"req-B", "tcid-B"}, "C": {"alone"}}
	for id, w := range want {
		if strings.Join(seen[id], ",") != strings.Join(w, ",") {
			t.Errorf("call %s saw %v, want %v", id, seen[id], w)
		}
	}
}

// WithUserChannel runs a call on the channel the embedder chose, checked
// against the user's channels and the channel's Card and Descriptor.
func TestInvokeWithUserChannel(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	ctx := ctxT(t)
	first := th.signinRoom(t, "val", "im.fake")
	second := th.signinRoom(t, "val", "im.fake")
	stranger := th.signinRoom(t, "wes", "im.fake")
	tests := []struct {
		name, user, ucID, tool string
		code                   protocol.Code
		routed                 string
	}{
		{"the second channel, not the first", "val", second.ID, "im_fake_send", "", second.ChannelID},
		{"the first, from the second's session", "val", first.ID, "im_fake_send", "", first.ChannelID},
		{"another user's channel", "val", stranger.ID, "im_fake_send", protocol.CodeConnectionNotFound, ""},
		{"no such channel", "val", "uch_nope", "im_fake_send", protocol.CodeConnectionNotFound, ""},
		{"undeclared tool", "val", second.ID, "nope", protocol.CodeUnknownTool, ""},
		{"unavailable tool", "val", second.ID, "im_fake_off", protocol.CodeConnectorChannelUnavailable, ""},
	}
	for _, tt := range tests {
		res, err := th.Invoke(ctx, tt.user, second.SessionID, tt.tool, json.RawMessage(`{}`), "c-"+tt.name, WithUserChannel(tt.ucID))
		switch {
		case tt.code != "" && code(err) != tt.code:
			t.Errorf("%s: err %v, want %s", tt.name, err, tt.code)
		case tt.code == "" && (err != nil || res.ChannelID != tt.routed):
			t.Errorf("%s: %+v %v, want routed to %s", tt.name, res, err, tt.routed)
		}
	}
}
