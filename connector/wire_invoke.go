package connector

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/xconn/xconn/internal/jsonbytes"
	"github.com/xconn/xconn/protocol"
)

// This file reads a tool.invoke payload in one pass over its bytes, without
// encoding/json, for the common shape: exactly the members tool_id (a
// non-empty string), arguments (an object) and optionally context (an object
// with string session_id and tool_call_id). Anything else (other or
// case-variant members, escapes in names or strings, duplicates, null
// values) is left to the full decode and validation, which report the exact
// violations. The input is known to be valid JSON: the envelope decoder has
// checked the frame.

// scanInvoke returns the payload when it has the common shape, else nil.
// The returned Arguments alias payload.
func scanInvoke(payload []byte) *protocol.ToolInvokePayload {
	var (
		p                           protocol.ToolInvokePayload
		seenTool, seenArgs, seenCtx bool
	)
	ok := jsonbytes.EachMember(payload, func(key, val []byte) bool {
		switch string(key) {
		case "tool_id":
			if seenTool {
				return false
			}
			seenTool = true
			id, good := plainString(val)
			p.ToolID = id
			return good && id != ""
		case "arguments":
			if seenArgs || len(val) == 0 || val[0] != '{' {
				return false
			}
			seenArgs = true
			p.Arguments = json.RawMessage(val)
			return true
		case "context":
			if seenCtx || len(val) == 0 || val[0] != '{' {
				return false
			}
			seenCtx = true
			p.Context = scanToolContext(val)
			return p.Context != nil
		}
		return false
	})
	if !ok || !seenTool || !seenArgs {
		return nil
	}
	return &p
}

// scanToolContext reads a context object with only string session_id and
// tool_call_id members; nil otherwise.
func scanToolContext(obj []byte) *protocol.ToolContext {
	var (
		c                protocol.ToolContext
		seenSess, seenID bool
	)
	ok := jsonbytes.EachMember(obj, func(key, val []byte) bool {
		var good bool
		switch string(key) {
		case "session_id":
			if seenSess {
				return false
			}
			seenSess = true
			c.SessionID, good = plainString(val)
		case "tool_call_id":
			if seenID {
				return false
			}
			seenID = true
			c.ToolCallID, good = plainString(val)
		}
		return good
	})
	if !ok {
		return nil
	}
	return &c
}

// stripChannelMember returns args without its top-level connector_channel_id
// members (args itself when it has none). It reports false when args is not
// a plain object (or a member name has escapes); the caller then uses the
// full decode.
func stripChannelMember(args []byte) (json.RawMessage, bool) {
	found := false
	if !jsonbytes.EachMemberAt(args, func(_, _ int, key, _ []byte) bool {
		found = found || string(key) == protocol.ChannelIDArgument
		return true
	}) {
		return nil, false
	}
	if !found {
		return json.RawMessage(args), true
	}
	out := make([]byte, 1, len(args))
	out[0] = '{'
	jsonbytes.EachMemberAt(args, func(start, end int, key, _ []byte) bool {
		if string(key) == protocol.ChannelIDArgument {
			return true
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, args[start:end]...)
		return true
	})
	return json.RawMessage(append(out, '}')), true
}

// plainString returns the JSON string val without escapes; false for any
// other value.
func plainString(val []byte) (string, bool) {
	end, esc := jsonbytes.StringEnd(val, 0)
	if end != len(val) || esc {
		return "", false
	}
	body := val[1 : end-1]
	for _, c := range body {
		if c < 0x20 {
			return "", false
		}
	}
	if !utf8.Valid(body) {
		return "", false // encoding/json would replace the bad bytes
	}
	return string(body), true
}

// invokeAckPayload encodes the payload of a successful tool.invoke.ack: the
// same bytes as json.Marshal(protocol.ToolInvokeAckPayload{ToolID: toolID,
// Result: result}), in one pass over result instead of three, and in none
// when compact says result is json.Marshal output already.
func invokeAckPayload(toolID string, result json.RawMessage, compact bool) (json.RawMessage, error) {
	b := make([]byte, 0, len(toolID)+len(result)+24)
	b = append(b, `{"tool_id":`...)
	if jsonbytes.Plain(toolID) {
		b = append(b, '"')
		b = append(b, toolID...)
		b = append(b, '"')
	} else {
		q, err := json.Marshal(toolID)
		if err != nil {
			return nil, fmt.Errorf("encode tool_id: %w", err)
		}
		b = append(b, q...)
	}
	if len(result) > 0 {
		b = append(b, `,"result":`...)
		if compact {
			b = append(b, result...)
		} else if jsonbytes.Escaped(result) {
			// encoding/json escapes these; let it.
			r, err := json.Marshal(result)
			if err != nil {
				return nil, fmt.Errorf("encode result: %w", err)
			}
			b = append(b, r...)
		} else {
			buf := bytes.NewBuffer(b)
			if err := json.Compact(buf, result); err != nil {
				return nil, fmt.Errorf("encode result: %w", err)
			}
			b = buf.Bytes()
		}
	}
	return json.RawMessage(append(b, '}')), nil
}
