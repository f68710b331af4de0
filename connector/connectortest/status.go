package connectortest

import (
	"context"
	"fmt"

	"github.com/xconn/xconn/protocol"
)

// ExpectStatus removes and returns the oldest queued
// connection.descriptor.push of channel whose connection status is status,
// leaving every other packet queued, waiting until one arrives, ctx ends
// or the connection has ended. A connector that reports its target's
// health (degraded while its events socket is down, revoked once the
// target refused its token) is checked with it.
func (c *Client) ExpectStatus(ctx context.Context, channel string, status protocol.ConnectionStatus) (*protocol.Descriptor, error) {
	var d *protocol.Descriptor
	_, err := c.take(ctx, func(e *protocol.Envelope) bool {
		var p protocol.DescriptorPayload
		if e.Type != protocol.TypeDescriptorPush || e.ConnectorChannelID != channel || e.DecodePayload(&p) != nil ||
			p.ConnectionDescriptor == nil || p.ConnectionDescriptor.Connection.Status != status {
			return false
		}
		d = p.ConnectionDescriptor
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("connectortest: waiting for a %s Descriptor push of %s: %w", status, channel, err)
	}
	return d, nil
}
