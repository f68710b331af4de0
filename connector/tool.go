package connector

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/xconn/xconn/internal/schemagen"
	"github.com/xconn/xconn/protocol"
)

// ToolFunc is a typed tool handler. in is decoded from the validated
// arguments without the redundant connector_channel_id argument; the
// result is encoded as the ack's result. A returned *protocol.Error keeps
// its code and message (which must be secret-free); any other error becomes
// tool_invoke_failed with a generic message.
type ToolFunc[In, Out any] func(ctx context.Context, call *Call, in In) (Out, error)

// RawToolFunc is an untyped tool handler: args is the validated JSON object
// without connector_channel_id; the returned JSON is the ack's result.
type RawToolFunc func(ctx context.Context, call *Call, args json.RawMessage) (json.RawMessage, error)

// ToolOptions describes a tool for the Card. Empty fields fall back to the
// Card's own declaration of the tool when it has one.
type ToolOptions struct {
	Title           string
	Description     string
	Profile         protocol.Profile
	RelatedSkillIDs []string
	// InputSchema overrides the schema derived from the input type (and
	// the Card's). connector_channel_id is injected either way.
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	// SideEffect makes the tool idempotent by (channel, idempotency key;
	// see [Call.IdempotencyKey]): a repeat returns the stored result,
	// other arguments are a tool_call_conflict.
	SideEffect bool
	// Public makes the tool available on channels that are not signed in.
	Public bool
	// Timeout bounds one call (default Options.ToolTimeout).
	Timeout time.Duration
	// Mode says whether calls run in the channel's order (ToolSerial, the
	// default), as parallel observations (ToolObserve) or as serialised,
	// idempotent control actions (ToolAct); see [ToolMode].
	Mode ToolMode
}

// Call is one tool invocation handed to a handler. It is valid only during
// the handler call.
type Call struct {
	// Channel is the channel of the envelope (the only routing key).
	Channel *Channel
	ToolID  string
	// ToolCallID and SessionID are xAgent correlation data, never identity
	// or authorisation. Both come from the optional payload.context and
	// may be empty.
	ToolCallID string
	SessionID  string
	// IdempotencyKey identifies this call across resends within its
	// channel: the tool_call_id when xAgent sent one; else a key derived
	// from the envelope's request_id and the tool (section 7: xAgent
	// generates request_id per request and a resend keeps it; packet_id
	// changes with each transmission); "" when the packet has neither. A
	// side-effecting tool (ToolOptions.SideEffect, ToolAct) is recorded
	// under it, so a repeat is answered from the record; use it too as
	// the target's own deduplication key (a target message id, a request
	// uuid) for a side effect that the record cannot cover, such as a
	// call interrupted by a crash.
	IdempotencyKey string

	sess      *session // sends the progress events; nil outside a socket
	channelID string
}

// Progress sends a tool.progress.push for this call. fraction may be nil;
// otherwise it is in [0, 1]. message must be secret-free (it is scrubbed).
func (c *Call) Progress(ctx context.Context, status, message string, fraction *float64) error {
	if c.sess == nil {
		return nil
	}
	return c.sess.pushProgress(ctx, c.channelID, protocol.ToolProgressPayload{ToolID: c.ToolID, ToolCallID: c.ToolCallID,
		Status: status, Message: message, Progress: fraction})
}

// toolEntry is a registered tool.
type toolEntry struct {
	id     string
	opts   ToolOptions
	schema json.RawMessage // without injection, nil = take the Card's or {}
	fn     RawToolFunc
	// typed marks a tool added by AddTool: its results come from
	// json.Marshal (valid, compact, HTML-escaped).
	typed bool
}

// AddTool registers a typed tool: its input schema comes from In (see the
// package documentation, "Struct tags") unless opts.InputSchema is set;
// fields of type [Upload] are upload references resolved before fn runs.
// Call it before Start; a bad registration (an invalid tool id, an input
// type without a schema) is returned at once and also makes Start fail.
func AddTool[In, Out any](s *Server, id string, fn ToolFunc[In, Out], opts ToolOptions) error {
	if fn == nil {
		return s.registerTool(id, nil, nil, opts, fmt.Errorf("connector: tool %q: nil handler", id))
	}
	var schema json.RawMessage
	if len(opts.InputSchema) == 0 {
		sc, err := schemagen.For[In]()
		if err != nil {
			return s.registerTool(id, nil, nil, opts, fmt.Errorf("connector: tool %q: input schema: %w", id, err))
		}
		schema = sc
	}
	uploads := uploadFields(reflect.TypeFor[In]())
	raw := func(ctx context.Context, call *Call, args json.RawMessage) (json.RawMessage, error) {
		var in In
		if err := json.Unmarshal(args, &in); err != nil {
			return nil, protocol.Errorf(protocol.CodeInvalidArguments, "arguments do not decode into the tool input: %v", err)
		}
		if len(uploads) > 0 {
			if err := resolveUploads(ctx, call.Channel, &in, uploads); err != nil {
				return nil, err
			}
		}
		out, err := fn(ctx, call, in)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("encode result: %w", err)
		}
		return b, nil
	}
	if err := s.registerTool(id, raw, schema, opts, nil); err != nil {
		return err
	}
	// Marked under the registration lock, and only while registration is
	// still open (an entry found at invoke time is never written again).
	_ = s.register(func() error {
		if e := s.tools[id]; e != nil {
			e.typed = true
		}
		return nil
	})
	return nil
}

// AddRawTool registers an untyped tool whose schema is opts.InputSchema
// or the Card's declaration. Call it before Start.
func (s *Server) AddRawTool(id string, fn RawToolFunc, opts ToolOptions) error {
	if fn == nil {
		return s.registerTool(id, nil, nil, opts, fmt.Errorf("connector: tool %q: nil handler", id))
	}
	return s.registerTool(id, fn, nil, opts, nil)
}
