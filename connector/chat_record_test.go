package connector_test

import (
	"testing"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/internal/sdkfixture"
	"github.com/xconn/xconn/protocol"
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
