package connector_test

import (
	"encoding/json"
	"testing"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// TestChannelOrderParallelismAndCancel checks that work on one channel runs
// in order, that a blocked channel does not hold up another, and that
// closing the socket cancels the work in flight.
func TestChannelOrderParallelismAndCancel(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	c, _ := f.Connect(t, "")
	ctx := testCtx(t)
	a, b := openSigned(t, c), openSigned(t, c)
	send := func(ch, tool string, args string) *protocol.Envelope {
		e, _ := connectortest.Packet(protocol.TypeToolInvoke, ch, protocol.ToolInvokePayload{ToolID: tool, Arguments: json.RawMessage(args)})
		e.RequestID = e.PacketID
		if err := c.Send(ctx, e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	argsOf := func(ch, extra string) string { return `{"connector_channel_id":"` + ch + `"` + extra + `}` }
	// Channel a: a blocking call, then an echo queued behind it.
	send(a, sdkfixture.ToolBlock, argsOf(a, ""))
	behind := send(a, sdkfixture.ToolEcho, argsOf(a, `,"text":"after"`))
	eventually(t, "block running", func() bool { r, _ := f.Target.Blocked(); return r == 1 })
	// Channel b is not held up: its echoes are answered, in order.
	var order []string
	for _, text := range []string{"1", "2", "3"} {
		order = append(order, send(b, sdkfixture.ToolEcho, argsOf(b, `,"text":"`+text+`"`)).RequestID)
	}
	for _, want := range order {
		env, err := c.NextOfType(ctx, protocol.TypeToolInvokeAck)
		if err != nil {
			t.Fatal(err)
		}
		if env.RequestID == behind.RequestID {
			t.Fatal("a call queued behind a blocked one on the same channel ran first")
		}
		if env.RequestID != want {
			t.Fatalf("answer %s arrived before %s: order or parallelism broken", env.RequestID, want)
		}
	}
	if r, _ := f.Target.Blocked(); r != 1 {
		t.Fatal("channel a's blocking call is no longer running")
	}
	// Closing the socket cancels the call in flight.
	c.Close()
	eventually(t, "cancellation on close", func() bool { r, done := f.Target.Blocked(); return r == 0 && done == 1 })
}
