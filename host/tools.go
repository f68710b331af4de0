package host

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// FunctionDef is one connector tool projected as a model function: Name is
// the tool_id unchanged, Parameters its input_schema.
type FunctionDef struct {
	Name        string
	Title       string
	Description string
	Parameters  json.RawMessage
	// CardID is the connector that declares the tool.
	CardID string
}

// Result is the outcome of a successful [Host.Invoke].
type Result struct {
	CardID        string
	UserChannelID string
	// ChannelID is the connector_channel_id the call was routed to.
	ChannelID string
	ToolID    string
	// Output is tool.invoke.ack payload.result, unchanged.
	Output json.RawMessage
}

// InvokeOption adjusts one [Host.Invoke].
type InvokeOption func(*invokeConfig)

type invokeConfig struct {
	progress func(*protocol.ToolProgressPayload)
}

// WithProgress receives the tool.progress.push events of the call before
// the call returns: those carrying its request_id; else, on its channel,
// those whose payload names its tool_call_id (an extension member
// "tool_call_id"); else those of its tool_id while it is the only call of
// that tool in flight on the channel. Two concurrent calls of one tool
// never see each other's progress. fn runs on the socket's reader
// goroutine and must return quickly.
func WithProgress(fn func(*protocol.ToolProgressPayload)) InvokeOption {
	return func(c *invokeConfig) { c.progress = fn }
}

// binding returns the user channel bound to sessionID, if any: the first
// in connector order.
func (h *Host) binding(ctx context.Context, userID, sessionID string) (*cachedChannel, error) {
	if sessionID == "" {
		return nil, nil
	}
	for _, rt := range h.runtimes() {
		cc, err := h.userCards(ctx, userID, rt.cardID)
		if err != nil {
			return nil, err
		}
		if c := cc.bySession[sessionID]; c != nil {
			return c, nil
		}
	}
	return nil, nil
}

func (h *Host) allowed(ctx context.Context, userID, sessionID, cardID string, t *protocol.Tool) bool {
	return h.opts.Governance == nil || h.opts.Governance(ctx, userID, sessionID, cardID, t)
}

// Tools projects the tools a user may call in a session: for a session
// bound to a channel, the tools of that channel's Card its Descriptor marks
// available; otherwise, per connector (by card id), the Card's tools
// available on at least one of the user's usable channels. The governance
// hook filters the result. Names are tool_ids unchanged; a tool_id declared
// by two connectors is projected once, from the first.
func (h *Host) Tools(ctx context.Context, userID, sessionID string) ([]FunctionDef, error) {
	bound, err := h.binding(ctx, userID, sessionID)
	if err != nil {
		return nil, fmt.Errorf("host: tools: %w", err)
	}
	var out []FunctionDef
	seen := map[string]bool{}
	for _, rt := range h.runtimes() {
		var cc *cardChannels
		if bound != nil {
			if bound.uc.CardID != rt.cardID {
				continue
			}
		} else if cc, err = h.userCards(ctx, userID, rt.cardID); err != nil {
			return nil, fmt.Errorf("host: tools: %w", err)
		}
		_, _, card := rt.view()
		for i := range card.Tools {
			t := &card.Tools[i]
			if seen[t.ToolID] {
				continue
			}
			var avail bool
			if bound != nil {
				avail = bound.usable(t.ToolID)
			} else {
				avail = cc.firstFor[t.ToolID] != nil
			}
			if !avail || !h.allowed(ctx, userID, sessionID, rt.cardID, t) {
				continue
			}
			seen[t.ToolID] = true
			desc := t.Description
			if desc == "" {
				desc = t.Title
			}
			out = append(out, FunctionDef{Name: t.ToolID, Title: t.Title, Description: desc,
				Parameters: t.InputSchema, CardID: rt.cardID})
		}
	}
	return out, nil
}

// Invoke calls a tool for a user in a session. The channel is resolved by
// the rules of section 10.1: the channel bound to the session first (a
// bound Card that does not declare the tool is rejected with
// connector_channel_connector_mismatch, an unusable bound channel with
// connector_channel_unavailable), else the first usable channel of the
// user among the connectors declaring the tool. The resolved
// connector_channel_id is written to the envelope; args reach the connector
// unchanged, and a connector_channel_id inside them never changes routing.
// Failures are *protocol.Error values with their wire code (the ack's error
// for a failed call).
func (h *Host) Invoke(ctx context.Context, userID, sessionID, toolID string, args json.RawMessage, toolCallID string, opts ...InvokeOption) (*Result, error) {
	var cfg invokeConfig
	for _, o := range opts {
		o(&cfg)
	}
	// Encoding the payload first checks the arguments (one pass).
	payload, err := invokePayload(toolID, args, sessionID, toolCallID)
	if err != nil {
		return nil, err
	}
	uc, rt, tool, err := h.resolve(ctx, userID, sessionID, toolID)
	if err != nil {
		return nil, err
	}
	if !h.allowed(ctx, userID, sessionID, rt.cardID, tool) {
		return nil, protocol.Errorf(CodeToolDenied, "tool %q is not allowed for this user or session", toolID)
	}
	s, r, err := rt.ensureRoute(ctx, uc)
	if err != nil {
		return nil, err
	}
	env, err := s.request(ctx, protocol.TypeToolInvoke, r.channelID, payload, reqOpts{timeout: h.opts.ToolTimeout, toolID: toolID, callID: toolCallID, progress: cfg.progress})
	if err != nil {
		return nil, err
	}
	if out, ok := scanInvokeAck(env.Payload); ok {
		return &Result{CardID: rt.cardID, UserChannelID: uc.ID, ChannelID: r.channelID, ToolID: toolID, Output: out}, nil
	}
	var ack protocol.ToolInvokeAckPayload
	if len(env.Payload) > 0 && string(env.Payload) != "null" {
		// The payload decodes itself (validating it): json.Unmarshal would
		// scan it once more first.
		err = ack.UnmarshalJSON(env.Payload)
	} else {
		err = env.DecodePayload(&ack)
	}
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInvalidPacket, "tool.invoke.ack payload: %v", err)
	}
	return &Result{CardID: rt.cardID, UserChannelID: uc.ID, ChannelID: r.channelID, ToolID: toolID, Output: ack.Result}, nil
}

// resolve picks the channel of a tool call (section 10.1), from the
// host's cache of the user's channels.
func (h *Host) resolve(ctx context.Context, userID, sessionID, toolID string) (store.UserChannel, *runtime, *protocol.Tool, error) {
	bound, err := h.binding(ctx, userID, sessionID)
	if err != nil {
		return store.UserChannel{}, nil, nil, fmt.Errorf("host: invoke: %w", err)
	}
	if bound != nil {
		rt := h.runtime(bound.uc.CardID)
		if rt == nil {
			return store.UserChannel{}, nil, nil, protocol.Errorf(protocol.CodeConnectionNotFound, "the session's connector %s is not admitted", bound.uc.CardID)
		}
		_, _, card := rt.view()
		t, ok := card.Tool(toolID)
		if !ok {
			return store.UserChannel{}, nil, nil, protocol.Errorf(protocol.CodeConnectorChannelConnectorMismatch, "tool %q does not belong to the session's connector %s", toolID, bound.uc.CardID)
		}
		if !bound.usable(toolID) {
			return store.UserChannel{}, nil, nil, protocol.Errorf(protocol.CodeConnectorChannelUnavailable, "the session's channel cannot run tool %q now", toolID)
		}
		return bound.uc, rt, t, nil
	}
	declared, channels := false, false
	for _, rt := range h.runtimes() {
		_, _, card := rt.view()
		t, ok := card.Tool(toolID)
		if !ok {
			continue
		}
		declared = true
		cc, err := h.userCards(ctx, userID, rt.cardID)
		if err != nil {
			return store.UserChannel{}, nil, nil, fmt.Errorf("host: invoke: %w", err)
		}
		if len(cc.list) > 0 {
			channels = true
		}
		if c := cc.firstFor[toolID]; c != nil {
			return c.uc, rt, t, nil
		}
	}
	switch {
	case !declared:
		return store.UserChannel{}, nil, nil, protocol.Errorf(protocol.CodeUnknownTool, "no admitted connector declares tool %q", toolID)
	case !channels:
		return store.UserChannel{}, nil, nil, protocol.Errorf(protocol.CodeConnectionNotFound, "the user has no channel for tool %q", toolID)
	}
	return store.UserChannel{}, nil, nil, protocol.Errorf(protocol.CodeConnectorChannelUnavailable, "no channel of the user can run tool %q now", toolID)
}
