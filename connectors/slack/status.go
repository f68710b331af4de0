package slack

import (
	"context"
	"fmt"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// statusThreadKey is the channel state key of the thread the last
// published message was written in (a statusThread), where the agent's
// activity is shown.
const statusThreadKey = "slack.status_thread"

// statusOffKey is the channel state key of the time until which the
// connector does not try assistant.threads.setStatus again, after Slack
// refused it.
const statusOffKey = "slack.status_off_until"

// StatusRetryAfter is how long the connector leaves a channel's status
// alone after Slack refused assistant.threads.setStatus (an app without
// the Agents & AI Apps feature, a workspace or conversation that does
// not allow it), before it tries again.
const StatusRetryAfter = 24 * time.Hour

// statusThread is a conversation and the ts of the thread's parent.
type statusThread struct {
	Channel  string `json:"channel"`
	ThreadTS string `json:"thread_ts"`
}

// statusText is the status an activity shows ("" clears it).
func statusText(a connector.Activity) string {
	switch a.Status {
	case protocol.ActivityThinking:
		return "is thinking…"
	case protocol.ActivityTool:
		if a.ToolName != "" {
			return "is using " + a.ToolName + "…"
		}
		return "is working…"
	}
	return ""
}

// activity shows the agent's activity as the bot's status in the thread
// the last message of the channel was written in, with
// assistant.threads.setStatus; Slack has no typing indicator for bots
// outside threads. Slack clears the status when the bot posts there. A
// refusal (other than a rate limit, an outage or a revoked token) turns
// the status off for the channel for StatusRetryAfter; errors are logged
// by the SDK and never affect messages.
func (c *Connector) activity(ctx context.Context, ch *connector.Channel, a connector.Activity) error {
	var th statusThread
	if ok, err := ch.LoadState(ctx, statusThreadKey, &th); err != nil || !ok || th.ThreadTS == "" {
		return err
	}
	var off int64
	if ok, err := ch.LoadState(ctx, statusOffKey, &off); err == nil && ok && time.Now().Unix() < off {
		return nil
	}
	cl, err := c.clients.Get(ch)
	if err != nil {
		return err
	}
	err = c.call(ctx, "assistant.threads.setStatus", func(ctx context.Context) error {
		return cl.api.SetAssistantThreadsStatusContext(ctx, slackapi.AssistantThreadsSetStatusParameters{
			ChannelID: th.Channel, ThreadTS: th.ThreadTS, Status: statusText(a)})
	})
	if err == nil || isTemporary(err) || isRevoked(err) {
		return err
	}
	c.log.Info("slack: assistant.threads.setStatus refused: no activity status in this channel for a while", "channel", ch.ID(),
		"err", err, "retry_after", StatusRetryAfter)
	if serr := ch.SaveState(ctx, statusOffKey, time.Now().Add(StatusRetryAfter).Unix()); serr != nil {
		return fmt.Errorf("slack: status: %w", serr)
	}
	return nil
}
