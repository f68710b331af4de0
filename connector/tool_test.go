package connector_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

func invoke(t *testing.T, c *connectortest.Client, ch, tool, args, callID string) *protocol.Envelope {
	t.Helper()
	p := protocol.ToolInvokePayload{ToolID: tool, Arguments: json.RawMessage(args)}
	if callID != "" {
		p.Context = &protocol.ToolContext{SessionID: "sess_1", ToolCallID: callID}
	}
	env, err := c.Request(testCtx(t), protocol.TypeToolInvoke, ch, p)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestToolInvocation(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	c, _ := f.Connect(t, "")
	ctx := testCtx(t)
	ack, err := c.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	ch := ack.ConnectorChannelID
	arg := func(rest string) string {
		if rest == "" {
			return `{"connector_channel_id":"` + ch + `"}`
		}
		return `{"connector_channel_id":"` + ch + `",` + rest + `}`
	}
	// Before sign-in.
	wantCode(t, invoke(t, c, ch, sdkfixture.ToolEcho, arg(`"text":"x"`), ""), protocol.TypeToolInvokeAck, protocol.CodeConnectionNotAuthenticated)
	env := invoke(t, c, ch, sdkfixture.ToolWhoAmI, arg(""), "")
	wantOK(t, env, protocol.TypeToolInvokeAck)
	openSignedOn(t, c, ch)

	wantCode(t, invoke(t, c, ch, "no_such_tool", arg(""), ""), protocol.TypeToolInvokeAck, protocol.CodeUnknownTool)
	wantCode(t, invoke(t, c, ch, sdkfixture.ToolSum, arg(`"a":"one","b":2`), ""), protocol.TypeToolInvokeAck, protocol.CodeInvalidArguments)
	wantCode(t, invoke(t, c, ch, sdkfixture.ToolSum, `{"a":1,"b":2}`, ""), protocol.TypeToolInvokeAck, protocol.CodeInvalidArguments)
	env = invoke(t, c, ch, sdkfixture.ToolSum, arg(`"a":40,"b":2`), "")
	wantOK(t, env, protocol.TypeToolInvokeAck)
	if r := decode[protocol.ToolInvokeAckPayload](t, env); string(r.Result) != `{"sum":42}` || r.ToolID != sdkfixture.ToolSum {
		t.Fatalf("sum %+v", r)
	}
	// The redundant channel argument never reaches the handler.
	env = invoke(t, c, ch, sdkfixture.ToolArgs, arg(`"keep":true`), "")
	if r := decode[protocol.ToolInvokeAckPayload](t, env); string(r.Result) != `{"keep":true}` {
		t.Fatalf("args handed to the handler: %s", r.Result)
	}
	env = invoke(t, c, ch, sdkfixture.ToolEcho, arg(`"text":"hi"`), "")
	if r := decode[sdkfixture.EchoOut](t, &protocol.Envelope{Payload: decode[protocol.ToolInvokeAckPayload](t, env).Result}); r.Echo != "hi" || r.Channel != ch {
		t.Fatalf("echo %+v", r)
	}

	// Idempotency of side effects.
	first := invoke(t, c, ch, sdkfixture.ToolSend, arg(`"text":"a"`), "call_1")
	wantOK(t, first, protocol.TypeToolInvokeAck)
	repeat := invoke(t, c, ch, sdkfixture.ToolSend, arg(`"text":"a"`), "call_1")
	wantOK(t, repeat, protocol.TypeToolInvokeAck)
	if string(first.Payload) != string(repeat.Payload) {
		t.Fatalf("repeat result %s != %s", repeat.Payload, first.Payload)
	}
	wantCode(t, invoke(t, c, ch, sdkfixture.ToolSend, arg(`"text":"b"`), "call_1"), protocol.TypeToolInvokeAck, protocol.CodeToolCallConflict)
	invoke(t, c, ch, sdkfixture.ToolSend, arg(`"text":"b"`), "call_2")
	if _, _, _, sends := f.Target.Snapshot(); sends != 2 {
		t.Fatalf("side effects ran %d times, want 2", sends)
	}

	// Timeout, panic, failures: stable codes, no secrets.
	wantCode(t, invoke(t, c, ch, sdkfixture.ToolSlow, arg(""), ""), protocol.TypeToolInvokeAck, protocol.CodeToolTimeout)
	env = invoke(t, c, ch, sdkfixture.ToolPanic, arg(""), "")
	wantCode(t, env, protocol.TypeToolInvokeAck, protocol.CodeInternal)
	env2 := invoke(t, c, ch, sdkfixture.ToolLeakError, arg(""), "")
	wantCode(t, env2, protocol.TypeToolInvokeAck, protocol.CodeToolInvokeFailed)
	env3 := invoke(t, c, ch, sdkfixture.ToolLeakResult, arg(""), "")
	wantOK(t, env3, protocol.TypeToolInvokeAck)
	for _, e := range []*protocol.Envelope{env, env2, env3} {
		b, _ := e.Encode()
		if strings.Contains(string(b), f.Opts.Canary) {
			t.Fatalf("secret leaked in %s", b)
		}
	}

	// Progress pushes carry the channel and the call's tool_call_id, and no
	// request_id (they are not the answer).
	env = invoke(t, c, ch, sdkfixture.ToolProgress, arg(""), "call_p1")
	wantOK(t, env, protocol.TypeToolInvokeAck)
	for i := 0; i < 2; i++ {
		p, err := c.NextOfType(ctx, protocol.TypeToolProgressPush)
		if err != nil {
			t.Fatal(err)
		}
		pp := decode[protocol.ToolProgressPayload](t, p)
		if p.ConnectorChannelID != ch || pp.ToolID != sdkfixture.ToolProgress || pp.ToolCallID != "call_p1" || p.RequestID != "" ||
			strings.Contains(pp.Message, f.Opts.Canary) {
			t.Fatalf("progress %+v %+v", p, pp)
		}
	}

	// The connector marks a tool unavailable: descriptor pushed, calls refused.
	h, _ := f.Server.Channel(ch)
	if err := h.SetToolAvailability(ctx, sdkfixture.ToolEcho, connector.ToolAvailability{
		Status: protocol.ToolDeniedByTarget, Permission: protocol.PermissionDenied, Reason: "blocked"}); err != nil {
		t.Fatal(err)
	}
	push, err := c.NextOfType(ctx, protocol.TypeDescriptorPush)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := decode[protocol.DescriptorPayload](t, push).ConnectionDescriptor.ToolState(sdkfixture.ToolEcho); st.Status != protocol.ToolDeniedByTarget {
		t.Fatalf("pushed tool state %+v", st)
	}
	wantCode(t, invoke(t, c, ch, sdkfixture.ToolEcho, arg(`"text":"x"`), ""), protocol.TypeToolInvokeAck, protocol.CodeConnectorChannelUnavailable)
	checkWire(t, c)
}

func TestToolProfileNotNegotiated(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Profiles: []protocol.Profile{protocol.ProfileIMv2, protocol.ProfileIMv1}})
	ctx := testCtx(t)
	c, err := connectortest.Dial(ctx, f.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Hello(ctx, protocol.HelloPayload{ConnectorCardID: sdkfixture.FixtureCardID, ProtocolVersion: "3.0",
		SupportedProfiles: []protocol.Profile{protocol.ProfileIMv1}}); err != nil {
		t.Fatal(err)
	}
	ack, err := c.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	d := ack.ConnectionDescriptor
	if len(d.Connection.Profiles) != 1 || d.Connection.Profiles[0] != protocol.ProfileIMv1 {
		t.Fatalf("profiles %v", d.Connection.Profiles)
	}
	if st, _ := d.ToolState(sdkfixture.ToolIMv2Only); st == nil || st.Status != protocol.ToolNotSupported {
		t.Fatalf("im v2 tool state %+v", st)
	}
	openSignedOn(t, c, ack.ConnectorChannelID)
	wantCode(t, invoke(t, c, ack.ConnectorChannelID, sdkfixture.ToolIMv2Only, `{"connector_channel_id":"`+ack.ConnectorChannelID+`"}`, ""),
		protocol.TypeToolInvokeAck, protocol.CodeConnectorChannelUnavailable)
	// chat.message is an IM v2 packet: not negotiated here, dropped silently.
	msg, _ := connectortest.Packet(protocol.TypeChatMessage, ack.ConnectorChannelID, protocol.ChatMessagePayload{MessageID: "m1", Text: "hi"})
	if err := c.Send(ctx, msg); err != nil {
		t.Fatal(err)
	}
	env, err := c.Request(ctx, protocol.TypePing, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, env, protocol.TypePong)
	select {
	case <-c.Done():
		t.Fatal("closed")
	default:
	}
	if msgs, _, _, _ := f.Target.Snapshot(); len(msgs) != 0 {
		t.Fatalf("un-negotiated chat.message delivered: %+v", msgs)
	}
	// IM v1 message.push from the connector.
	h, _ := f.Server.Channel(ack.ConnectorChannelID)
	file, err := h.CacheFile(ctx, connector.OutgoingFile{Name: "a.txt", Content: strings.NewReader("v1 file")})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.PushMessage(ctx, protocol.MessagePushPayload{MessageID: "v1-1", SenderID: "u1", RawText: "hello", Text: "User message: hello",
		Files: []protocol.ChatFile{file}}); err != nil {
		t.Fatal(err)
	}
	push, err := c.NextOfType(ctx, protocol.TypeMessagePush)
	if err != nil {
		t.Fatal(err)
	}
	mp := decode[protocol.MessagePushPayload](t, push)
	if mp.Profile != protocol.ProfileIMv1 || mp.EventKind != protocol.IMv1EventMessageReceived || mp.MessageID != "v1-1" || mp.Provider != "fixture" {
		t.Fatalf("message.push %+v", mp)
	}
	if vs := protocol.ValidatePayload(push, protocol.ToHost); len(vs) > 0 {
		t.Fatalf("message.push invalid: %v", vs)
	}
	if code, body, _ := get(t, f.URL+mp.Files[0].DownloadURL, ""); code != 200 || string(body) != "v1 file" {
		t.Fatalf("v1 file download %d %q", code, body)
	}
}

// TestIdempotencyWithoutToolCallID is issue 35 item 5: a side-effecting
// call without payload.context (it is optional, section 8.18) is keyed by
// its request_id per tool. The same request sent again (a new packet_id,
// the same request_id, on a new socket too) returns the first result
// without a second side effect; the same request_id with other arguments
// is a tool_call_conflict; another request_id runs again. Without the
// derived key, each resend repeated the side effect.
func TestIdempotencyWithoutToolCallID(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	c, cid := f.Connect(t, "")
	ch := openSigned(t, c)
	ctx := testCtx(t)
	send := func(c *connectortest.Client, requestID, text string) *protocol.Envelope {
		t.Helper()
		env, _ := connectortest.Packet(protocol.TypeToolInvoke, ch, protocol.ToolInvokePayload{ToolID: sdkfixture.ToolSend,
			Arguments: json.RawMessage(`{"connector_channel_id":"` + ch + `","text":"` + text + `"}`)})
		env.RequestID = requestID
		ack, err := c.RoundTrip(ctx, env)
		if err != nil {
			t.Fatal(err)
		}
		return ack
	}
	sends := func() int { _, _, _, n := f.Target.Snapshot(); return n }

	first := send(c, "req-once", "hello")
	if first.Error != nil || sends() != 1 {
		t.Fatalf("first call: %+v, %d sends", first.Error, sends())
	}
	again := send(c, "req-once", "hello")
	if again.Error != nil || string(again.Payload) != string(first.Payload) || sends() != 1 {
		t.Fatalf("resent request: %s %+v, %d sends; want the first result %s and one send", again.Payload, again.Error, sends(), first.Payload)
	}
	c.Close()
	c2, _ := f.Connect(t, cid)
	if _, err := c2.Open(ctx, ch); err != nil {
		t.Fatal(err)
	}
	if resent := send(c2, "req-once", "hello"); resent.Error != nil || sends() != 1 {
		t.Fatalf("resent on a new socket: %+v, %d sends", resent.Error, sends())
	}
	if conflict := send(c2, "req-once", "other text"); conflict.Error == nil || conflict.Error.Code != string(protocol.CodeToolCallConflict) {
		t.Fatalf("the same request_id with other arguments: %+v, want tool_call_conflict", conflict.Error)
	}
	if other := send(c2, "req-twice", "hello"); other.Error != nil || sends() != 2 {
		t.Fatalf("another request_id: %+v, %d sends; want a second send", other.Error, sends())
	}
	if env := send(c2, "req-twice", "hello"); env.Error != nil || sends() != 2 {
		t.Fatalf("repeat of req-twice: %+v, %d sends", env.Error, sends())
	}
}
