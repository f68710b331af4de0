package host

import (
	"context"
	"fmt"
	"strings"

	"github.com/xconn/xconn/protocol"
)

// Echo is a demo [Agent]: it answers every message with "You said: <text>",
// streamed word by word as deltas between a thinking and an idle activity,
// and sends every received file back with the final message. It has no
// state and is safe for concurrent use.
type Echo struct{}

// EchoText is the reply Echo gives to a message text.
func EchoText(msg *UserMessage) string {
	switch {
	case msg.Text != "":
		return "You said: " + msg.Text
	case len(msg.Files) == 1:
		return "You sent a file."
	}
	return fmt.Sprintf("You sent %d files.", len(msg.Files))
}

// HandleMessage streams the echo and queues the final.
func (Echo) HandleMessage(ctx context.Context, msg *UserMessage, reply ReplyStream) error {
	if err := reply.Activity(ctx, protocol.ActivityThinking, ""); err != nil {
		return err
	}
	text := EchoText(msg)
	for i, w := range strings.Fields(text) {
		if i > 0 {
			w = " " + w
		}
		if err := reply.Delta(ctx, w); err != nil {
			return err
		}
	}
	files := make([]OutgoingFile, 0, len(msg.Files))
	for _, f := range msg.Files {
		files = append(files, OutgoingFile{Path: f.Path, Filename: f.Filename, MimeType: f.MimeType, Type: f.Type})
	}
	if _, err := reply.Final(ctx, text, files...); err != nil {
		return err
	}
	return reply.Activity(ctx, protocol.ActivityIdle, "")
}
