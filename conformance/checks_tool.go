package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

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
// runner has skipped tool.invoke already (capability tool-selected). The
// tool.progress.push packets of that call are judged by
// tool.progress-push; with arguments given (side-effect-tool-selected) the
// call is repeated once with the same tool_call_id for tool.idempotency,
// and made once more without context and repeated with the same
// request_id for tool.idempotency-request-id.
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
		r.skipRest("the signed-in Descriptor does not mark tool " + tool.ToolID + " available")
		return
	}
	c := s.primary
	callID := "call_conformance_" + runTag(s)
	first := s.invokeOnce(ctx, c, tool.ToolID, callID)
	ok = first.err == nil && first.f.env.Type == protocol.TypeToolInvokeAck &&
		((first.f.env.Error != nil && first.f.env.Error.Code != "") || (first.f.env.Error == nil && first.ack.ToolID == tool.ToolID))
	r.check("tool.invoke", ok, "tool.invoke.ack with tool_id "+tool.ToolID+" or an error code", describe(first.f, first.err), s.redact(string(first.f.data)))
	if first.err != nil {
		r.skipRest("no tool.invoke.ack: " + first.err.Error())
		return
	}
	if r.want("tool.progress-push") {
		// A progress event after the terminal ack (section 8.20) shows
		// only if the suite looks a little longer.
		late, _ := c.await(ctx, lateProgressWait(s), func(f frame) bool {
			return f.env != nil && f.env.Type == protocol.TypeToolProgressPush && f.env.ConnectorChannelID == s.channelID
		})
		var fs []finding
		for _, p := range first.progress {
			fs = append(fs, progressProblems(s, p, tool.ToolID)...)
		}
		if late.env != nil {
			add(&fs, "tool.progress.push after tool.invoke.ack", s.redact(string(late.data)))
		}
		if len(first.progress) == 0 && late.env == nil {
			r.skip("tool.progress-push", "the Connector sent no tool.progress.push for the invocation")
		} else {
			findings(r, "tool.progress-push", "tool.progress.push naming the tool and channel, before tool.invoke.ack", fs)
		}
	}
	if r.want("tool.idempotency") {
		if first.f.env.Error != nil {
			r.skip("tool.idempotency", "the first invocation failed with "+first.f.env.Error.Code+": a repeat shows nothing")
		} else {
			s.judgeRepeat(r, "tool.idempotency", first, s.invokeOnce(ctx, c, tool.ToolID, callID))
		}
	}
	if r.want("tool.idempotency-request-id") {
		s.probeRequestIDIdempotency(ctx, c, r, tool.ToolID)
	}
}

// invocation is one tool.invoke of the suite and what answered it.
type invocation struct {
	f        frame
	err      error
	ack      protocol.ToolInvokeAckPayload
	progress []frame // tool.progress.push packets received before the ack
}

// invokeOnce invokes toolID with the run's arguments on the main channel
// and waits for its ack, collecting the progress pushes before it.
func (s *session) invokeOnce(ctx context.Context, c *wsConn, toolID, callID string) invocation {
	return s.invokeEnv(ctx, c, c.newEnvelope(protocol.TypeToolInvoke, s.channelID, protocol.ToolInvokePayload{ToolID: toolID,
		Arguments: s.invokeArgs(s.channelID), Context: &protocol.ToolContext{ToolCallID: callID}}))
}

// invokeEnv sends the tool.invoke env and waits for its ack, collecting
// the progress pushes before it.
func (s *session) invokeEnv(ctx context.Context, c *wsConn, env *protocol.Envelope) invocation {
	var inv invocation
	if inv.err = c.send(ctx, env); inv.err != nil {
		return inv
	}
	inv.f, inv.err = c.await(ctx, 3*s.opts.timeout(), func(f frame) bool {
		if f.env != nil && f.env.Type == protocol.TypeToolProgressPush {
			if f.env.ConnectorChannelID == s.channelID && len(inv.progress) < maxFindings {
				inv.progress = append(inv.progress, f)
			}
			return false
		}
		return answers(f, env)
	})
	if inv.err == nil {
		s.observeAnswer(env, inv.f)
		if inv.f.env.Error == nil {
			_ = inv.f.env.DecodePayload(&inv.ack) // a payload that does not decode has no tool_id: tool.invoke fails
		}
	}
	return inv
}

// judgeRepeat decides id from the answer to a repeat of a call that
// succeeded with first: the first result again, or a refusal, passes; a
// different result shows the tool ran twice.
func (s *session) judgeRepeat(r *recorder, id string, first, again invocation) {
	switch {
	case again.err != nil:
		r.fail(id, "tool.invoke.ack for the repeated call", again.err.Error(), "")
	case again.f.env.Type != protocol.TypeToolInvokeAck:
		r.fail(id, "tool.invoke.ack for the repeated call", describe(again.f, nil), s.redact(string(again.f.data)))
	case again.f.env.Error != nil:
		r.pass(id)
		r.note(id, "the repeat was refused with "+again.f.env.Error.Code)
	default:
		same := bytes.Equal(compactJSON(first.ack.Result), compactJSON(again.ack.Result))
		r.check(id, same, "the first result again: "+s.redact(string(first.ack.Result)),
			"another result, so the tool ran again: "+string(again.ack.Result), s.redact(string(again.f.data)))
	}
}

// probeRequestIDIdempotency invokes the selected side-effecting tool
// without payload.context, then sends the same request again: the same
// request_id in a new packet (section 7: xAgent generates request_id per
// request and the Connector returns it; context is optional, section
// 8.18). The repeat must not run the tool again.
func (s *session) probeRequestIDIdempotency(ctx context.Context, c *wsConn, r *recorder, toolID string) {
	const id = "tool.idempotency-request-id"
	mk := func() *protocol.Envelope {
		env := c.newEnvelope(protocol.TypeToolInvoke, s.channelID, protocol.ToolInvokePayload{ToolID: toolID, Arguments: s.invokeArgs(s.channelID)})
		env.RequestID = "req_conf_repeat_" + runTag(s)
		return env
	}
	first := s.invokeEnv(ctx, c, mk())
	switch {
	case first.err != nil:
		r.skip(id, "no tool.invoke.ack for the call without context: "+first.err.Error())
		return
	case first.f.env.Error != nil:
		r.skip(id, "the call without context failed with "+first.f.env.Error.Code+": a repeat shows nothing")
		return
	}
	s.judgeRepeat(r, id, first, s.invokeEnv(ctx, c, mk()))
}

// lateProgressWait is how long the suite listens for a tool.progress.push
// after the tool.invoke.ack: a quarter of the timeout, at most a second.
func lateProgressWait(s *session) time.Duration {
	return min(s.opts.timeout()/4, time.Second)
}

// progressProblems checks one tool.progress.push received before the ack.
func progressProblems(s *session, f frame, toolID string) []finding {
	var fs []finding
	var p protocol.ToolProgressPayload
	packet := s.redact(string(f.data))
	switch {
	case f.env.DecodePayload(&p) != nil:
		add(&fs, "tool.progress.push payload does not decode", packet)
	case p.ToolID != toolID:
		add(&fs, fmt.Sprintf("tool.progress.push names tool_id %q, the call %q", p.ToolID, toolID), packet)
	}
	return fs
}

// compactJSON returns raw without insignificant whitespace (raw itself
// when it is not JSON).
func compactJSON(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
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
