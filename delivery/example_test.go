package delivery_test

import (
	"context"
	"fmt"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/protocol"
)

func ExampleOutbox() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan delivery.Outcome, 1)
	ob, err := delivery.NewOutbox(delivery.OutboxOptions{
		Storage: delivery.NewMemoryStorage(0), // *store.DB in production
		Queue:   "connector",
		Send: func(ctx context.Context, e delivery.Entry) error {
			// Write a chat.message with e.Payload, wait for its ack, then:
			return delivery.AckResult(protocol.ChatAckPayload{MessageID: e.MessageID, Status: protocol.AckAccepted})
		},
		OnOutcome: func(o delivery.Outcome) { done <- o },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	stopped := make(chan struct{})
	go func() { ob.Run(ctx); close(stopped) }()

	res, _ := ob.Enqueue(ctx, "cch_42", "tg-9911", []byte(`{"message_id":"tg-9911","text":"hi"}`))
	fmt.Println(res.Status)
	o := <-done
	fmt.Println(o.MessageID, o.Kind)
	cancel()
	<-stopped
	// Output:
	// enqueued
	// tg-9911 delivered
}

func ExampleInbox() {
	in, _ := delivery.NewInbox(delivery.InboxOptions{Storage: delivery.NewMemoryStorage(0)})
	ctx := context.Background()
	receive := func(p protocol.ChatMessagePayload) protocol.ChatAckPayload {
		c := delivery.ContentOf(&p)
		v, err := in.Begin(ctx, "cch_42", p.MessageID, c)
		if err != nil {
			return delivery.RejectAck(p.MessageID, err)
		}
		if v != delivery.VerdictNew {
			return v.Ack(p.MessageID) // duplicate, conflict or busy: no side effect
		}
		// ... deliver to the target; on failure: in.Abort and RejectAck ...
		v, err = in.Commit(ctx, "cch_42", p.MessageID, c)
		if err != nil {
			return delivery.RejectAck(p.MessageID, err)
		}
		return v.Ack(p.MessageID)
	}
	fmt.Println(receive(protocol.ChatMessagePayload{MessageID: "asst-1", Text: "hello"}).Status)
	fmt.Println(receive(protocol.ChatMessagePayload{MessageID: "asst-1", Text: "hello"}).Status)
	ack := receive(protocol.ChatMessagePayload{MessageID: "asst-1", Text: "other"})
	fmt.Println(ack.Status, ack.Code, *ack.Retryable)
	// Output:
	// accepted
	// duplicate
	// rejected message_conflict false
}

func ExampleAssembler() {
	a := delivery.NewAssembler(delivery.AssemblerOptions{})
	a.Add("cch_42", "asst-1", 1, "Hel")
	a.Add("cch_42", "asst-1", 1, "Hel") // retransmission: ignored
	text, _, _ := a.Add("cch_42", "asst-1", 2, "lo")
	fmt.Println(text)
	_, _, err := a.Add("cch_42", "asst-1", 4, "!")
	fmt.Println(protocol.CodeOf(err, ""))
	final, _ := a.Final("cch_42", "asst-1") // the final chat.message text replaces it
	fmt.Println(final)
	// Output:
	// Hello
	// delta_sequence_invalid
	// Hello
}
