package connector_test

import (
	"testing"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// TestChatRecordedWhenSocketClosesDuringDelivery: a final whose delivery
// to the target completes after its socket closed is still recorded, so
// the host's redelivery on the next socket is answered duplicate and the
// target gets it once (xconn chaos logged "inbox commit: context
// canceled" when a drop fell between the target and the record).
func TestChatRecordedWhenSocketClosesDuringDelivery(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	c, cid := f.Connect(t, "")
	ch := openSigned(t, c)
	ctx := testCtx(t)

	f.Target.SetHoldNext()
	env, _ := connectortest.Packet(protocol.TypeChatMessage, ch, protocol.ChatMessagePayload{MessageID: "held-1", Text: "once"})
	if err := c.Send(ctx, env); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the delivery waits", f.Target.Holding)
	c.Close()
	eventually(t, "the delivery completes", func() bool {
		msgs, _, _, _ := f.Target.Snapshot()
		return len(msgs) == 1
	})

	c2, again := f.Connect(t, cid)
	if again != cid {
		t.Fatalf("connector_id %s not restored (%s)", cid, again)
	}
	if _, err := c2.Open(ctx, ch); err != nil {
		t.Fatal(err)
	}
	var a protocol.ChatAckPayload
	eventually(t, "a terminal answer to the redelivery", func() bool {
		a = sendChat(t, c2, ch, protocol.ChatMessagePayload{MessageID: "held-1", Text: "once"})
		return a.Status != protocol.AckRejected || a.Retryable == nil || !*a.Retryable
	})
	if a.Status != protocol.AckDuplicate {
		t.Fatalf("redelivery answered %+v, want duplicate", a)
	}
	if msgs, _, _, _ := f.Target.Snapshot(); len(msgs) != 1 {
		t.Fatalf("the target got the message %d times", len(msgs))
	}
}

// TestToolRecordedWhenSocketClosesDuringCall: a side-effect tool call that
// completes after its socket closed is still recorded, so the host's retry
// of the call id on the next socket gets the recorded result and the side
// effect happens once.
func TestToolRecordedWhenSocketClosesDuringCall(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	c, cid := f.Connect(t, "")
	ch := openSigned(t, c)
	ctx := testCtx(t)

	f.Target.SetHoldNext()
	env, _ := connectortest.Packet(protocol.TypeToolInvoke, ch, protocol.ToolInvokePayload{ToolID: sdkfixture.ToolSend,
		Arguments: []byte(`{"connector_channel_id":"` + ch + `","text":"once"}`), Context: &protocol.ToolContext{ToolCallID: "call-held"}})
	env.RequestID = "req-held"
	if err := c.Send(ctx, env); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the call waits", f.Target.Holding)
	c.Close()
	eventually(t, "the call completes", func() bool {
		_, _, _, sends := f.Target.Snapshot()
		return sends == 1
	})

	eventually(t, "the call's record", func() bool {
		_, err := f.Store.GetToolCall(ctx, sdkfixture.FixtureCardID, ch, "call-held")
		return err == nil
	})

	c2, _ := f.Connect(t, cid)
	if _, err := c2.Open(ctx, ch); err != nil {
		t.Fatal(err)
	}
	ack := invoke(t, c2, ch, sdkfixture.ToolSend, `{"connector_channel_id":"`+ch+`","text":"once"}`, "call-held")
	if ack.Error != nil {
		t.Fatalf("retry answered %+v", ack.Error)
	}
	if _, _, _, sends := f.Target.Snapshot(); sends != 1 {
		t.Fatalf("the side effect happened %d times", sends)
	}
}
