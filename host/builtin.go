package host

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/xconn/xconn/protocol"
)

// The built-in channel tools (section 10.1). [Host.Tools] offers them next
// to the Card tools and [Host.Invoke] runs them in the host, so that a
// model can act on a channel the user chose instead of the one resolution
// picks. A Card tool with one of these ids is not projected.
const (
	// ToolChannelsList lists the user's channels. Arguments:
	//
	//	{"connector_card_id": "im.wechat"}  // optional: one connector's only
	//
	// Result:
	//
	//	{"channels": [{
	//	  "connector_channel_id": "cch_123",  // opaque: pass it unchanged
	//	  "connector_card_id": "im.wechat",
	//	  "connector_name": "WeChat",
	//	  "provider": "wechat",
	//	  "display_name": "Ann",              // the Descriptor's display-level account, if any
	//	  "status": "connected",              // the Descriptor's connection.status
	//	  "authenticated": true,
	//	  "can_send_messages": true,          // connector_message_send can use it
	//	  "current": true                     // bound to the calling session
	//	}]}
	ToolChannelsList = "connector_channels_list"
	// ToolMessageSend sends text to one channel of the user, chosen by its
	// connector_channel_id (from connector_channels_list or a message's
	// channel). Arguments:
	//
	//	{"connector_channel_id": "cch_123",  // required, one of the user's channels
	//	 "text": "Hello",                     // required, non-empty
	//	 "connector_card_id": "im.wechat"}    // only when two connectors use the same id
	//
	// The channel must be signed in and negotiate IM v2 chat.message. The
	// text is sent as an assistant final chat.message on the host's durable
	// path (the outbox of [ReplyStream.Final]: retried until the connector
	// accepts it or it expires). Result:
	//
	//	{"status": "queued", "message_id": "amsg_...", "connector_channel_id": "cch_123", "connector_card_id": "im.wechat"}
	ToolMessageSend = "connector_message_send"
)

const channelsListSchema = `{"type":"object","properties":{"connector_card_id":{"type":"string","description":"Only the channels of this connector (optional)."}},"additionalProperties":false}`

const messageSendSchema = `{"type":"object","required":["connector_channel_id","text"],"properties":{` +
	`"connector_channel_id":{"type":"string","description":"The channel to send to: a connector_channel_id returned by connector_channels_list, passed unchanged."},` +
	`"text":{"type":"string","minLength":1,"description":"The text to send."},` +
	`"connector_card_id":{"type":"string","description":"The channel's connector, only needed when two connectors list the same connector_channel_id."}},` +
	`"additionalProperties":false}`

// builtinTools are the definitions of the built-in tools, as Cards declare
// tools (for the Governance hook, which sees them with card id "").
var builtinTools = []protocol.Tool{
	{ToolID: ToolChannelsList, Title: "List my channels",
		Description: "List the user's connector channels (chat apps, devices): their connector_channel_id, connector, provider, display name and status, and which one is the current conversation.",
		InputSchema: json.RawMessage(channelsListSchema)},
	{ToolID: ToolMessageSend, Title: "Send a message to a channel",
		Description: "Send a text message to one of the user's channels, chosen explicitly by its connector_channel_id from connector_channels_list.",
		InputSchema: json.RawMessage(messageSendSchema)},
}

func isBuiltin(toolID string) bool { return toolID == ToolChannelsList || toolID == ToolMessageSend }

func builtinTool(toolID string) *protocol.Tool {
	for i := range builtinTools {
		if builtinTools[i].ToolID == toolID {
			return &builtinTools[i]
		}
	}
	return nil
}

// userChannel is one of the user's channels across connectors.
type userChannelView struct {
	rt *runtime
	c  *cachedChannel
}

func (h *Host) allUserChannels(ctx context.Context, userID string) ([]userChannelView, error) {
	var out []userChannelView
	for _, rt := range h.runtimes() {
		cc, err := h.userCards(ctx, userID, rt.cardID)
		if err != nil {
			return nil, err
		}
		for _, c := range cc.list {
			out = append(out, userChannelView{rt: rt, c: c})
		}
	}
	return out, nil
}

// canSend reports whether connector_message_send can use a channel: signed
// in, and chat.message to the connector in its catalog.
func (v userChannelView) canSend() bool {
	return v.c.uc.Authenticated && v.c.parsed && v.rt.catalog(v.c.profiles).Allows(protocol.TypeChatMessage, protocol.ToConnector)
}

// builtinDefs returns the built-in tools to offer userID in sessionID:
// none without a signed-in channel, connector_message_send only when a
// channel can take it; governance filters them.
func (h *Host) builtinDefs(ctx context.Context, userID, sessionID string) ([]FunctionDef, error) {
	if h.opts.NoBuiltinTools {
		return nil, nil
	}
	chans, err := h.allUserChannels(ctx, userID)
	if err != nil {
		return nil, err
	}
	signedIn, send := false, false
	for _, v := range chans {
		signedIn = signedIn || v.c.uc.Authenticated
		send = send || v.canSend()
	}
	if !signedIn {
		return nil, nil
	}
	var out []FunctionDef
	for i := range builtinTools {
		t := &builtinTools[i]
		if t.ToolID == ToolMessageSend && !send || !h.allowed(ctx, userID, sessionID, "", t) {
			continue
		}
		out = append(out, FunctionDef{Name: t.ToolID, Title: t.Title, Description: t.Description, Parameters: t.InputSchema, Builtin: true})
	}
	return out, nil
}

// invokeBuiltin runs a built-in tool.
func (h *Host) invokeBuiltin(ctx context.Context, userID, sessionID, toolID string, args json.RawMessage) (*Result, error) {
	if !h.allowed(ctx, userID, sessionID, "", builtinTool(toolID)) {
		return nil, protocol.Errorf(CodeToolDenied, "tool %q is not allowed for this user or session", toolID)
	}
	var in struct {
		ChannelID string  `json:"connector_channel_id"`
		CardID    string  `json:"connector_card_id"`
		Text      *string `json:"text"`
	}
	if len(args) > 0 && string(args) != "null" {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return nil, protocol.Errorf(protocol.CodeInvalidArguments, "%s arguments: %v", toolID, err)
		}
	}
	chans, err := h.allUserChannels(ctx, userID)
	if err != nil {
		return nil, err
	}
	if toolID == ToolChannelsList {
		return h.listChannels(ctx, userID, sessionID, in.CardID, chans)
	}
	switch {
	case in.ChannelID == "":
		return nil, protocol.Errorf(protocol.CodeInvalidArguments, "connector_message_send needs connector_channel_id (from connector_channels_list)")
	case in.Text == nil || *in.Text == "":
		return nil, protocol.Errorf(protocol.CodeInvalidArguments, "connector_message_send needs a non-empty text")
	}
	var match []userChannelView
	for _, v := range chans {
		if v.c.uc.ChannelID == in.ChannelID && (in.CardID == "" || v.rt.cardID == in.CardID) {
			match = append(match, v)
		}
	}
	switch {
	case len(match) == 0:
		return nil, protocol.Errorf(protocol.CodeConnectionNotFound, "%q is not one of the user's channels; call connector_channels_list", in.ChannelID)
	case len(match) > 1:
		return nil, protocol.Errorf(protocol.CodeInvalidArguments, "two connectors use channel %q: pass connector_card_id too", in.ChannelID)
	}
	v := match[0]
	switch {
	case !v.c.uc.Authenticated:
		return nil, protocol.Errorf(protocol.CodeConnectionNotAuthenticated, "channel %q is not signed in", in.ChannelID)
	case !v.canSend():
		return nil, protocol.Errorf(protocol.CodeUnsupportedPacket, "channel %q does not take chat messages", in.ChannelID)
	}
	id, err := newReplyStream(h, v.c.uc.ID).Final(ctx, *in.Text)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(map[string]string{"status": "queued", "message_id": id,
		"connector_channel_id": v.c.uc.ChannelID, "connector_card_id": v.rt.cardID})
	if err != nil {
		return nil, err
	}
	return &Result{CardID: v.rt.cardID, UserChannelID: v.c.uc.ID, ChannelID: v.c.uc.ChannelID, ToolID: toolID, Output: out, ModelOutput: out}, nil
}

type channelEntry struct {
	ChannelID     string `json:"connector_channel_id"`
	CardID        string `json:"connector_card_id"`
	ConnectorName string `json:"connector_name,omitempty"`
	Provider      string `json:"provider,omitempty"`
	DisplayName   string `json:"display_name,omitempty"`
	Status        string `json:"status"`
	Authenticated bool   `json:"authenticated"`
	CanSend       bool   `json:"can_send_messages"`
	Current       bool   `json:"current,omitempty"`
}

func (h *Host) listChannels(ctx context.Context, userID, sessionID, cardID string, chans []userChannelView) (*Result, error) {
	list := []channelEntry{}
	for _, v := range chans {
		if cardID != "" && v.rt.cardID != cardID {
			continue
		}
		_, _, card := v.rt.view()
		e := channelEntry{ChannelID: v.c.uc.ChannelID, CardID: v.rt.cardID, ConnectorName: card.Connector.Name,
			Status: string(v.c.status), Authenticated: v.c.uc.Authenticated, CanSend: v.canSend(),
			Current: sessionID != "" && v.c.uc.SessionID == sessionID}
		if d, err := protocol.ParseDescriptor(v.c.uc.Descriptor); err == nil {
			e.Provider, e.DisplayName = d.Target.Provider, d.Target.DisplayName
			if e.DisplayName == "" {
				e.DisplayName = d.Target.Label
			}
		}
		if e.Status == "" {
			e.Status = "unknown"
		}
		list = append(list, e)
	}
	out, err := json.Marshal(map[string]any{"channels": list})
	if err != nil {
		return nil, err
	}
	return &Result{ToolID: ToolChannelsList, Output: out, ModelOutput: out}, nil
}
