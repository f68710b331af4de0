package connector

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// handleToolInvoke answers a tool.invoke whose payload process has
// already decoded and validated into p.
// ctx is sess.ctx, or a context derived from it that carries the packet's
// span.
func (sess *session) handleToolInvoke(ctx context.Context, env *protocol.Envelope, p *protocol.ToolInvokePayload) {
	s := sess.srv
	start := time.Now()
	result, compact, perr := sess.invoke(ctx, env, p)
	code := "ok"
	if perr != nil {
		code = metricCode(perr.Code)
		sess.replyError(env, protocol.TypeToolInvokeAck, perr)
	} else {
		if payload, err := invokeAckPayload(p.ToolID, result, compact); err == nil {
			sess.replyTrusted(env, protocol.TypeToolInvokeAck, payload)
		} else {
			sess.reply(env, protocol.TypeToolInvokeAck, protocol.ToolInvokeAckPayload{ToolID: p.ToolID, Result: result})
		}
	}
	tm := s.metrics.tool(metricTool(s, p.ToolID))
	if code == "ok" {
		tm.ok.Inc()
	} else {
		s.metrics.toolCalls.WithLabelValues(metricTool(s, p.ToolID), code).Inc()
	}
	tm.latency.Observe(time.Since(start).Seconds())
}

// invoke checks and runs one tool call. The returned error is secret-free.
// compact reports a result known to be what json.Marshal writes (valid,
// compact, HTML-escaped): the result of a typed tool.
func (sess *session) invoke(ctx context.Context, env *protocol.Envelope, p *protocol.ToolInvokePayload) (json.RawMessage, bool, *protocol.Error) {
	s := sess.srv
	id := env.ConnectorChannelID
	cardTool, inCard := s.card.Tool(p.ToolID)
	s.mu.Lock()
	entry := s.tools[p.ToolID]
	validator := s.validators[p.ToolID]
	s.mu.Unlock()
	if !inCard || entry == nil {
		return nil, false, protocol.Errorf(protocol.CodeUnknownTool, "tool %q is not declared by this Connector", p.ToolID)
	}
	snap, err := s.toolSnap(id, p.ToolID)
	if err != nil {
		return nil, false, protocol.AsError(err)
	}
	if !entry.opts.Public && !isAuthenticated(snap.rec.Status) {
		return nil, false, protocol.Errorf(protocol.CodeConnectionNotAuthenticated, "channel %s is not signed in", id)
	}
	// The hello's negotiation is hello supported_profiles ∩ the Card's
	// profiles, computed once per hello and immutable: reuse it.
	st := s.toolState(*cardTool, snap, snap.rec.Status, sess.negotiated())
	if st.Status != protocol.ToolAvailable || st.TargetPermissionState == protocol.PermissionDenied ||
		st.TargetPermissionState == protocol.PermissionRequiresReauth {
		return nil, false, s.unavailableError(p.ToolID, snap, st)
	}
	args := p.Arguments
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage(`{}`)
	}
	if vs := validator.Validate(args); len(vs) > 0 {
		return nil, false, protocol.Errorf(protocol.CodeInvalidArguments, "%s", vs.Error())
	}
	stripped, ok := stripChannelMember(args)
	if !ok {
		var err error
		if stripped, _, err = stripChannelArg(args); err != nil {
			return nil, false, protocol.Errorf(protocol.CodeInvalidArguments, "arguments must be a JSON object")
		}
	}
	// The Call and its Channel in one allocation.
	box := &struct {
		call Call
		ch   Channel
	}{ch: Channel{srv: s, id: id}}
	call := &box.call
	*call = Call{Channel: &box.ch, ToolID: p.ToolID, sess: sess, channelID: id}
	if p.Context != nil {
		call.ToolCallID, call.SessionID = p.Context.ToolCallID, p.Context.SessionID
	}
	call.IdempotencyKey = idempotencyKey(p.ToolID, call.ToolCallID, env.RequestID)

	act := entry.opts.Mode == ToolAct
	idem := (entry.opts.SideEffect || act) && call.IdempotencyKey != ""
	hash := ""
	if idem {
		_, fields, err := stripChannelArg(args)
		if err != nil {
			return nil, false, protocol.Errorf(protocol.CodeInvalidArguments, "arguments must be a JSON object")
		}
		canon, err := canonicalArgs(fields)
		if err != nil {
			return nil, false, protocol.Errorf(protocol.CodeInvalidArguments, "arguments must be a JSON object")
		}
		sum := sha256.Sum256(canon)
		hash = hex.EncodeToString(sum[:])
		rec, err := s.opts.Store.GetToolCall(ctx, s.card.ConnectorCardID, id, call.IdempotencyKey)
		switch {
		case err == nil:
			if rec.ToolID != p.ToolID || rec.ArgsHash != hash {
				if call.ToolCallID == "" {
					return nil, false, protocol.Errorf(protocol.CodeToolCallConflict, "request_id %s was used with other arguments", env.RequestID)
				}
				return nil, false, protocol.Errorf(protocol.CodeToolCallConflict, "tool_call_id %s was used with other arguments", call.ToolCallID)
			}
			s.metrics.toolReplays.Inc()
			if rec.ErrCode != "" {
				return nil, false, &protocol.Error{Code: protocol.Code(rec.ErrCode), Message: rec.ErrMessage}
			}
			return rec.Result, false, nil
		case !errors.Is(err, store.ErrNotFound):
			s.log.Error("connector: load tool call record", "err", err)
			return nil, false, protocol.Errorf(protocol.CodeInternal, "cannot check the tool call record")
		}
	}

	timeout := entry.opts.Timeout
	if timeout <= 0 {
		timeout = s.opts.ToolTimeout
	}
	result, herr := sess.runTool(ctx, entry, call, stripped, timeout)
	perr := s.toolError(p.ToolID, herr)
	compact := false
	if perr == nil {
		// A typed tool's result comes from json.Marshal: valid and
		// compact, unless scrubbing changes it.
		compact = entry.typed
		if s.secrets.Len() > 0 {
			if scrubbed := s.secrets.Scrub(string(result)); scrubbed != string(result) {
				result, compact = json.RawMessage(scrubbed), false
			}
		}
		if !compact && !json.Valid(result) {
			perr = protocol.Errorf(protocol.CodeToolInvokeFailed, "tool result is not valid JSON")
		}
	}
	// An act's every outcome is its answer to a repeat (ToolAct).
	if idem && (perr == nil || act || (!perr.Retryable && perr.Code != protocol.CodeToolTimeout && perr.Code != protocol.CodeInternal)) {
		rec := store.ToolCall{CardID: s.card.ConnectorCardID, ChannelID: id, ToolCallID: call.IdempotencyKey,
			ToolID: p.ToolID, ArgsHash: hash, Result: result, CreatedAt: s.now()}
		if perr != nil {
			rec.Result, rec.ErrCode, rec.ErrMessage = nil, string(perr.Code), perr.Message
		}
		// Recorded even when the socket closed meanwhile: the side effect
		// happened, and a retry must not repeat it.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), actRecordTimeout)
		defer cancel()
		if err := s.opts.Store.PutToolCall(sctx, rec); err != nil && !errors.Is(err, store.ErrConflict) {
			s.log.Warn("connector: store tool call record", "err", err)
		}
	}
	return result, compact, perr
}

// idempotencyKey returns the key of a side-effecting call's record (see
// [Call.IdempotencyKey]): the tool_call_id of payload.context when xAgent
// sent one, else one derived from the envelope's request_id and the tool,
// else "" (no record: nothing identifies a resend).
//
// Why request_id: section 7 has xAgent generate it per request and the
// Connector return it unchanged, and xAgent routes the ack by it, so a
// request sent again (a retry whose first ack was lost) is one the ack of
// either transmission must answer: it keeps its request_id. packet_id
// names one transmission (IM v2 section 3) and changes on a resend.
// context is optional (section 8.18), so a call without it is keyed by
// request_id, per channel (the store's key) and tool (hashed in here); the
// hash bounds the key's length whatever the request_id's.
func idempotencyKey(toolID, toolCallID, requestID string) string {
	switch {
	case toolCallID != "":
		return toolCallID
	case requestID == "":
		return ""
	}
	sum := sha256.Sum256([]byte(toolID + "\x00" + requestID))
	return requestKeyPrefix + hex.EncodeToString(sum[:])
}

// requestKeyPrefix marks the idempotency keys derived from a request_id.
const requestKeyPrefix = "request_id:"

// pushProgress sends a tool.progress.push on channel id.
func (sess *session) pushProgress(ctx context.Context, id string, pp protocol.ToolProgressPayload) error {
	// No request_id: a host matches answers by request_id, and a
	// progress event is not the answer (section 8.20).
	out := sess.newPacket(protocol.TypeToolProgressPush, id)
	pp.Message = sess.srv.secrets.Scrub(pp.Message)
	if err := out.SetPayload(pp); err != nil {
		return err
	}
	return sess.send(ctx, out)
}

// runTool runs the handler on its own goroutine so that the call can be
// answered at its timeout; the goroutine belongs to the session, which
// waits for it before it is gone.
func (sess *session) runTool(parent context.Context, entry *toolEntry, call *Call, args json.RawMessage, timeout time.Duration) (json.RawMessage, error) {
	// A callCtx and a timer rather than context.WithTimeout: the handler's
	// context costs nothing until it waits on it.
	ctx := newCallCtx(parent, timeout)
	defer ctx.release()
	t := sess.timers.Get(timeout)
	defer sess.timers.Put(t)
	type outcome struct {
		res json.RawMessage
		err error
	}
	done := make(chan outcome, 1)
	sess.wg.Add(1)
	go func() {
		defer sess.wg.Done()
		var o outcome
		o.err = safeCall(func() error {
			var err error
			o.res, err = entry.fn(ctx, call, args)
			return err
		})
		done <- o
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-t.C:
	case <-sess.ctx.Done():
		// The socket closed; the handler's context has ended. Wait for
		// its outcome (until the timeout): a side effect it completed is
		// then recorded, and a retry on another socket replays it.
		select {
		case o := <-done:
			return o.res, o.err
		case <-t.C:
		}
	}
	return nil, protocol.Errorf(protocol.CodeToolTimeout, "tool did not finish within %s", timeout)
}

// toolError turns a handler error into a secret-free wire error: a
// *protocol.Error keeps its code and (scrubbed) message; anything else is
// tool_invoke_failed with a generic message, logged scrubbed.
func (s *Server) toolError(toolID string, err error) *protocol.Error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return protocol.Errorf(protocol.CodeToolTimeout, "tool did not finish in time")
	}
	if pe := protocol.AsError(err); pe != nil {
		return &protocol.Error{Code: pe.Code, Message: s.secrets.Scrub(pe.Message), Retryable: pe.Retryable}
	}
	s.log.Warn("connector: tool failed", "tool", toolID, "err", err.Error())
	return protocol.Errorf(protocol.CodeToolInvokeFailed, "tool %s failed", toolID)
}

// stripChannelArg removes the redundant connector_channel_id argument and
// returns the handler's arguments (args itself when it has no such member)
// and the object's members without it, for canonicalArgs.
func stripChannelArg(args json.RawMessage) (json.RawMessage, map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil || m == nil {
		return nil, nil, errors.New("arguments are not an object")
	}
	if _, ok := m[protocol.ChannelIDArgument]; !ok {
		return args, m, nil
	}
	delete(m, protocol.ChannelIDArgument)
	out, err := json.Marshal(m)
	if err != nil {
		return nil, nil, err
	}
	return out, m, nil
}

// canonicalArgs encodes the members of an arguments object canonically
// (sorted keys at every level, compact) for the idempotency hash; only
// side-effect tools with a tool_call_id pay for it.
func canonicalArgs(fields map[string]json.RawMessage) ([]byte, error) {
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	var anyv any
	if err := json.Unmarshal(out, &anyv); err != nil {
		return nil, err
	}
	return json.Marshal(anyv)
}

// metricTool bounds the tool label to declared tools.
func metricTool(s *Server, id string) string {
	if _, ok := s.card.Tool(id); ok {
		return id
	}
	return "unknown"
}
