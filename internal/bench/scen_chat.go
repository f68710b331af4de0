package bench

import (
	"context"
	"fmt"
	"strings"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
)

// chatPendingPerChannel bounds the unacked messages per channel the chat
// scenarios keep (far below the outbox capacity, so nothing is evicted).
const chatPendingPerChannel = 4

// runInbound measures Channel.Publish -> host Agent -> accepted ack.
func runInbound(ctx context.Context, cfg Config, _ *env) ([]Result, error) {
	dir, clean, err := scenarioDir(cfg, "inbound")
	if err != nil {
		return nil, err
	}
	defer clean()
	d := newChatDriver(protocol.ToConnector, cfg.ChatChannels*chatPendingPerChannel)
	agent := host.AgentFunc(func(_ context.Context, msg *host.UserMessage, _ host.ReplyStream) error {
		d.arrived(msg.Text)
		return nil
	})
	r, err := newRig(ctx, dir, rigOptions{agent: agent, onPacket: d.observe, logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	defer r.close()
	ucs, err := r.signIn(ctx, cfg.ChatChannels, 16, false)
	if err != nil {
		return nil, err
	}
	chans := make([]*connector.Channel, len(ucs))
	for i, uc := range ucs {
		if chans[i], err = r.conn.Channel(uc.ChannelID); err != nil {
			return nil, fmt.Errorf("inbound: channel: %w", err)
		}
	}
	send := func(ctx context.Context, p int, key string) error {
		return chans[p].Publish(ctx, connector.UserMessage{MessageID: "msg_" + key, Text: chatText(key, cfg.MessageSize)})
	}
	if _, err := d.run(ctx, len(chans), cfg.Warmup, send); err != nil {
		return nil, fmt.Errorf("inbound warm-up: %w", err)
	}
	m, err := d.run(ctx, len(chans), cfg.Duration, send)
	if err != nil {
		return nil, fmt.Errorf("inbound: %w", err)
	}
	res := m.result("inbound", "msg/s")
	res.Baseline, res.Goal = nameSQLiteBatch, ">= 0.5 and >= 5000 msg/s"
	res.Extra = append(res.Extra, m.notes()...)
	return []Result{res}, nil
}

// runOutbound measures host ReplyStream.Final -> connector no-op target ->
// accepted ack.
func runOutbound(ctx context.Context, cfg Config, _ *env) ([]Result, error) {
	dir, clean, err := scenarioDir(cfg, "outbound")
	if err != nil {
		return nil, err
	}
	defer clean()
	d := newChatDriver(protocol.ToHost, cfg.ChatChannels*chatPendingPerChannel)
	onMsg := func(_ context.Context, _ *connector.Channel, m *connector.AssistantMessage) error {
		d.arrived(m.Text)
		return nil
	}
	r, err := newRig(ctx, dir, rigOptions{onAssistant: onMsg, onPacket: d.observe, logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	defer r.close()
	ucs, err := r.signIn(ctx, cfg.ChatChannels, 16, false)
	if err != nil {
		return nil, err
	}
	streams := make([]host.ReplyStream, len(ucs))
	for i, uc := range ucs {
		if streams[i], err = r.host.Reply(ctx, uc.ID); err != nil {
			return nil, fmt.Errorf("outbound: reply stream: %w", err)
		}
	}
	send := func(ctx context.Context, p int, key string) error {
		_, err := streams[p].Final(ctx, chatText(key, cfg.MessageSize))
		return err
	}
	if _, err := d.run(ctx, len(streams), cfg.Warmup, send); err != nil {
		return nil, fmt.Errorf("outbound warm-up: %w", err)
	}
	m, err := d.run(ctx, len(streams), cfg.Duration, send)
	if err != nil {
		return nil, fmt.Errorf("outbound: %w", err)
	}
	res := m.result("outbound", "msg/s")
	res.Baseline, res.Goal = nameSQLiteBatch, ">= 0.5 and >= 5000 msg/s"
	res.Extra = append(res.Extra, m.notes()...)
	return []Result{res}, nil
}

// chatText is a message text of about size bytes that starts with key.
func chatText(key string, size int) string {
	return key + " " + strings.Repeat("x", max(0, size-len(key)-1))
}
