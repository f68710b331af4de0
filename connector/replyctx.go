package connector

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// Reply context: where the answer to one user message goes on a threaded
// target (Slack's channel and thread_ts, a Telegram topic, the Feishu
// message to reply to, a Discord thread, DingTalk's session webhook),
// kept per message id, because "the latest thread" answers the wrong one
// as soon as a user writes in two. Every threaded target needs it, so the
// SDK keeps it: Publish records UserMessage.ReplyContext before the
// message can reach xAgent, and the answer's AssistantMessage.InReplyTo
// (or AssistantDelta.InReplyTo) finds it again, after restarts too.
const (
	// MaxReplyContexts bounds the messages whose reply context a channel
	// keeps; the oldest goes first. Answers come soon after their
	// questions, so the latest are enough.
	MaxReplyContexts = 64
	// MaxReplyContextBytes bounds one encoded reply context.
	MaxReplyContextBytes = 1 << 10
	// maxReplyContextsBytes bounds a channel's records together, within
	// the channel state's own bounds (see SaveState).
	maxReplyContextsBytes = 12 << 10
	// replyContextKey is the channel state key of the records.
	replyContextKey = "xconn.reply_context"
)

// SaveReplyContext records v (JSON-encoded, at most MaxReplyContextBytes)
// as the reply context of the user message messageID: where an answer to
// it goes on the target, replacing one recorded before. Publish records
// UserMessage.ReplyContext (keeping the first one recorded for a message
// id); a connector calls SaveReplyContext for a context it learns later.
// Saving the value already recorded writes nothing. The channel keeps the
// contexts of its MaxReplyContexts latest messages, durably (a restart
// keeps them, logout clears them). Safe for concurrent use.
func (c *Channel) SaveReplyContext(ctx context.Context, messageID string, v any) error {
	return c.saveReplyContext(ctx, messageID, v, true)
}

// saveReplyContext records v for messageID; a recorded value is replaced
// only when replace is set (Publish keeps the first: a re-push of the
// same target message writes nothing).
func (c *Channel) saveReplyContext(ctx context.Context, messageID string, v any, replace bool) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("connector: encode reply context of %s: %w", messageID, err)
	}
	if len(b) > MaxReplyContextBytes {
		return fmt.Errorf("connector: reply context of %s: %d bytes, at most %d", messageID, len(b), MaxReplyContextBytes)
	}
	return c.updateRecords(ctx, replyContextKey, func(list []progressRecord) ([]progressRecord, bool) {
		if i := slices.IndexFunc(list, func(r progressRecord) bool { return r.ID == messageID }); i >= 0 {
			if !replace || bytes.Equal(list[i].Value, b) {
				return list, false
			}
			list = slices.Delete(list, i, i+1)
		}
		list = append(list, progressRecord{ID: messageID, Value: b})
		list = list[max(0, len(list)-MaxReplyContexts):]
		for len(list) > 1 && recordsSize(list) > maxReplyContextsBytes {
			list = list[1:]
		}
		return list, true
	})
}

// LoadReplyContext decodes into v the reply context recorded for the user
// message messageID (typically AssistantMessage.InReplyTo) and reports
// whether there was one. An empty messageID has none.
func (c *Channel) LoadReplyContext(ctx context.Context, messageID string, v any) (bool, error) {
	if messageID == "" {
		return false, nil
	}
	return c.loadRecord(ctx, replyContextKey, messageID, v)
}

// recordsSize approximates the encoded size of list.
func recordsSize(list []progressRecord) int {
	n := 2
	for _, r := range list {
		n += len(r.ID) + len(r.Value) + 16
	}
	return n
}
