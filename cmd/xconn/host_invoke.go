package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// invokeFlags are "xconn host --invoke TOOL --args JSON": one tool call on
// the signed-in channel instead of serving it.
type invokeFlags struct {
	tool string
	args string
}

func (v *invokeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&v.tool, "invoke", "", "run one call of this tool on the signed-in channel, print the ack as JSON on stdout and exit (0: ok, 1: tool error); the packet log goes to stderr")
	fs.StringVar(&v.args, "args", "", `arguments of the --invoke call, a JSON object (default {}); connector_channel_id is filled in with the signed-in channel when absent`)
}

// check validates the flags (usage errors, exit 2) and returns the call's
// arguments.
func (v *invokeFlags) check() (json.RawMessage, error) {
	if v.tool == "" {
		if v.args != "" {
			return nil, errors.New("--args needs --invoke TOOL")
		}
		return nil, nil
	}
	if v.args == "" {
		return json.RawMessage(`{}`), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v.args), &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("--args must be a JSON object: %s", errText(err, "null"))
	}
	return json.RawMessage(v.args), nil
}

func errText(err error, def string) string {
	if err != nil {
		return err.Error()
	}
	return def
}

// invokeAgent stands in for the agent during --invoke: a user message that
// arrives meanwhile is refused as retryable, so that the connector keeps it
// for the next "xconn host" that serves the channel.
type invokeAgent struct{}

func (invokeAgent) HandleMessage(context.Context, *host.UserMessage, host.ReplyStream) error {
	return &protocol.Error{Code: protocol.CodeChannelBusy, Message: "xconn host is running one tool call, not serving messages", Retryable: true}
}

// invokeOutput is what --invoke prints.
type invokeOutput struct {
	ToolID     string          `json:"tool_id"`
	ChannelID  string          `json:"connector_channel_id,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Files      []invokeFile    `json:"files,omitempty"`
	FileErrors []string        `json:"file_errors,omitempty"`
	Error      *invokeError    `json:"error,omitempty"`
}

type invokeError struct {
	Code      protocol.Code `json:"code"`
	Message   string        `json:"message,omitempty"`
	Retryable bool          `json:"retryable,omitempty"`
}

type invokeFile struct {
	FileRef  string            `json:"file_ref"`
	Path     string            `json:"path"`
	Filename string            `json:"filename,omitempty"`
	MimeType string            `json:"mime_type,omitempty"`
	Type     protocol.FileType `json:"type,omitempty"`
	Size     int64             `json:"byte_size"`
}

// runInvoke calls the tool on the signed-in channel uc and prints the ack:
// the result (with the files it returned, downloaded into the data
// directory) or the error. A tool error is exit status 1.
func runInvoke(ctx context.Context, h *host.Host, uc store.UserChannel, v invokeFlags, args json.RawMessage, stdout io.Writer, scrub func(string) string) error {
	args = withChannelArgument(args, uc.ChannelID)
	res, err := h.Invoke(ctx, uc.UserID, uc.SessionID, v.tool, args, connector.NewID("xconn_call_"), host.WithUserChannel(uc.ID))
	out := invokeOutput{ToolID: v.tool, ChannelID: uc.ChannelID}
	if err != nil {
		if ctx.Err() != nil {
			return nil // interrupted
		}
		pe := protocol.AsError(err)
		if pe == nil {
			pe = &protocol.Error{Code: protocol.CodeInternal, Message: err.Error()}
		}
		out.Error = &invokeError{Code: pe.Code, Message: scrub(pe.Message), Retryable: pe.Retryable}
	} else {
		out.Result = res.Output
		if res.ChannelID != "" {
			out.ChannelID = res.ChannelID
		}
		for _, f := range res.Files {
			out.Files = append(out.Files, invokeFile{FileRef: f.Ref, Path: f.Path, Filename: f.Filename, MimeType: f.MimeType, Type: f.Type, Size: f.Size})
		}
		for _, e := range res.FileErrors {
			out.FileErrors = append(out.FileErrors, scrub(e.Error()))
		}
	}
	b, merr := json.MarshalIndent(out, "", "  ")
	if merr != nil {
		return &exitError{code: 1, err: merr}
	}
	fmt.Fprintf(stdout, "%s\n", b)
	if err != nil {
		return &exitError{code: 1}
	}
	return nil
}

// withChannelArgument fills in the connector_channel_id argument the
// Card's input_schema requires with the signed-in channel, as a model
// would from the channel list, when --args leaves it out (--args '{}');
// a given one is kept (routing goes by the envelope either way). Anything
// but a JSON object is returned unchanged for the connector to refuse.
func withChannelArgument(args json.RawMessage, channelID string) json.RawMessage {
	var m map[string]json.RawMessage
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if json.Unmarshal(args, &m) != nil || m == nil {
		return args
	}
	if _, ok := m[protocol.ChannelIDArgument]; ok {
		return args
	}
	id, err := json.Marshal(channelID)
	if err != nil {
		return args
	}
	m[protocol.ChannelIDArgument] = id
	out, err := json.Marshal(m)
	if err != nil {
		return args
	}
	return out
}
