package mcp

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

func ptr[T any](v T) *T { return &v }

func (s *Server) addBuiltinTools() {
	s.srv.AddTool(&sdk.Tool{Name: ToolChannelsList, Title: "List my channels",
		Description: "Lists the channels signed in here (and those signed out), with the connector_channel_id to pass to the other tools and the number of unread messages.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"connector_card_id":{"type":"string","description":"optional: one connector's channels only"}},"additionalProperties":false}`),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
	}, s.channelsList)
	s.srv.AddTool(&sdk.Tool{Name: ToolMessageSend, Title: "Send a message to a channel",
		Description: "Sends text to one signed-in channel (a chat: WeChat, Telegram, Feishu, the web chat...). The message is queued durably and retried until the connector accepts it.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"connector_channel_id":{"type":"string","description":"the channel (from connector_channels_list or messages_read); may be left out when one channel is signed in"},` +
			`"text":{"type":"string","minLength":1,"description":"the message text"},` +
			`"connector_card_id":{"type":"string","description":"only when two connectors use the same channel id"},` +
			`"tool_call_id":{"type":"string","maxLength":128,"description":"` + toolCallIDDescribe + `"}},` +
			`"required":["text"],"additionalProperties":false}`),
		// Not idempotent: a repeated call sends again unless it repeats
		// its tool_call_id.
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false)},
	}, s.messageSend)
	s.srv.AddTool(&sdk.Tool{Name: ToolMessagesRead, Title: "Read new messages",
		Description: "Returns the next unread messages users sent on the signed-in channels, oldest first, and marks them read (each is returned once). Files come as resource links. Answer with connector_message_send on the message's connector_channel_id.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"connector_channel_id":{"type":"string","description":"optional: one channel's messages only"},` +
			`"max":{"type":"integer","minimum":1,"maximum":100,"description":"at most this many messages (default 10)"},` +
			`"wait_seconds":{"type":"number","minimum":0,"maximum":30,"description":"wait up to this long for a message when none is unread (default 0)"}},` +
			`"additionalProperties":false}`),
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
	}, s.messagesRead)
}

// channelInfo is one entry of connector_channels_list.
type channelInfo struct {
	ChannelID     string `json:"connector_channel_id"`
	CardID        string `json:"connector_card_id"`
	ConnectorName string `json:"connector_name,omitempty"`
	Provider      string `json:"provider,omitempty"`
	DisplayName   string `json:"display_name,omitempty"`
	Status        string `json:"status,omitempty"`
	Authenticated bool   `json:"authenticated"`
	Unread        int    `json:"unread"`
	DescriptorURI string `json:"descriptor_uri"`
	HistoryURI    string `json:"history_uri"`
}

func (s *Server) info(uc store.UserChannel, unread map[string]int) channelInfo {
	ci := channelInfo{ChannelID: uc.ChannelID, CardID: uc.CardID, Authenticated: uc.Authenticated,
		Unread: unread[uc.ID], DescriptorURI: descriptorURI(uc.ID), HistoryURI: historyURI(uc.ID)}
	if c, ok := s.h.Connector(uc.CardID); ok && c.Card != nil {
		ci.ConnectorName = c.Card.Connector.Name
	}
	if d, err := protocol.ParseDescriptor(uc.Descriptor); err == nil {
		ci.Provider, ci.DisplayName, ci.Status = d.Target.Provider, d.Target.DisplayName, string(d.Connection.Status)
	}
	return ci
}

func (s *Server) channelsList(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	args, bad := s.callArgs(req)
	if bad != nil {
		return bad, nil
	}
	cardID, err := stringArg(args, "connector_card_id")
	if err != nil {
		return toolError(protocol.CodeInvalidArguments, err.Error()), nil
	}
	ucs, err := s.h.Channels(ctx, s.opts.UserID, cardID)
	if err != nil {
		return invokeError(err), nil
	}
	unread := s.in.unread(s.opts.UserID)
	out := struct {
		Channels []channelInfo `json:"channels"`
	}{Channels: []channelInfo{}}
	for _, uc := range ucs {
		out.Channels = append(out.Channels, s.info(uc, unread))
	}
	b, _ := json.Marshal(out)
	return s.result(b, nil), nil
}

func (s *Server) messageSend(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	args, bad := s.callArgs(req)
	if bad != nil {
		return bad, nil
	}
	var in struct {
		ChannelID  string `json:"connector_channel_id"`
		Text       string `json:"text"`
		CardID     string `json:"connector_card_id"`
		ToolCallID string `json:"tool_call_id"`
	}
	b, _ := json.Marshal(args)
	if err := json.Unmarshal(b, &in); err != nil {
		return toolError(protocol.CodeInvalidArguments, "connector_channel_id, text, connector_card_id and tool_call_id must be strings"), nil
	}
	if in.Text == "" {
		return toolError(protocol.CodeInvalidArguments, "text: is required"), nil
	}
	uc, perr := s.resolveChannel(ctx, in.CardID, in.ChannelID)
	if perr != nil {
		return toolError(perr.Code, perr.Message), nil
	}
	body, _ := json.Marshal(map[string]string{"connector_channel_id": uc.ChannelID, "connector_card_id": uc.CardID, "text": in.Text})
	res, err := s.h.Invoke(ctx, s.opts.UserID, "", ToolMessageSend, body, s.callID(ToolMessageSend, in.ToolCallID))
	if err != nil {
		return invokeError(err), nil
	}
	var sent struct {
		MessageID string `json:"message_id"`
	}
	_ = json.Unmarshal(res.Output, &sent)
	s.in.recordOutbound(uc.ID, Message{MessageID: sent.MessageID, ChannelID: uc.ChannelID, CardID: uc.CardID, Text: in.Text, CreatedAt: time.Now().UTC()})
	return s.result(res.ModelOutput, nil), nil
}

func (s *Server) messagesRead(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	args, bad := s.callArgs(req)
	if bad != nil {
		return bad, nil
	}
	var in struct {
		ChannelID string   `json:"connector_channel_id"`
		Max       *int     `json:"max"`
		Wait      *float64 `json:"wait_seconds"`
	}
	b, _ := json.Marshal(args)
	if err := json.Unmarshal(b, &in); err != nil {
		return toolError(protocol.CodeInvalidArguments, "connector_channel_id must be a string, max an integer, wait_seconds a number"), nil
	}
	max := 10
	if in.Max != nil {
		max = *in.Max
	}
	if max < 1 {
		return toolError(protocol.CodeInvalidArguments, "max: must be at least 1"), nil
	}
	max = min(max, s.opts.MaxReadMessages)
	var wait time.Duration
	if in.Wait != nil {
		if *in.Wait < 0 {
			return toolError(protocol.CodeInvalidArguments, "wait_seconds: must not be negative"), nil
		}
		wait = min(time.Duration(*in.Wait*float64(time.Second)), s.opts.MaxReadWait)
	}
	ucID := ""
	if in.ChannelID != "" {
		uc, perr := s.resolveChannel(ctx, "", in.ChannelID)
		if perr != nil {
			return toolError(perr.Code, perr.Message), nil
		}
		ucID = uc.ID
	}
	msgs := s.in.take(ctx, s.opts.UserID, ucID, max, wait)
	out := struct {
		Messages []Message `json:"messages"`
		Unread   int       `json:"unread"`
	}{Messages: make([]Message, 0, len(msgs))}
	var links []*sdk.ResourceLink
	for _, m := range msgs {
		mm := Message{Direction: "inbound", MessageID: m.MessageID, ChannelID: m.ChannelID, CardID: m.CardID,
			Text: m.Text, Files: filesOf(m.Files), CreatedAt: timeOr(m.CreatedAt)}
		out.Messages = append(out.Messages, mm)
		for _, f := range mm.Files {
			links = append(links, &sdk.ResourceLink{URI: f.URI, Name: f.Filename, MIMEType: f.MimeType, Size: ptr(f.Size)})
		}
	}
	out.Unread = s.in.waiting(s.opts.UserID)
	b, _ = json.Marshal(out)
	r := s.result(b, nil)
	for _, l := range links {
		r.Content = append(r.Content, l)
	}
	return r, nil
}

// progressRelay forwards tool.progress of a call to the MCP client as
// notifications/progress. The host's callback must return quickly, so the
// events go through a small buffer (the oldest is dropped when the client
// is slow) to a goroutine that stop ends and waits for.
func progressRelay(ctx context.Context, ss *sdk.ServerSession, token any) (func(*protocol.ToolProgressPayload), func()) {
	ch := make(chan *protocol.ToolProgressPayload, 16)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		last := 0.0
		for p := range ch {
			// MCP wants progress to increase: a fraction the tool gives
			// is shown out of 100 when it moves forward, any other
			// update counts one step.
			n := &sdk.ProgressNotificationParams{ProgressToken: token, Progress: last + 1, Message: p.Message}
			if p.Progress != nil && *p.Progress*100 > last {
				n.Progress, n.Total = *p.Progress*100, 100
			}
			last = n.Progress
			if n.Message == "" {
				n.Message = p.Status
			}
			_ = ss.NotifyProgress(ctx, n)
		}
	}()
	var mu sync.Mutex
	closed := false
	fn := func(p *protocol.ToolProgressPayload) {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return
		}
		select {
		case ch <- p:
		default:
		}
	}
	stop := func() {
		mu.Lock()
		closed = true
		close(ch)
		mu.Unlock()
		wg.Wait()
	}
	return fn, stop
}
