package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/mcp"
)

// readMessages calls messages_read and decodes its messages.
func (c *client) readMessages(args map[string]any) ([]mcp.Message, *sdk.CallToolResult) {
	c.t.Helper()
	res, text := c.mustCall(mcp.ToolMessagesRead, args)
	var out struct {
		Messages []mcp.Message `json:"messages"`
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		c.t.Fatalf("messages_read result %s: %v", text, err)
	}
	return out.Messages, res
}

// TestGoClientConversation holds a conversation through the official Go
// SDK client: initialize, tools/list, a form sign-in, a connector's send
// tool called without a channel argument, an inbound post read with
// messages_read, an answer with connector_message_send.
func TestGoClientConversation(t *testing.T) {
	s := newSystem(t)
	c := s.connect()
	init := c.cs.InitializeResult()
	if init == nil || init.ServerInfo.Name != "xconn" || init.Capabilities.Tools == nil || init.Capabilities.Resources == nil || !init.Capabilities.Resources.Subscribe {
		t.Fatalf("initialize result %+v", init)
	}
	tools := c.toolNames()
	for _, name := range []string{mcp.ToolChannelsList, mcp.ToolMessageSend, mcp.ToolMessagesRead, mcp.ToolSignIn, mcp.ToolSignInStatus, mcp.ToolSignOut} {
		if tools[name] == nil {
			t.Errorf("tools/list lacks %s", name)
		}
	}
	if tools[webchat.ToolSend] != nil {
		t.Error("the send tool is listed before any channel is signed in")
	}
	if a := tools[mcp.ToolChannelsList].Annotations; a == nil || !a.ReadOnlyHint {
		t.Errorf("connector_channels_list annotations %+v: want readOnlyHint", a)
	}

	chID := c.signInRoom("lobby")
	send := c.waitTool(webchat.ToolSend)
	schema, _ := json.Marshal(send.InputSchema)
	if strings.Contains(string(schema), `"required":["connector_channel_id"`) || !strings.Contains(string(schema), `"tool_call_id"`) {
		t.Errorf("projected schema %s: connector_channel_id should be optional and tool_call_id offered", schema)
	}

	b := s.browser("lobby", testAccessCode)
	// A model calls the send tool as it naturally would: text only.
	res, text := c.mustCall(webchat.ToolSend, map[string]any{"text": "proactive ping"})
	if res.IsError {
		t.Fatalf("send: %s", text)
	}
	if got := b.assistantTexts(1); got[0] != "proactive ping" {
		t.Fatalf("page shows %q", got)
	}

	// An explicit channel of someone else is refused.
	res, text = c.call(webchat.ToolSend, map[string]any{"text": "x", "connector_channel_id": "cch_not_mine"})
	if !res.IsError || !strings.Contains(text, "connection_not_found") {
		t.Fatalf("foreign channel: %s", text)
	}

	// Nothing unread yet: an empty read returns at once.
	msgs, _ := c.readMessages(map[string]any{})
	if len(msgs) != 0 {
		t.Fatalf("unread before any post: %+v", msgs)
	}
	id1 := b.post("hello over mcp")
	id2 := b.post("second one")
	msgs, _ = c.readMessages(map[string]any{"wait_seconds": 10, "max": 5})
	for len(msgs) < 2 {
		more, _ := c.readMessages(map[string]any{"wait_seconds": 10})
		if len(more) == 0 {
			t.Fatalf("only %d of 2 messages read", len(msgs))
		}
		msgs = append(msgs, more...)
	}
	if msgs[0].MessageID != id1 || msgs[0].Text != "hello over mcp" || msgs[1].MessageID != id2 || msgs[0].ChannelID != chID || msgs[0].Direction != "inbound" {
		t.Fatalf("messages %+v, want %s then %s on %s", msgs, id1, id2, chID)
	}
	// Each message is handed out once.
	if again, _ := c.readMessages(map[string]any{"wait_seconds": 0.3}); len(again) != 0 {
		t.Fatalf("read twice: %+v", again)
	}

	_, text = c.mustCall(mcp.ToolMessageSend, map[string]any{"connector_channel_id": msgs[0].ChannelID, "text": "answer over mcp"})
	if !strings.Contains(text, `"status":"queued"`) {
		t.Fatalf("connector_message_send: %s", text)
	}
	if got := b.assistantTexts(1); got[0] != "answer over mcp" {
		t.Fatalf("page shows %q", got)
	}

	_, text = c.mustCall(mcp.ToolChannelsList, nil)
	if !strings.Contains(text, `"connector_channel_id":"`+chID+`"`) || !strings.Contains(text, `"authenticated":true`) {
		t.Fatalf("connector_channels_list: %s", text)
	}
}

// TestToolCallIDIdempotent: a client retrying a call with the same
// tool_call_id sends one message.
func TestToolCallIDIdempotent(t *testing.T) {
	s := newSystem(t)
	c := s.connect()
	c.signInRoom("idem")
	c.waitTool(webchat.ToolSend)
	b := s.browser("idem", testAccessCode)
	for range 3 {
		c.mustCall(webchat.ToolSend, map[string]any{"text": "once", "tool_call_id": "retry-1"})
	}
	c.mustCall(webchat.ToolSend, map[string]any{"text": "after", "tool_call_id": "retry-2"})
	if got := b.assistantTexts(2); got[0] != "once" || got[1] != "after" {
		t.Fatalf("page shows %q, want [once after]", got)
	}
	// The same id with other arguments is a conflict, not a second send.
	res, text := c.call(webchat.ToolSend, map[string]any{"text": "other", "tool_call_id": "retry-1"})
	if !res.IsError || !strings.Contains(text, "tool_call_conflict") {
		t.Fatalf("reuse with other arguments: %v %s", res.IsError, text)
	}
}

// TestUnreadSurvivesCrash: a message no client read is not acknowledged:
// after the client and the host die, a new host and client get it.
func TestUnreadSurvivesCrash(t *testing.T) {
	s := newSystem(t)
	c := s.connect()
	c.signInRoom("crash")
	b := s.browser("crash", testAccessCode)
	id := b.post("read me after the crash")
	// The message reached the host and waits for a reader.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, text := c.mustCall(mcp.ToolChannelsList, nil)
		if strings.Contains(text, `"unread":1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the message never reached the inbox: %s", text)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.cs.Close() // the client goes away without reading
	s.stopHost()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s.startHost(ctx, nil)
	s.waitOnline(ctx)
	c2 := s.connect()
	msgs, _ := c2.readMessages(map[string]any{"wait_seconds": 15})
	if len(msgs) != 1 || msgs[0].MessageID != id {
		t.Fatalf("after the restart: %+v, want %s", msgs, id)
	}
}
