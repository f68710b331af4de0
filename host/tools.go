package host

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// FunctionDef is one tool projected as a model function: a connector tool
// (Name is its tool_id unchanged, Parameters its input_schema with the
// upload-reference arguments projected, see FileArgs) or a built-in channel
// tool of the host (Builtin).
type FunctionDef struct {
	Name        string
	Title       string
	Description string
	Parameters  json.RawMessage
	// CardID is the connector that declares the tool ("" for a built-in).
	CardID string
	// Builtin marks the host's built-in channel tools ([ToolChannelsList],
	// [ToolMessageSend]), which [Host.Invoke] runs itself.
	Builtin bool
	// FileArgs are the top-level arguments the Card declares as upload
	// references (protocol.UploadRefArguments), sorted. The model sees each
	// as a string that takes a unified file_ref ([File.Ref]) of a file of
	// the conversation, described by [FileRefDescription]; [Host.Invoke]
	// uploads that file to the connector and passes the connector's
	// reference instead. The model never sees the connector's reference.
	FileArgs []string
	// ChannelScoped reports that [ScopeFunctions] removed the reserved
	// connector_channel_id argument from Parameters: the host fills it from
	// the conversation's channel when the call is made with
	// [InConversation].
	ChannelScoped bool
}

// Result is the outcome of a successful [Host.Invoke].
type Result struct {
	CardID        string
	UserChannelID string
	// ChannelID is the connector_channel_id the call was routed to.
	ChannelID string
	ToolID    string
	// Output is tool.invoke.ack payload.result, unchanged (for a built-in
	// tool, its result). It may hold the connector's file_refs and
	// download_urls: give the model ModelOutput instead.
	Output json.RawMessage
	// ModelOutput is Output as a model may see it: equal to Output unless
	// the result has file items (objects with file_ref and download_url,
	// see Files), in which the connector's file_ref and download_url are
	// replaced by the host's unified file_ref of the downloaded file, or by
	// "error" for a file that could not be downloaded.
	ModelOutput json.RawMessage
	// Files are the files of the result, downloaded (bounded by
	// MaxFilesPerMessage, MaxFileBytes and DownloadOrigins, the rules of
	// inbound chat files) into FilesDir and registered under their
	// unified file_ref ([File.Ref]): give images to a vision model,
	// describe other files by name, type and size.
	Files []File
	// FileErrors are the files of the result that could not be
	// downloaded; the call itself succeeded.
	FileErrors []error
}

// InvokeOption adjusts one [Host.Invoke].
type InvokeOption func(*invokeConfig)

type invokeConfig struct {
	progress func(*protocol.ToolProgressPayload)
	resolve  func(fileRef string) (OutgoingFile, bool)
	ucID     string
	scoped   bool   // InConversation
	convUC   string // InConversation's user channel
}

// WithUserChannel runs the call on one of the user's channels, chosen by
// the embedder (for instance the channel a person picked, or the one
// "xconn host --invoke" signed in), instead of the resolution of section
// 10.1. The channel must belong to the user (else connection_not_found),
// its Card must declare the tool (else unknown_tool), and its Descriptor
// must mark the tool available (else connector_channel_unavailable).
func WithUserChannel(userChannelID string) InvokeOption {
	return func(c *invokeConfig) { c.ucID = userChannelID }
}

// WithProgress receives the tool.progress.push events of the call before
// the call returns: those carrying its request_id; else, on its channel,
// those whose payload names its tool_call_id (member "tool_call_id",
// which the xconn SDK sends); else those of its tool_id while it is the only call of
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
// available on at least one of the user's usable channels. Then come the
// built-in channel tools (section 10.1, [ToolChannelsList] and
// [ToolMessageSend]) when the user has a signed-in channel, unless
// Options.NoBuiltinTools. The governance hook filters the result (built-in
// tools with card id ""). Names are tool_ids unchanged; a tool_id declared
// by two connectors is projected once, from the first; a Card tool named
// like a built-in one is left out. Upload-reference arguments are projected
// as unified file_refs (see [FunctionDef.FileArgs]).
func (h *Host) Tools(ctx context.Context, userID, sessionID string) ([]FunctionDef, error) {
	bound, err := h.binding(ctx, userID, sessionID)
	if err != nil {
		return nil, fmt.Errorf("host: tools: %w", err)
	}
	var out []FunctionDef
	seen := map[string]bool{}
	if !h.opts.NoBuiltinTools {
		seen[ToolChannelsList], seen[ToolMessageSend] = true, true
	}
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
			proj := rt.projection(t)
			out = append(out, FunctionDef{Name: t.ToolID, Title: t.Title, Description: desc,
				Parameters: proj.params, CardID: rt.cardID, FileArgs: proj.fileArgs})
		}
	}
	builtins, err := h.builtinDefs(ctx, userID, sessionID)
	if err != nil {
		return nil, fmt.Errorf("host: tools: %w", err)
	}
	return append(out, builtins...), nil
}

// Invoke calls a tool for a user in a session. The channel is resolved by
// the rules of section 10.1: the channel bound to the session first (a
// bound Card that does not declare the tool is rejected with
// connector_channel_connector_mismatch, an unusable bound channel with
// connector_channel_unavailable), else the first usable channel of the
// user among the connectors declaring the tool ([WithUserChannel] chooses
// the channel instead). The resolved connector_channel_id is written to
// the envelope; args reach the connector unchanged, and a
// connector_channel_id inside them never changes routing, except that the
// unified file_ref in an upload-reference argument ([FunctionDef.FileArgs])
// is replaced by the connector's reference of the file, uploaded first
// with POST /files/uploads for the channel (an unknown file_ref fails with
// invalid_arguments). Files in the result are downloaded ([Result.Files]).
// The built-in channel tools run in the host. Failures are *protocol.Error
// values with their wire code (the ack's error for a failed call).
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
	if isBuiltin(toolID) && !h.opts.NoBuiltinTools {
		return h.invokeBuiltin(ctx, userID, sessionID, toolID, args)
	}
	var (
		uc       store.UserChannel
		rt       *runtime
		tool     *protocol.Tool
		explicit string
		fill     bool
	)
	if cfg.scoped {
		if explicit, fill, err = h.scopeChannel(ctx, userID, sessionID, toolID, args, &cfg); err != nil {
			return nil, err
		}
	}
	if cfg.ucID != "" {
		uc, rt, tool, err = h.resolveChannel(ctx, userID, cfg.ucID, toolID)
	} else {
		uc, rt, tool, err = h.resolve(ctx, userID, sessionID, toolID)
	}
	if err != nil {
		return nil, err
	}
	if !h.allowed(ctx, userID, sessionID, rt.cardID, tool) {
		return nil, protocol.Errorf(CodeToolDenied, "tool %q is not allowed for this user or session", toolID)
	}
	if explicit != "" && explicit != uc.ChannelID {
		return nil, scopeMismatch(explicit)
	}
	s, r, err := rt.ensureRoute(ctx, uc)
	if err != nil {
		return nil, err
	}
	if fill && explicit == "" {
		if args, err = withChannelArg(args, r.channelID); err != nil {
			return nil, protocol.Errorf(protocol.CodeInvalidArguments, "arguments: %v", err)
		}
		if payload, err = invokePayload(toolID, args, sessionID, toolCallID); err != nil {
			return nil, err
		}
	}
	if proj := rt.projection(tool); len(proj.fileArgs) > 0 {
		converted, err := h.uploadArgs(ctx, rt, r.channelID, userID, args, proj.fileArgs, &cfg)
		if err != nil {
			return nil, err
		}
		if payload, err = invokePayload(toolID, converted, sessionID, toolCallID); err != nil {
			return nil, err
		}
	}
	env, err := s.request(ctx, protocol.TypeToolInvoke, r.channelID, payload, reqOpts{timeout: h.opts.ToolTimeout, toolID: toolID, callID: toolCallID, progress: cfg.progress})
	if err != nil {
		return nil, err
	}
	res := &Result{CardID: rt.cardID, UserChannelID: uc.ID, ChannelID: r.channelID, ToolID: toolID}
	if out, ok := scanInvokeAck(env.Payload); ok {
		res.Output = out
	} else if res.Output, err = decodeInvokeAck(env); err != nil {
		return nil, err
	}
	res.Files, res.FileErrors, res.ModelOutput = h.resultFiles(ctx, rt, uc.ID, userID, res.Output)
	return res, nil
}

// decodeInvokeAck reads a tool.invoke.ack payload of any shape.
func decodeInvokeAck(env *protocol.Envelope) (json.RawMessage, error) {
	var ack protocol.ToolInvokeAckPayload
	var err error
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
	return ack.Result, nil
}

// resolveChannel checks the channel the embedder chose for a call
// ([WithUserChannel]).
func (h *Host) resolveChannel(ctx context.Context, userID, ucID, toolID string) (store.UserChannel, *runtime, *protocol.Tool, error) {
	c, rt, err := h.channelByID(ctx, ucID)
	if err != nil || c.uc.UserID != userID {
		return store.UserChannel{}, nil, nil, protocol.Errorf(protocol.CodeConnectionNotFound, "user channel %q is not one of the user's channels", ucID)
	}
	_, _, card := rt.view()
	t, ok := card.Tool(toolID)
	if !ok {
		return store.UserChannel{}, nil, nil, protocol.Errorf(protocol.CodeUnknownTool, "the channel's connector %s declares no tool %q", rt.cardID, toolID)
	}
	if !c.usable(toolID) {
		return store.UserChannel{}, nil, nil, protocol.Errorf(protocol.CodeConnectorChannelUnavailable, "the channel cannot run tool %q now", toolID)
	}
	return c.uc, rt, t, nil
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
