package connectortest

import (
	"context"
	"fmt"

	"github.com/xconn/xconn/protocol"
)

// This file is the assistant side of IM v2 as a host plays it: what an
// agent's answer looks like on the wire (deltas, activity, the final with
// uploaded files) and the connector's acks of it.

// SendDelta sends one chat.message.delta of the assistant message
// p.MessageID on channel, as a host streams an agent's answer. Deltas are
// best effort (IM v2 section 6): the connector answers none; a delta it
// refuses (a sequence out of order) comes back as an error packet, queued
// for [Client.Next].
func (c *Client) SendDelta(ctx context.Context, channel string, p protocol.ChatDeltaPayload) error {
	return c.sendPacket(ctx, protocol.TypeChatMessageDelta, channel, p)
}

// SendActivity sends a chat.activity snapshot (thinking, tool with its
// tool_name, idle) on channel. Like a delta it is best effort and unanswered.
func (c *Client) SendActivity(ctx context.Context, channel string, p protocol.ChatActivityPayload) error {
	return c.sendPacket(ctx, protocol.TypeChatActivity, channel, p)
}

// SendFinal sends the final chat.message of an assistant message on channel
// and waits for the connector's chat.message.ack: accepted once the target
// has it, duplicate for a message_id it completed before, rejected (with a
// code and whether a resend can succeed) otherwise. Files name uploads made
// with [Client.Upload] by their file_ref. An error packet instead of an ack
// is returned as a *protocol.Error. Sending the same payload again is how a
// host redelivers after a lost ack.
func (c *Client) SendFinal(ctx context.Context, channel string, p protocol.ChatMessagePayload) (*protocol.ChatAckPayload, error) {
	env, err := Packet(protocol.TypeChatMessage, channel, p)
	if err != nil {
		return nil, err
	}
	answer, err := c.RoundTrip(ctx, env)
	if err != nil {
		return nil, err
	}
	if err := AckError(answer); err != nil {
		return nil, err
	}
	if answer.Type != protocol.TypeChatMessageAck {
		return nil, fmt.Errorf("connectortest: chat.message %s answered with %s", p.MessageID, answer.Type)
	}
	var ack protocol.ChatAckPayload
	if err := answer.DecodePayload(&ack); err != nil {
		return nil, fmt.Errorf("connectortest: chat.message.ack: %w", err)
	}
	return &ack, nil
}

// SendStream streams an assistant message as an agent does: a delta per
// element of deltas (sequence 1, 2, ...), then the final p, whose ack it
// returns as [Client.SendFinal] does. p.Text is the complete text; the
// deltas are usually its pieces, in order.
func (c *Client) SendStream(ctx context.Context, channel string, p protocol.ChatMessagePayload, deltas ...string) (*protocol.ChatAckPayload, error) {
	for i, d := range deltas {
		if err := c.SendDelta(ctx, channel, protocol.ChatDeltaPayload{MessageID: p.MessageID, Sequence: int64(i + 1), Text: d}); err != nil {
			return nil, err
		}
	}
	return c.SendFinal(ctx, channel, p)
}

func (c *Client) sendPacket(ctx context.Context, typ, channel string, payload any) error {
	env, err := Packet(typ, channel, payload)
	if err != nil {
		return err
	}
	return c.Send(ctx, env)
}

// OpenAndSignIn opens a new channel and signs it in with the form flow
// flowID and input, as [Client.Open] and [Client.SignInForm] do one after
// the other. It returns the channel's connector_channel_id and the
// authenticated state; errors are those of the two steps.
func (c *Client) OpenAndSignIn(ctx context.Context, flowID string, input map[string]string) (string, *protocol.AuthStatePayload, error) {
	open, err := c.Open(ctx, "")
	if err != nil {
		return "", nil, err
	}
	st, err := c.SignInForm(ctx, open.ConnectorChannelID, flowID, input)
	return open.ConnectorChannelID, st, err
}
