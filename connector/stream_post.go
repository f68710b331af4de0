package connector

import (
	"context"
	"errors"
	"fmt"

	"github.com/xconn/xconn/protocol"
)

// Post sends text (in parts of at most Limit) and then files as new
// target messages for a tool call, with the EditStream's Send and
// SendFile: the send tool every chat connector has. Each call's
// MessagePart carries call.ToolCallID and an idempotency key derived from
// call.IdempotencyKey, the same on a resend of the call, which a target
// that deduplicates by key (Feishu's uuid) uses to post nothing twice. It
// returns the references of what it posted, in order, and on failure the
// first call's error through Classify. Text and files must not both be
// empty (invalid_arguments).
func (s *EditStream[R]) Post(ctx context.Context, call *Call, text string, files ...*File) ([]R, error) {
	parts := s.opts.Limit.Split(text)
	if len(parts) == 0 && len(files) == 0 {
		return nil, protocol.Errorf(protocol.CodeInvalidArguments, "text must not be empty")
	}
	if len(files) > 0 && s.opts.SendFile == nil {
		return nil, errors.New("connector: Post with files and an EditStream without SendFile")
	}
	ch := call.Channel
	key := call.IdempotencyKey
	if key == "" {
		key = NewID("call_")
	}
	refs := make([]R, 0, len(parts)+len(files))
	for i := range len(parts) + len(files) {
		part := MessagePart{MessageID: "tool:" + key, ToolCallID: call.ToolCallID, Index: i, Key: partKey(ch.ID(), "tool:"+key, i)}
		var ref R
		var err error
		if i < len(parts) {
			ref, err = s.opts.Send(ctx, ch, part, parts[i])
		} else {
			ref, err = s.opts.SendFile(ctx, ch, part, files[i-len(parts)])
		}
		if err != nil {
			if s.opts.Classify != nil {
				err = s.opts.Classify(ctx, ch, err)
			}
			return refs, err
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// SendResult is the result of a chat connector's send tool
// (AddSendTool): the target's references of the messages sent, text
// parts first, then the file.
type SendResult[R any] struct {
	Status     string `json:"status" enum:"sent"`
	MessageIDs []R    `json:"message_ids"`
}

// AddSendTool registers tool id, the send tool every chat connector has:
// text (split by the stream's Limit), then optionally one file, posted
// with stream.Post. In is the connector's own input type (its struct tags
// describe the fields to the model, its File an Upload); args reads the
// text and the upload from it. opts are the tool's options, as for
// AddTool (SideEffect makes it idempotent by the call's key).
func AddSendTool[In, R any](s *Server, id string, stream *EditStream[R], args func(in In) (text string, file *Upload), opts ToolOptions) error {
	if stream == nil || args == nil {
		return s.registerTool(id, nil, nil, opts, fmt.Errorf("connector: send tool %q: nil stream or args", id))
	}
	return AddTool(s, id, func(ctx context.Context, call *Call, in In) (SendResult[R], error) {
		text, up := args(in)
		var files []*File
		if up != nil && up.File != nil {
			files = append(files, up.File)
		}
		ids, err := stream.Post(ctx, call, text, files...)
		if err != nil {
			return SendResult[R]{}, err
		}
		return SendResult[R]{Status: "sent", MessageIDs: ids}, nil
	}, opts)
}
