package connector

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/xconn/xconn/protocol"
)

// UserMessage is one inbound target message that a connector publishes to
// xAgent with [Channel.Publish] (IM v2 chat.message, Connector -> xAgent).
type UserMessage struct {
	// MessageID is the stable target message id, the idempotency key within
	// the channel. "" makes the SDK generate one (then a repeated Publish is
	// a new message).
	MessageID string
	// Text is the user's text; Text or Files must be non-empty.
	Text string
	// Files are cached by Publish on the transfer plane and sent as
	// file_refs with signed, short-lived download_urls.
	Files []OutgoingFile
	// CreatedAt is the target's message time; zero means now.
	CreatedAt time.Time
	// ReplyContext, when not nil, is where an answer to this message goes
	// on the target (its thread, topic, chat, the message to quote): any
	// JSON-encodable value of at most MaxReplyContextBytes. Publish
	// records it (Channel.SaveReplyContext) before the message can reach
	// xAgent; the connector reads it back with Channel.LoadReplyContext
	// and the answer's InReplyTo. It is not sent to xAgent.
	ReplyContext any
}

// OutgoingFile is a file of a [UserMessage]. Publish reads Content to the
// end (bounded by Options.MaxUploadBytes) before it returns.
type OutgoingFile struct {
	Name     string
	MimeType string
	// Type is image, video, audio or file; "" derives it from MimeType.
	Type    protocol.FileType
	Content io.Reader
}

// AssistantMessage is one final assistant message from xAgent (IM v2
// chat.message, xAgent -> Connector). Its Text is the complete content.
//
// Whether its deltas were already shown on the target is not a property
// of the message but of the target: a connector that streams keeps the
// target message it posted durably and edits it into Text (IM v2 section
// 5.4: never the deltas and the final as two messages). [EditStream] does
// exactly that, correct across restarts; a connector of its own records
// the posted message with Channel.SaveProgress when it posts it.
type AssistantMessage struct {
	MessageID string
	Text      string
	Files     []File
	CreatedAt time.Time
	// InReplyTo is the message_id of the user message this message
	// answers (the one a connector published), "" for proactive output or
	// when xAgent does not say: the xconn host sends it in the extension
	// member protocol.ExtInReplyTo. A threaded target answers in that
	// message's thread, topic or quote: see Channel.LoadReplyContext.
	InReplyTo string
}

// AssistantDelta is one in-order assistant text fragment (IM v2
// chat.message.delta), handed to OnAssistantDelta after the SDK checked its
// sequence. Text is the new fragment and Assembled all text so far;
// InReplyTo is the user message answered, as on AssistantMessage.
type AssistantDelta struct {
	MessageID string
	Sequence  int64
	Text      string
	Assembled string
	InReplyTo string
}

// Activity is a redacted processing-state snapshot (IM v2 chat.activity).
type Activity struct {
	Status   protocol.ActivityStatus
	ToolName string
}

// MessageHandler receives final assistant messages. The ack is accepted
// only when it returns nil, after every target side effect; an error
// becomes a rejected ack whose code and retryable flag come from the error
// (see [Temporary] and [protocol.Error]). It runs in channel order.
type MessageHandler func(ctx context.Context, ch *Channel, m *AssistantMessage) error

// DeltaHandler receives assistant deltas for streaming edits. Registering
// one selects streaming; without one, deltas are buffered until the final.
type DeltaHandler func(ctx context.Context, ch *Channel, d *AssistantDelta) error

// ActivityHandler receives activity snapshots. Its errors are logged and
// never affect message delivery.
type ActivityHandler func(ctx context.Context, ch *Channel, a Activity) error

// temporaryError marks an error as a transient target failure.
type temporaryError struct{ err error }

// Error returns the wrapped error's text.
func (e *temporaryError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e *temporaryError) Unwrap() error { return e.err }

// Temporary marks err as a transient target failure (network, a server
// error; a rate limit is a [*RateLimitError]):
// a MessageHandler returning it rejects the message with retryable=true so
// xAgent redelivers it later. Errors are permanent (retryable=false) unless
// marked, carried by a *protocol.Error with Retryable set, or a context
// deadline.
func Temporary(err error) error {
	if err == nil {
		return nil
	}
	return &temporaryError{err: err}
}

// IsTemporary reports whether err was marked with [Temporary], is a
// [*RateLimitError], is a retryable *protocol.Error, or is a context
// deadline.
func IsTemporary(err error) bool {
	var t *temporaryError
	if errors.As(err, &t) {
		return true
	}
	if _, ok := RetryAfterOf(err); ok {
		return true
	}
	if pe := protocol.AsError(err); pe != nil {
		return pe.Retryable || pe.Code == protocol.CodeChannelBusy
	}
	return errors.Is(err, context.DeadlineExceeded)
}
