package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/xconn/xconn/protocol"
)

// A model inside a conversation cannot know the opaque connector_channel_id
// of the channel it talks on, and should not have to: the host knows it.
// ScopeFunctions removes that argument from what the model sees, and
// InConversation fills it in (or checks the model's) when the call is made.

// ScopeFunctions returns defs as a model inside a conversation sees them:
// for every connector tool whose Parameters declare the reserved
// connector_channel_id argument (protocol.ChannelIDArgument, section 10),
// the argument is removed from properties and from required, and
// [FunctionDef.ChannelScoped] is set. The host fills it from the
// conversation's channel when the call is made with [InConversation].
// Built-in tools are returned unchanged: [ToolMessageSend] keeps its
// explicit target (section 10.1). defs is not modified; a schema that does
// not decode as an object is kept as it is.
func ScopeFunctions(defs []FunctionDef) []FunctionDef {
	out := make([]FunctionDef, len(defs))
	for i, d := range defs {
		out[i] = d
		if d.Builtin || d.ChannelScoped {
			continue
		}
		if p, ok := withoutChannelArg(d.Parameters); ok {
			out[i].Parameters = p
			out[i].ChannelScoped = true
		}
	}
	return out
}

// withoutChannelArg returns an object schema without the property
// connector_channel_id and its entry in required; false when the schema
// declares no such property or does not decode.
func withoutChannelArg(schema json.RawMessage) (json.RawMessage, bool) {
	var doc map[string]json.RawMessage
	if len(schema) == 0 || json.Unmarshal(schema, &doc) != nil || doc == nil {
		return nil, false
	}
	var props map[string]json.RawMessage
	if json.Unmarshal(doc["properties"], &props) != nil {
		return nil, false
	}
	if _, ok := props[protocol.ChannelIDArgument]; !ok {
		return nil, false
	}
	delete(props, protocol.ChannelIDArgument)
	b, err := json.Marshal(props)
	if err != nil {
		return nil, false
	}
	doc["properties"] = b
	if raw, ok := doc["required"]; ok {
		var req []json.RawMessage
		if json.Unmarshal(raw, &req) != nil {
			return nil, false
		}
		req = slices.DeleteFunc(req, func(r json.RawMessage) bool {
			var s string
			return json.Unmarshal(r, &s) == nil && s == protocol.ChannelIDArgument
		})
		if len(req) == 0 {
			delete(doc, "required") // JSON Schema draft 4 wants a non-empty array
		} else if doc["required"], err = json.Marshal(req); err != nil {
			return nil, false
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, false
	}
	return out, true
}

// InConversation marks a call of [Host.Invoke] as a model's tool call made
// inside the conversation of user channel userChannelID (the
// [UserMessage.UserChannelID] the agent answers; "" for a call outside any
// conversation), so that the model need not name the channel. For a
// connector tool:
//
//   - The channel is resolved as section 10.1 says: the channel bound to
//     the session first; without a binding, the conversation's channel
//     when its connector declares the tool; else the first usable channel
//     ([WithUserChannel] still chooses the channel instead).
//   - A connector_channel_id argument the model left out (or sent as ""
//     or null) is filled with the resolved channel, so the connector's
//     input_schema check passes. Offer the model [ScopeFunctions] of the
//     tools, which hide the argument.
//   - An explicit connector_channel_id is honoured only when it names a
//     channel this host signed in for the user: without a session binding
//     the call runs on that channel; with one (or with [WithUserChannel])
//     it must be that channel, because the binding cannot be overridden
//     (section 10.1). Anything else fails with invalid_arguments before
//     any packet is sent: a call never runs on a channel the model named
//     wrongly, nor on another user's channel.
//
// Built-in tools are not affected: [ToolMessageSend] takes its explicit
// connector_channel_id and checks it itself.
func InConversation(userChannelID string) InvokeOption {
	return func(c *invokeConfig) { c.scoped, c.convUC = true, userChannelID }
}

// channelArg returns the model's connector_channel_id argument ("" when
// absent, "" or null) and whether args is a JSON object at all (no
// arguments, or null, count as the empty object).
func channelArg(args json.RawMessage) (string, bool, error) {
	if noArgs(args) {
		return "", true, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil || m == nil {
		return "", false, nil
	}
	raw, ok := m[protocol.ChannelIDArgument]
	if !ok || string(raw) == "null" {
		return "", true, nil
	}
	var id string
	if json.Unmarshal(raw, &id) != nil {
		return "", true, protocol.Errorf(protocol.CodeInvalidArguments,
			"%s must be a string (the opaque id of one of your channels), or left out to use this conversation's channel", protocol.ChannelIDArgument)
	}
	return id, true, nil
}

// withChannelArg returns args (a JSON object) with connector_channel_id
// set to channelID.
func withChannelArg(args json.RawMessage, channelID string) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if !noArgs(args) {
		if err := json.Unmarshal(args, &m); err != nil {
			return nil, err
		}
	}
	id, err := json.Marshal(channelID)
	if err != nil {
		return nil, err
	}
	m[protocol.ChannelIDArgument] = id
	return json.Marshal(m)
}

// noArgs reports arguments that are absent or null.
func noArgs(args json.RawMessage) bool {
	t := bytes.TrimSpace(args)
	return len(t) == 0 || string(t) == "null"
}

// scopeChannel prepares a call made with [InConversation], before its
// channel is resolved: it checks the model's explicit connector_channel_id
// and may choose the channel (cfg.ucID). It returns the explicit value
// ("" for none) and whether args is an object the host may fill.
func (h *Host) scopeChannel(ctx context.Context, userID, sessionID, toolID string, args json.RawMessage, cfg *invokeConfig) (string, bool, error) {
	explicit, isObject, err := channelArg(args)
	if err != nil || !isObject {
		return "", false, err // not an object: the connector's validation answers
	}
	if cfg.ucID != "" {
		return explicit, true, nil // the embedder chose; checked after resolution
	}
	bound, err := h.binding(ctx, userID, sessionID)
	if err != nil {
		return "", false, fmt.Errorf("host: invoke: %w", err)
	}
	if explicit == "" {
		if bound == nil && cfg.convUC != "" {
			if c, rt, err := h.channelByID(ctx, cfg.convUC); err == nil && rt != nil && c.uc.UserID == userID {
				if _, _, card := rt.view(); card != nil {
					if _, ok := card.Tool(toolID); ok {
						cfg.ucID = cfg.convUC
					}
				}
			}
		}
		return "", true, nil
	}
	chans, err := h.allUserChannels(ctx, userID)
	if err != nil {
		return "", false, fmt.Errorf("host: invoke: %w", err)
	}
	var pick *userChannelView
	for i := range chans {
		v := &chans[i]
		if v.c.uc.ChannelID != explicit || !v.c.uc.Authenticated {
			continue
		}
		if _, _, card := v.rt.view(); card != nil {
			if _, ok := card.Tool(toolID); ok {
				pick = v
				break
			}
		}
		if pick == nil {
			pick = v
		}
	}
	if pick == nil {
		return "", false, protocol.Errorf(protocol.CodeInvalidArguments,
			"%s %q is not a channel signed in on this host for you; leave it out to use this conversation's channel",
			protocol.ChannelIDArgument, clip(explicit))
	}
	if bound == nil {
		cfg.ucID = pick.c.uc.ID // honoured: resolveChannel checks the tool and the channel's state
	}
	return explicit, true, nil
}

// scopeMismatch is the error of an explicit connector_channel_id that is
// not the channel the call resolved to.
func scopeMismatch(explicit string) error {
	return protocol.Errorf(protocol.CodeInvalidArguments,
		"%s %q is not this conversation's channel, and a tool call cannot move to another one (section 10.1): "+
			"leave %s out to use this conversation's channel, or send to another channel with %s",
		protocol.ChannelIDArgument, clip(explicit), protocol.ChannelIDArgument, ToolMessageSend)
}

// maxEchoedChannel bounds the model's value quoted in an error.
const maxEchoedChannel = 64

// clip cuts a model's value for an error message (at a rune boundary).
func clip(s string) string {
	if len(s) <= maxEchoedChannel {
		return s
	}
	cut := maxEchoedChannel
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
