package connector_test

import (
	"encoding/json"
	"testing"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// TestPingNotStarvedByChannelWork checks that with every worker busy in a
// blocked tool handler, a ping still gets its pong and a new channel can
// still be opened: connection-level packets take no worker slot.
func TestPingNotStarvedByChannelWork(t *testing.T) {
	t.Parallel()
	const workers = 2
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{
		Adjust: func(o *connector.Options) { o.Workers = workers },
	})
	c, _ := f.Connect(t, "")
	ctx := testCtx(t)
	var calls []string
	for range workers {
		ch := openSigned(t, c)
		e, err := connectortest.Packet(protocol.TypeToolInvoke, ch, protocol.ToolInvokePayload{
			ToolID: sdkfixture.ToolBlock, Arguments: json.RawMessage(`{"connector_channel_id":"` + ch + `"}`),
		})
		if err != nil {
			t.Fatal(err)
		}
		e.RequestID = e.PacketID
		if err := c.Send(ctx, e); err != nil {
			t.Fatal(err)
		}
		calls = append(calls, e.RequestID)
	}
	eventually(t, "every worker blocked", func() bool { r, _ := f.Target.Blocked(); return r == workers })

	ping, err := connectortest.Packet(protocol.TypePing, "", protocol.EmptyPayload{})
	if err != nil {
		t.Fatal(err)
	}
	ping.RequestID = ping.PacketID
	pong, err := c.RoundTrip(ctx, ping)
	if err != nil {
		t.Fatalf("ping while every worker is busy: %v", err)
	}
	if pong.Type != protocol.TypePong || pong.ReplyTo != ping.PacketID {
		t.Fatalf("answer to ping = %s reply_to %q, want pong to %s", pong.Type, pong.ReplyTo, ping.PacketID)
	}
	// A channel.open without an id goes through the control queue, which
	// takes no worker slot either.
	if _, err := c.Open(ctx, ""); err != nil {
		t.Fatalf("channel.open while every worker is busy: %v", err)
	}
	if r, canceled := f.Target.Blocked(); r != workers || canceled != 0 {
		t.Fatalf("blocked handlers = %d running, %d cancelled; want %d running before release", r, canceled, workers)
	}

	f.Target.ReleaseBlocked()
	done := map[string]bool{}
	for range calls {
		env, err := c.NextOfType(ctx, protocol.TypeToolInvokeAck)
		if err != nil {
			t.Fatal(err)
		}
		wantOK(t, env, protocol.TypeToolInvokeAck)
		done[env.RequestID] = true
	}
	for _, id := range calls {
		if !done[id] {
			t.Fatalf("blocked call %s not answered after release", id)
		}
	}
}
