package conformance

import (
	"context"
	"encoding/json"

	"github.com/xconn/xconn/protocol"
)

// selectedTool returns the Card tool named by Options.Tool, or false.
func (s *session) selectedTool() (*protocol.Tool, bool) {
	if s.card == nil || s.opts.Tool == "" {
		return nil, false
	}
	return s.card.Tool(s.opts.Tool)
}

// invokeArgs returns Options.ToolArgs with connector_channel_id set to ch.
// Nothing else is added: the suite never invents a tool argument, because
// a Card does not say which tools have side effects.
func (s *session) invokeArgs(ch string) json.RawMessage {
	args, ok := jsonObject(s.opts.ToolArgs)
	if !ok {
		args = map[string]json.RawMessage{} // empty ToolArgs; newSession refused anything else
	}
	args[protocol.ChannelIDArgument] = mustJSON(ch)
	b, _ := json.Marshal(args) // raw members that decoded always encode
	return b
}

// probeToolInvoke invokes the tool selected by Options.Tool, with
// Options.ToolArgs, on the signed-in channel. Without a selected tool the
// runner has skipped tool.invoke already (capability tool-selected).
func probeToolInvoke(ctx context.Context, s *session, r *recorder) {
	if !needPrimary(s, r) {
		return
	}
	if ok, why := s.has(CapHasAuthenticatedChannel); !ok {
		r.skipRest(why)
		return
	}
	tool, ok := s.selectedTool()
	if !ok {
		r.skipRest("the Card declares no tool " + s.opts.Tool + " (Options.Tool, --tool)")
		return
	}
	if !s.authDesc.ToolAvailable(tool.ToolID) {
		r.skip("tool.invoke", "the signed-in Descriptor does not mark tool "+tool.ToolID+" available")
		return
	}
	c := s.primary
	env := c.newEnvelope(protocol.TypeToolInvoke, s.channelID, protocol.ToolInvokePayload{ToolID: tool.ToolID,
		Arguments: s.invokeArgs(s.channelID), Context: &protocol.ToolContext{ToolCallID: "call_conformance_" + runTag(s)}})
	if err := c.send(ctx, env); err != nil {
		r.skip("tool.invoke", err.Error())
		return
	}
	f, err := c.await(ctx, 3*s.opts.timeout(), func(f frame) bool { return answers(f, env) && f.env.Type != protocol.TypeToolProgressPush })
	if err == nil {
		s.observeAnswer(env, f)
	}
	var p protocol.ToolInvokeAckPayload
	ok = err == nil && f.env.Type == protocol.TypeToolInvokeAck &&
		((f.env.Error != nil && f.env.Error.Code != "") || (f.env.Error == nil && f.env.DecodePayload(&p) == nil && p.ToolID == tool.ToolID))
	r.check("tool.invoke", ok, "tool.invoke.ack with tool_id "+tool.ToolID+" or an error code", describe(f, err), s.redact(string(f.data)))
}

// unauthTool returns the tool and arguments tool.unauthenticated invokes on
// the channel ch that is not signed in: the selected tool with its
// arguments, else the Card's first tool with connector_channel_id only.
func (s *session) unauthTool(ch string) (string, json.RawMessage) {
	if t, ok := s.selectedTool(); ok {
		return t.ToolID, s.invokeArgs(ch)
	}
	return s.card.Tools[0].ToolID, channelArgs(ch)
}
