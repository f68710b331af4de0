package connectortest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/xconn/xconn/protocol"
)

// DefaultExpectTimeout is the wait of [Client.ExpectMessage] when its
// timeout is zero.
const DefaultExpectTimeout = 5 * time.Second

// Message is one chat.message the connector sent (IM v2 inbound user input),
// as [Client.ExpectMessage] returns it: the payload plus what an ack needs.
type Message struct {
	protocol.ChatMessagePayload
	// Channel is the connector_channel_id it arrived on.
	Channel string
	// PacketID is its packet_id, which the ack's reply_to names.
	PacketID string
}

// ExpectMessage waits up to timeout (DefaultExpectTimeout when zero), and
// not beyond ctx, for the next chat.message on channel ("" for any channel)
// and returns it. Other queued packets stay queued. Until it is
// acknowledged with [Client.Ack] the connector keeps the message pending
// and sends it again after a reconnection.
func (c *Client) ExpectMessage(ctx context.Context, channel string, timeout time.Duration) (*Message, error) {
	if timeout <= 0 {
		timeout = DefaultExpectTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	env, err := c.take(ctx, func(env *protocol.Envelope) bool {
		return env.Type == protocol.TypeChatMessage && (channel == "" || env.ConnectorChannelID == channel)
	})
	if err != nil {
		return nil, fmt.Errorf("connectortest: waiting for a chat.message on %q: %w", channel, err)
	}
	m := &Message{Channel: env.ConnectorChannelID, PacketID: env.PacketID}
	if err := env.DecodePayload(&m.ChatMessagePayload); err != nil {
		return nil, fmt.Errorf("connectortest: chat.message: %w", err)
	}
	return m, nil
}

// Ack acknowledges m with status accepted (the host took responsibility;
// the connector drops it from its outbox) or duplicate (the host had it
// already). For rejected, use [Client.Reject].
func (c *Client) Ack(ctx context.Context, m *Message, status protocol.AckStatus) error {
	if status != protocol.AckAccepted && status != protocol.AckDuplicate {
		return errors.New("connectortest: Ack takes accepted or duplicate; use Reject")
	}
	return c.sendAck(ctx, m, protocol.ChatAckPayload{MessageID: m.MessageID, Status: status})
}

// Reject acknowledges m with status rejected, an error code and whether a
// resend of the same message can succeed (retryable: the connector keeps it
// and retries later; not retryable: it gives the message up).
func (c *Client) Reject(ctx context.Context, m *Message, code protocol.Code, retryable bool, message string) error {
	return c.sendAck(ctx, m, protocol.ChatAckPayload{MessageID: m.MessageID, Status: protocol.AckRejected,
		Code: string(code), Retryable: &retryable, Message: message})
}

func (c *Client) sendAck(ctx context.Context, m *Message, p protocol.ChatAckPayload) error {
	env, err := Packet(protocol.TypeChatMessageAck, m.Channel, p)
	if err != nil {
		return err
	}
	env.ReplyTo = m.PacketID
	return c.Send(ctx, env)
}
