package slack

import (
	"context"
	"maps"
	"slices"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// historyPage is the page size of the catch-up's conversations.history
// and conversations.replies calls.
const historyPage = 200

// backfill publishes what the app's channels missed while the connection
// was down: for each conversation a channel follows (its bound one, or
// those its last messages came from), the messages after the last one it
// published, from conversations.history and, for threads that moved,
// conversations.replies. It runs each time Socket Mode is connected (also
// the first time: a restart catches up too). Publishing is idempotent by
// message id, so a message that also arrives as an event is published once.
func (c *Connector) backfill(ctx context.Context, m *connector.Members[binding]) {
	for _, mb := range m.Channels() {
		if ctx.Err() != nil {
			return
		}
		if !mb.Channel.Authenticated() {
			continue
		}
		b := mb.Binding
		cur := map[string]string{}
		if _, err := mb.Channel.LoadState(ctx, cursorKey, &cur); err != nil {
			c.log.Warn("slack: load cursor", "channel", mb.Channel.ID(), "err", err)
			continue
		}
		if cur == nil {
			cur = map[string]string{}
		}
		if b.Channel != "" {
			if _, ok := cur[b.Channel]; !ok {
				cur[b.Channel] = b.Since
			}
			cur = map[string]string{b.Channel: cur[b.Channel]}
		}
		for _, conv := range slices.Sorted(maps.Keys(cur)) {
			oldest := cur[conv]
			if tsLess(oldest, b.Since) {
				oldest = b.Since
			}
			msgs, err := c.history(ctx, b.BotToken, conv, oldest)
			if err != nil {
				if isRevoked(err) {
					if serr := mb.Channel.SetStatus(ctx, protocol.StatusRevoked); serr != nil {
						c.log.Warn("slack: set status", "channel", mb.Channel.ID(), "err", serr)
					}
				}
				c.log.Warn("slack: catch-up after reconnect failed", "channel", mb.Channel.ID(), "conversation", conv, "err", err)
				continue
			}
			for i := range msgs {
				if err := c.deliver(ctx, m, &msgs[i]); err != nil {
					c.log.Warn("slack: catch-up message not published (tried again on the next reconnect)", "channel", mb.Channel.ID(), "err", err)
					break
				}
			}
		}
	}
}

// history returns the messages of conv after oldest, oldest first: the
// top-level ones and the thread replies, at most MaxBackfill (the newest).
func (c *Connector) history(ctx context.Context, botToken, conv, oldest string) ([]incoming, error) {
	api := c.api(botToken, "")
	var out []incoming
	var threads []string
	cursor := ""
	for len(out) < c.maxBackfill {
		var res *slackapi.GetConversationHistoryResponse
		err := c.call(ctx, "conversations.history", func(ctx context.Context) (err error) {
			res, err = api.GetConversationHistoryContext(ctx, &slackapi.GetConversationHistoryParameters{
				ChannelID: conv, Oldest: oldest, Cursor: cursor, Limit: historyPage})
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, msg := range res.Messages {
			if tsLess(oldest, msg.Timestamp) {
				out = append(out, fromHistory(conv, msg.Msg))
			}
			if msg.ReplyCount > 0 && tsLess(oldest, msg.LatestReply) {
				threads = append(threads, msg.Timestamp)
			}
		}
		cursor = res.ResponseMetaData.NextCursor
		if !res.HasMore || cursor == "" {
			break
		}
	}
	for _, parent := range threads {
		cursor := ""
		for len(out) < c.maxBackfill {
			var msgs []slackapi.Message
			var more bool
			err := c.call(ctx, "conversations.replies", func(ctx context.Context) (err error) {
				msgs, more, cursor, err = api.GetConversationRepliesContext(ctx, &slackapi.GetConversationRepliesParameters{
					ChannelID: conv, Timestamp: parent, Oldest: oldest, Cursor: cursor, Limit: historyPage})
				return err
			})
			if err != nil {
				return nil, err
			}
			for _, msg := range msgs {
				if msg.Timestamp != parent && tsLess(oldest, msg.Timestamp) && msg.SubType != "thread_broadcast" {
					out = append(out, fromHistory(conv, msg.Msg))
				}
			}
			if !more || cursor == "" {
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b incoming) int {
		switch {
		case tsLess(a.TS, b.TS):
			return -1
		case tsLess(b.TS, a.TS):
			return 1
		}
		return 0
	})
	out = slices.CompactFunc(out, func(a, b incoming) bool { return a.TS == b.TS })
	if len(out) > c.maxBackfill {
		c.log.Warn("slack: catch-up longer than MaxBackfill: the oldest messages are skipped", "conversation", conv, "skipped", len(out)-c.maxBackfill)
		out = out[len(out)-c.maxBackfill:]
	}
	return out, nil
}

// fromHistory reads a history message as an incoming one.
func fromHistory(conv string, m slackapi.Msg) incoming {
	in := incoming{Channel: conv, TS: m.Timestamp, User: m.User, BotID: m.BotID, SubType: m.SubType, Text: m.Text, Files: m.Files}
	if m.ThreadTimestamp != "" && m.ThreadTimestamp != m.Timestamp {
		in.ThreadTS = m.ThreadTimestamp
	}
	if strings.HasPrefix(conv, "D") {
		in.ChannelType = "im"
	}
	return in
}
