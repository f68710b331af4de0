package host

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	"github.com/xconn/xconn/internal/jsonbytes"
	"github.com/xconn/xconn/protocol"
)

// This file encodes the frames of the tool.invoke hot path in one pass and
// reads the common shape of its ack without encoding/json. Each function
// produces the same bytes as the general encoder (or reads the same
// values as the general decoder) and reports false, or falls back, for
// anything outside the shape it handles.

// errArgsNotJSON reports tool arguments that are not valid JSON.
func errArgsNotJSON() error {
	return protocol.Errorf(protocol.CodeInvalidArguments, "tool arguments are not valid JSON")
}

// invokePayload encodes the tool.invoke payload
// protocol.ToolInvokePayload{ToolID: toolID, Arguments: args, Context:
// &protocol.ToolContext{SessionID: sessionID, ToolCallID: toolCallID}} as
// json.Marshal does, in one pass over the arguments that also checks them.
// It fails with invalid_arguments when they are not valid JSON.
func invokePayload(toolID string, args json.RawMessage, sessionID, toolCallID string) (json.RawMessage, error) {
	if !jsonbytes.Plain(toolID) || !jsonbytes.Plain(sessionID) || !jsonbytes.Plain(toolCallID) || jsonbytes.Escaped(args) {
		// encoding/json escapes these.
		return slowInvokePayload(toolID, args, sessionID, toolCallID)
	}
	b := make([]byte, 0, 64+len(toolID)+len(args)+len(sessionID)+len(toolCallID))
	b = jsonbytes.AppendMember(b, `{"tool_id":`, toolID)
	if len(args) > 0 {
		b = append(b, `,"arguments":`...)
		buf := bytes.NewBuffer(b)
		if err := json.Compact(buf, args); err != nil {
			return nil, errArgsNotJSON()
		}
		b = buf.Bytes()
	}
	b = append(b, `,"context":{`...)
	if sessionID != "" {
		b = jsonbytes.AppendMember(b, `"session_id":`, sessionID)
	}
	if toolCallID != "" {
		if sessionID != "" {
			b = append(b, ',')
		}
		b = jsonbytes.AppendMember(b, `"tool_call_id":`, toolCallID)
	}
	return append(b, '}', '}'), nil
}

// slowInvokePayload is invokePayload through encoding/json.
func slowInvokePayload(toolID string, args json.RawMessage, sessionID, toolCallID string) (json.RawMessage, error) {
	if len(args) > 0 && !json.Valid(args) {
		return nil, errArgsNotJSON()
	}
	b, err := encodePayload(protocol.ToolInvokePayload{ToolID: toolID, Arguments: args,
		Context: &protocol.ToolContext{SessionID: sessionID, ToolCallID: toolCallID}})
	if err != nil {
		return nil, errArgsNotJSON()
	}
	return b, nil
}

// scanInvokeAck reads a tool.invoke.ack payload of the common shape: exactly
// a string tool_id and a non-null result. payload is valid JSON (the
// envelope decoder checked the frame). The result aliases payload. ok is
// false for any other shape, which the general decoder then reads.
func scanInvokeAck(payload []byte) (result json.RawMessage, ok bool) {
	var seenTool, seenResult bool
	ok = jsonbytes.EachMember(payload, func(key, val []byte) bool {
		switch string(key) {
		case "tool_id":
			if seenTool || len(val) == 0 || val[0] != '"' {
				return false
			}
			seenTool = true
			return true
		case "result":
			if seenResult || len(val) == 0 || val[0] == 'n' {
				return false
			}
			seenResult = true
			result = json.RawMessage(val)
			return true
		}
		return false
	})
	if !ok || !seenTool || !seenResult {
		return nil, false
	}
	return result, true
}

// requestIDs returns the packet_id and request_id of a request: the
// socket's random prefix and a sequence number, unique without a random
// draw per request.
func (s *session) requestIDs() (packetID, requestID string) {
	var buf [96]byte
	n := s.idSeq.Add(1)
	b := append(buf[:0], "pkt_"...)
	b = append(b, s.idPrefix...)
	b = strconv.AppendUint(b, n, 36)
	split := len(b)
	b = append(b, "req_"...)
	b = append(b, s.idPrefix...)
	b = strconv.AppendUint(b, n, 36)
	all := string(b) // one allocation for both
	return all[:split], all[split:]
}

// sendRequest is send for a request built by request, whose payload comes
// from encoding/json or invokePayload and is therefore valid: the frame
// is encoded without checking it once more.
func (s *session) sendRequest(ctx context.Context, env *protocol.Envelope) error {
	frame, ok := env.AppendTrusted(nil)
	if !ok {
		return s.send(ctx, env)
	}
	s.rt.h.observe(protocol.ToConnector, s.rt.cardID, env)
	if err := s.conn.SendRaw(ctx, frame); err != nil {
		return &protocol.Error{Code: CodeOffline, Message: env.Type + ": send failed: " + err.Error(), Retryable: true}
	}
	return nil
}

// newPending returns a pendingReq for a request, reusing one whose answer
// was received. A request that ends otherwise (timeout, ctx, closed
// socket) drops its pendingReq: the reader may still hold it and send an
// answer late.
func (s *session) newPending(typ, channelID string, o reqOpts) *pendingReq {
	p, ok := s.reqs.Get().(*pendingReq)
	if !ok {
		p = &pendingReq{ch: make(chan *protocol.Envelope, 1)}
	}
	p.typ, p.channel, p.toolID, p.callID, p.onAck, p.progress = typ, channelID, o.toolID, o.callID, o.onAck, o.progress
	return p
}
