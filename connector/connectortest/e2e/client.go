package e2e

import (
	"context"
	"testing"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
)

// Client is a [connectortest.Client] bound to a test: the methods it adds
// play the host's side of a connector's own tests in one line each and
// fail the test (Fatalf) on an error, each bounded by Wait. Make it with
// [Conn.Dial]; it closes when the test ends. The embedded client reaches
// everything else (Invoke takes Client.Client).
type Client struct {
	*connectortest.Client
	tb testing.TB
}

func (c *Client) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), Wait)
}

// SignIn opens a new channel, signs it in with the form flow and input,
// and returns the channel's id and its authenticated state.
func (c *Client) SignIn(flowID string, input map[string]string) (string, *protocol.AuthStatePayload) {
	c.tb.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	ch, st, err := c.OpenAndSignIn(ctx, flowID, input)
	if err != nil {
		c.tb.Fatalf("e2e: sign-in with %s: %v", flowID, err)
	}
	return ch, st
}

// Final sends an assistant final on channel and returns the connector's
// ack.
func (c *Client) Final(channel string, p protocol.ChatMessagePayload) protocol.ChatAckPayload {
	c.tb.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	ack, err := c.SendFinal(ctx, channel, p)
	if err != nil {
		c.tb.Fatalf("e2e: final %s: %v", p.MessageID, err)
	}
	return *ack
}

// Delta sends one delta of the assistant message id on channel.
func (c *Client) Delta(channel, id string, seq int64, text string) {
	c.tb.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	if err := c.SendDelta(ctx, channel, protocol.ChatDeltaPayload{MessageID: id, Sequence: seq, Text: text}); err != nil {
		c.tb.Fatalf("e2e: delta %s/%d: %v", id, seq, err)
	}
}

// Activity sends an activity snapshot on channel.
func (c *Client) Activity(channel string, status protocol.ActivityStatus, toolName string) {
	c.tb.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	if err := c.SendActivity(ctx, channel, protocol.ChatActivityPayload{Status: status, ToolName: toolName}); err != nil {
		c.tb.Fatalf("e2e: activity %s: %v", status, err)
	}
}

// Put uploads a file for channel through the transfer plane and returns
// its file_ref.
func (c *Client) Put(channel, filename, mimeType string, data []byte) string {
	c.tb.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	up, err := c.Upload(ctx, channel, filename, mimeType, data)
	if err != nil {
		c.tb.Fatalf("e2e: %v", err)
	}
	return up.FileRef
}

// Fetch downloads a download_url the connector handed out.
func (c *Client) Fetch(url string) []byte {
	c.tb.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	b, err := c.Download(ctx, url)
	if err != nil {
		c.tb.Fatalf("e2e: %v", err)
	}
	return b
}

// Expect waits for the connector's next chat.message on channel.
func (c *Client) Expect(channel string) *connectortest.Message {
	c.tb.Helper()
	m, err := c.ExpectMessage(context.Background(), channel, Wait)
	if err != nil {
		c.tb.Fatalf("e2e: %v", err)
	}
	return m
}

// ExpectAccept waits for the connector's next chat.message on channel,
// acknowledges it accepted, as a host that took it does, and returns it.
func (c *Client) ExpectAccept(channel string) *connectortest.Message {
	c.tb.Helper()
	m := c.Expect(channel)
	ctx, cancel := c.ctx()
	defer cancel()
	if err := c.Ack(ctx, m, protocol.AckAccepted); err != nil {
		c.tb.Fatalf("e2e: ack %s: %v", m.MessageID, err)
	}
	return m
}
