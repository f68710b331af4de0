package host

import (
	"context"
	"time"

	"github.com/xconn/xconn/protocol"
)

// Agent is the agent platform behind the host: it receives each new user
// message of a user channel and answers through a [ReplyStream].
//
// HandleMessage runs on the channel's ordered worker: messages of one
// channel arrive one at a time, in order; different channels run in
// parallel. The inbound message is acknowledged (accepted) only after
// HandleMessage returns nil; an error rejects it (retryable unless it is a
// *protocol.Error with Retryable false) so the connector redelivers it.
// The reply stream stays usable after HandleMessage returns, so an agent may
// take the message and answer later. Implementations must be safe for
// concurrent use.
type Agent interface {
	HandleMessage(ctx context.Context, msg *UserMessage, reply ReplyStream) error
}

// AgentFunc adapts a function to [Agent].
type AgentFunc func(ctx context.Context, msg *UserMessage, reply ReplyStream) error

// HandleMessage calls f.
func (f AgentFunc) HandleMessage(ctx context.Context, msg *UserMessage, reply ReplyStream) error {
	return f(ctx, msg, reply)
}

// UserMessage is one new user input from a connector: an IM v2 chat.message
// (Profile xagent.im.v2) or a legacy IM v1 message.push (Profile
// xagent.im.v1, Push set). It is owned by the receiving Agent.
type UserMessage struct {
	CardID string
	// UserChannelID is the host's stable id of the user channel
	// (store.UserChannel.ID); ChannelID the connector_channel_id.
	UserChannelID string
	ChannelID     string
	UserID        string
	// SessionID is the session bound to the channel: its dedicated session
	// (the user channel's id, bound at sign-in) unless the embedder bound
	// another with [Host.BindSession]; "" for a channel without one. Pass
	// it to [Host.Tools] and [Host.Invoke] so that tool calls of the
	// conversation run on this channel.
	SessionID string
	Profile   protocol.Profile
	MessageID string
	Text      string
	// Files were downloaded into Options.FilesDir before the Agent is called.
	Files     []File
	CreatedAt time.Time
	// Push is the raw IM v1 payload for a legacy message.push, else nil.
	Push *protocol.MessagePushPayload
	// TargetSession is the target Session a message.push names
	// (target_session_ref, session_ref or target_session_id, section
	// 8.21), nil when it names none, and always for IM v2. The reference
	// is the connector's and opaque: the host delivers the message with
	// SessionID, the channel's bound session, as it does without a target
	// ("by default, xAgent delivers a message without a target to the
	// dedicated Connector Session"). An Agent that keeps sessions of its
	// own may route by it, after checking that it names one of UserID's.
	TargetSession *SessionTarget
}

// File is a file received from a connector and stored locally.
type File struct {
	// Ref is the host's unified file_ref of the file (section 10): the only
	// reference a model may see. Pass it in a tool argument declared as an
	// upload reference ([FunctionDef.FileArgs]); [Host.Invoke] uploads the
	// file for the tool. See [Host.LookupFile].
	Ref string
	// Path is the local file; the Agent may move or delete it (a Ref then
	// no longer resolves).
	Path     string
	Filename string
	MimeType string
	Type     protocol.FileType
	Size     int64
	// FileRef is the connector's reference (display only): never show it
	// to a model.
	FileRef string
}

// OutgoingFile is a local file an assistant message carries; [ReplyStream.Final]
// uploads it through POST /files/uploads before sending the final message.
type OutgoingFile struct {
	Path     string
	Filename string            // default: the base name of Path
	MimeType string            // default: by extension, else application/octet-stream
	Type     protocol.FileType // default: image/video/audio/file from MimeType
}

// ReplyStream carries assistant output back to one user channel through the
// IM v2 virtual message channel. Packets the negotiated catalog does not
// allow on the channel (for instance anything on an IM v1 channel) are
// dropped silently and the call returns nil. It is safe for concurrent use;
// deltas and the final of one assistant message must come from one
// goroutine.
type ReplyStream interface {
	// Activity sends a chat.activity snapshot (thinking, tool with toolName,
	// idle). It is best effort: nothing is sent while the channel is offline.
	Activity(ctx context.Context, status protocol.ActivityStatus, toolName string) error
	// Delta sends the next chat.message.delta of the current assistant
	// message, starting one (new message_id, sequence 1) if none is open.
	// Best effort, like Activity.
	Delta(ctx context.Context, text string) error
	// Final completes the current assistant message (or a new one) with its
	// complete text and files: files are uploaded first, then the final
	// chat.message is put in the durable outbox, pending until the connector
	// answers accepted or duplicate, retried after reconnects and never
	// replayed once completed. It returns the message_id once the message is
	// in the outbox; the next Delta starts a new assistant message.
	Final(ctx context.Context, text string, files ...OutgoingFile) (messageID string, err error)
}
