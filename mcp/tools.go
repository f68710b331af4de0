package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// The tools of the server besides the connectors' own.
const (
	ToolChannelsList   = host.ToolChannelsList // connector_channels_list
	ToolMessageSend    = host.ToolMessageSend  // connector_message_send
	ToolMessagesRead   = "messages_read"
	ToolSignIn         = "channel_sign_in"
	ToolSignInStatus   = "channel_sign_in_status"
	ToolSignOut        = "channel_sign_out"
	argChannelID       = "connector_channel_id"
	argToolCallID      = "tool_call_id"
	toolCallIDDescribe = "optional: an id of this call of your own; repeat it when you retry the same call so that it runs once"
)

// mcpToolName is what MCP clients accept as a tool name.
var mcpToolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

func (s *Server) builtin(name string) bool {
	switch name {
	case ToolChannelsList, ToolMessageSend, ToolMessagesRead, ToolSignIn, ToolSignInStatus, ToolSignOut:
		return true
	}
	return false
}

// sync registers the tools of the user's usable channels and the
// resources of every channel of the user, and removes those that are gone.
// The SDK tells the sessions (notifications/tools/list_changed,
// resources/list_changed).
func (s *Server) sync(ctx context.Context) {
	defs, err := s.h.Tools(ctx, s.opts.UserID, "")
	if err != nil {
		s.log.Warn("mcp: list tools", "err", err)
		return
	}
	want := map[string]host.FunctionDef{}
	for _, d := range defs {
		if d.Builtin || s.builtin(d.Name) {
			continue
		}
		if !mcpToolName.MatchString(d.Name) {
			s.log.Warn("mcp: tool left out: its id is not a valid MCP tool name", "tool", d.Name, "card", d.CardID)
			continue
		}
		want[d.Name] = d
	}
	s.mu.Lock()
	var gone []string
	for name := range s.tools {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
			delete(s.tools, name)
		}
	}
	var add []host.FunctionDef
	for name, d := range want {
		if !s.tools[name] {
			s.tools[name] = true
			add = append(add, d)
		}
	}
	s.mu.Unlock()
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
	}
	sort.Slice(add, func(i, j int) bool { return add[i].Name < add[j].Name })
	for _, d := range add {
		t, err := s.connectorTool(d)
		if err != nil {
			s.log.Warn("mcp: tool left out", "tool", d.Name, "err", err)
			s.mu.Lock()
			delete(s.tools, d.Name)
			s.mu.Unlock()
			continue
		}
		def := d
		s.srv.AddTool(t, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return s.callConnectorTool(ctx, req, def), nil
		})
	}
	s.syncResources(ctx)
}

// connectorTool projects a connector tool: its schema with
// connector_channel_id optional (it defaults to the only signed-in channel
// of the connector) and an optional tool_call_id, annotations from the
// Card's declaration.
func (s *Server) connectorTool(d host.FunctionDef) (*sdk.Tool, error) {
	var schema map[string]any
	if err := json.Unmarshal(d.Parameters, &schema); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	if schema["type"] != "object" {
		return nil, errors.New(`input schema: type is not "object"`)
	}
	props, _ := schema["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		schema["properties"] = props
	}
	if p, ok := props[argChannelID].(map[string]any); ok {
		p["description"] = "the channel to act on (from connector_channels_list or a message); may be left out when one channel of this connector is signed in"
	}
	if req, ok := schema["required"].([]any); ok {
		kept := req[:0]
		for _, r := range req {
			if r != argChannelID {
				kept = append(kept, r)
			}
		}
		schema["required"] = kept
	}
	if _, taken := props[argToolCallID]; !taken {
		props[argToolCallID] = map[string]any{"type": "string", "maxLength": 128, "description": toolCallIDDescribe}
	}
	t := &sdk.Tool{Name: d.Name, Title: d.Title, Description: d.Description, InputSchema: schema}
	if c, ok := s.h.Connector(d.CardID); ok && c.Card != nil {
		if ct, ok := c.Card.Tool(d.Name); ok {
			t.Annotations = annotationsOf(ct)
		}
	}
	if t.Annotations == nil {
		t.Annotations = &sdk.ToolAnnotations{}
	}
	t.Annotations.Title = d.Title
	return t, nil
}

// annotationsOf derives MCP tool annotations from a Card tool's mode, an
// extension member ("x-xconn-mode" or "mode": "observe" is read-only,
// "act" an idempotent control action, "serial" the MCP defaults) or an
// "annotations" member with MCP hints. The protocol's Card has no such
// field of its own: without one, the MCP defaults (a tool that may change
// its world) stand.
func annotationsOf(t *protocol.Tool) *sdk.ToolAnnotations {
	a := &sdk.ToolAnnotations{}
	if raw, ok := t.Extensions["annotations"]; ok {
		_ = json.Unmarshal(raw, a)
	}
	var mode string
	for _, k := range []string{"x-xconn-mode", "mode"} {
		if raw, ok := t.Extensions[k]; ok && json.Unmarshal(raw, &mode) == nil {
			break
		}
	}
	f := false
	switch mode {
	case "observe":
		a.ReadOnlyHint = true
		a.DestructiveHint = &f
	case "act":
		a.DestructiveHint = &f
		a.IdempotentHint = true
	}
	return a
}

// callArgs decodes the arguments of a call (bounded) as an object.
func (s *Server) callArgs(req *sdk.CallToolRequest) (map[string]json.RawMessage, *sdk.CallToolResult) {
	raw := req.Params.Arguments
	if len(raw) > s.opts.MaxArgumentBytes {
		return nil, toolError(protocol.CodeInvalidArguments, fmt.Sprintf("arguments are %d bytes: at most %d are taken", len(raw), s.opts.MaxArgumentBytes))
	}
	args := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(raw)) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if err := json.Unmarshal(raw, &args); err != nil {
			return nil, toolError(protocol.CodeInvalidArguments, "arguments must be a JSON object")
		}
	}
	return args, nil
}

func stringArg(args map[string]json.RawMessage, name string) (string, error) {
	raw, ok := args[name]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", fmt.Errorf("%s: must be a string", name)
	}
	return v, nil
}

func (s *Server) callConnectorTool(ctx context.Context, req *sdk.CallToolRequest, d host.FunctionDef) *sdk.CallToolResult {
	args, bad := s.callArgs(req)
	if bad != nil {
		return bad
	}
	callID, err := stringArg(args, argToolCallID)
	if err != nil {
		return toolError(protocol.CodeInvalidArguments, err.Error())
	}
	delete(args, argToolCallID)
	chID, err := stringArg(args, argChannelID)
	if err != nil {
		return toolError(protocol.CodeInvalidArguments, err.Error())
	}
	uc, perr := s.resolveChannel(ctx, d.CardID, chID)
	if perr != nil {
		return toolError(perr.Code, perr.Message)
	}
	args[argChannelID], _ = json.Marshal(uc.ChannelID)
	body, _ := json.Marshal(args)
	opts := []host.InvokeOption{host.WithUserChannel(uc.ID)}
	stopProgress := func() {}
	if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
		var fn func(*protocol.ToolProgressPayload)
		fn, stopProgress = progressRelay(ctx, req.Session, tok)
		opts = append(opts, host.WithProgress(fn))
	}
	res, err := s.h.Invoke(ctx, s.opts.UserID, "", d.Name, body, s.callID(d.Name, callID), opts...)
	stopProgress()
	if err != nil {
		return invokeError(err)
	}
	return s.result(res.ModelOutput, res.Files)
}

// callID is the tool_call_id sent to the connector: the client's own,
// namespaced by the tool so that two tools never share one, or a new one.
func (s *Server) callID(tool, clientID string) string {
	if clientID == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		return "mcp_" + hex.EncodeToString(b[:])
	}
	return "mcp_" + clientID
}

// resolveChannel finds the user's signed-in channel of cardID named by
// channelID (a connector_channel_id, or the host's user channel id), or
// the only one when channelID is "". Any channel of the user with cardID "".
func (s *Server) resolveChannel(ctx context.Context, cardID, channelID string) (store.UserChannel, *protocol.Error) {
	ucs, err := s.h.Channels(ctx, s.opts.UserID, cardID)
	if err != nil {
		return store.UserChannel{}, &protocol.Error{Code: protocol.CodeInternal, Message: "list channels failed"}
	}
	var signed []store.UserChannel
	for _, uc := range ucs {
		if channelID != "" && (uc.ChannelID == channelID || uc.ID == channelID) {
			if !uc.Authenticated {
				return uc, &protocol.Error{Code: protocol.CodeConnectorChannelUnavailable, Message: "the channel is signed out: sign it in again with channel_sign_in"}
			}
			return uc, nil
		}
		if uc.Authenticated {
			signed = append(signed, uc)
		}
	}
	switch {
	case channelID != "":
		return store.UserChannel{}, &protocol.Error{Code: protocol.CodeConnectionNotFound,
			Message: fmt.Sprintf("connector_channel_id %q is not a channel signed in here: see connector_channels_list", channelID)}
	case len(signed) == 1:
		return signed[0], nil
	case len(signed) == 0:
		return store.UserChannel{}, &protocol.Error{Code: protocol.CodeConnectorChannelUnavailable, Message: "no signed-in channel: sign one in with channel_sign_in"}
	}
	return store.UserChannel{}, &protocol.Error{Code: protocol.CodeInvalidArguments,
		Message: fmt.Sprintf("%d channels are signed in: pass connector_channel_id (see connector_channels_list)", len(signed))}
}

// result is a tool result: the model output as text (and as structured
// content when it is an object), each file as a resource link.
func (s *Server) result(out json.RawMessage, files []host.File) *sdk.CallToolResult {
	if len(out) == 0 {
		out = json.RawMessage("{}")
	}
	r := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(out)}}}
	if bytes.HasPrefix(bytes.TrimSpace(out), []byte("{")) {
		r.StructuredContent = out
	}
	for _, f := range filesOf(files) {
		size := f.Size
		r.Content = append(r.Content, &sdk.ResourceLink{URI: f.URI, Name: f.Filename, MIMEType: f.MimeType, Size: &size})
	}
	return r
}

func toolError(code protocol.Code, msg string) *sdk.CallToolResult {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": code, "message": msg}})
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}
}

// invokeError turns a host error into a tool error with its wire code;
// the host's errors are secret-free.
func invokeError(err error) *sdk.CallToolResult {
	if pe := protocol.AsError(err); pe != nil {
		return toolError(pe.Code, pe.Message)
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return toolError(host.CodeTimeout, "the call was canceled or timed out")
	case errors.Is(err, host.ErrUnknownChannel):
		return toolError(protocol.CodeConnectionNotFound, "unknown channel")
	case errors.Is(err, host.ErrUnknownConnector):
		return toolError(protocol.CodeConnectionNotFound, "unknown connector")
	}
	return toolError(protocol.CodeInternal, strings.TrimPrefix(err.Error(), "host: "))
}
