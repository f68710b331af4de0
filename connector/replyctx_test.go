package connector_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
)

// TestTwoThreadsAnsweredInTheirOwn: a user writes in thread A, then in
// thread B before A is answered; each answer (and its stream) goes to the
// thread of the message it answers, found through InReplyTo and the reply
// context Publish recorded, after a restart too.
func TestTwoThreadsAnsweredInTheirOwn(t *testing.T) {
	b := &board{}
	var mu sync.Mutex
	threadOf := map[int]string{} // board message -> thread
	opts := connector.EditStreamOptions[int]{Interval: time.Nanosecond,
		Send: func(ctx context.Context, ch *connector.Channel, part connector.MessagePart, text string) (int, error) {
			thread := "main"
			if _, err := ch.LoadReplyContext(ctx, part.InReplyTo, &thread); err != nil {
				return 0, err
			}
			id, err := b.send(ctx, ch, part, text)
			mu.Lock()
			threadOf[id] = thread
			mu.Unlock()
			return id, err
		}}
	st := connectortest.NewStore(t)
	r := startStreamRig(t, st, b, opts, "")
	ch, ctx := r.channel(t), testCtx(t)
	for _, m := range []struct{ id, thread string }{{"u-A", "thread-A"}, {"u-B", "thread-B"}} {
		isNew, err := ch.Publish(ctx, connector.UserMessage{MessageID: m.id, Text: "question in " + m.thread, ReplyContext: m.thread})
		if err != nil || !isNew {
			t.Fatalf("Publish %s = %v, %v", m.id, isNew, err)
		}
	}
	// The same target message again (a re-push): stored once, not new.
	if isNew, err := ch.Publish(ctx, connector.UserMessage{MessageID: "u-A", Text: "question in thread-A", ReplyContext: "thread-B"}); err != nil || isNew {
		t.Fatalf("second Publish of u-A = %v, %v; want not new", isNew, err)
	}
	r.delta(t, "ans-A", 1, "Answer to A", "u-A")
	if a := r.final(t, protocol.ChatMessagePayload{MessageID: "ans-A", Text: "Answer to A.", InReplyTo: "u-A"}); a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", a)
	}
	r.stop()
	r = startStreamRig(t, st, b, opts, r.ch)
	if a := r.final(t, protocol.ChatMessagePayload{MessageID: "ans-B", Text: "Answer to B.", InReplyTo: "u-B"}); a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", a)
	}
	if a := r.final(t, protocol.ChatMessagePayload{MessageID: "note", Text: "Proactive."}); a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", a)
	}
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, m := range b.live() {
		got = append(got, threadOf[m.ID]+": "+m.Text)
	}
	if want := "thread-A: Answer to A.|thread-B: Answer to B.|main: Proactive."; strings.Join(got, "|") != want {
		t.Fatalf("answers %q, want %q", got, want)
	}
}

// TestReplyContextBounds: the latest MaxReplyContexts contexts are kept;
// a context too large is refused (the message is still published).
func TestReplyContextBounds(t *testing.T) {
	r := startStreamRig(t, connectortest.NewStore(t), &board{}, connector.EditStreamOptions[int]{}, "")
	ch, ctx := r.channel(t), testCtx(t)
	for i := range connector.MaxReplyContexts + 6 {
		if err := ch.SaveReplyContext(ctx, fmt.Sprintf("m%d", i), map[string]int{"thread": i}); err != nil {
			t.Fatal(err)
		}
	}
	var v map[string]int
	if ok, _ := ch.LoadReplyContext(ctx, "m5", &v); ok {
		t.Fatal("the oldest contexts were kept beyond MaxReplyContexts")
	}
	if ok, err := ch.LoadReplyContext(ctx, fmt.Sprintf("m%d", connector.MaxReplyContexts+5), &v); !ok || err != nil || v["thread"] != connector.MaxReplyContexts+5 {
		t.Fatalf("latest context: %v %v %v", v, ok, err)
	}
	if ok, _ := ch.LoadReplyContext(ctx, "", &v); ok {
		t.Fatal("an empty message id has a context")
	}
	huge := strings.Repeat("x", connector.MaxReplyContextBytes)
	if err := ch.SaveReplyContext(ctx, "big", huge); err == nil {
		t.Fatal("a context beyond MaxReplyContextBytes was saved")
	}
	if isNew, err := ch.Publish(ctx, connector.UserMessage{MessageID: "big", Text: "hi", ReplyContext: huge}); err != nil || !isNew {
		t.Fatalf("Publish with a context too large = %v, %v; want published", isNew, err)
	}
}

// A threaded target keeps where each user message was written, and answers
// there: Publish records the reply context, the answer's InReplyTo finds
// it again (durably: after a restart too).
func ExampleChannel_LoadReplyContext() {
	type thread struct {
		Chat string `json:"chat"`
		TS   string `json:"ts"` // the thread of the user's message
	}
	srv, host, chID, stop := exampleConnector(func(srv *connector.Server) {
		srv.OnAssistantMessage(func(ctx context.Context, ch *connector.Channel, m *connector.AssistantMessage) error {
			where := thread{Chat: "C1"} // proactive output: the default place
			if _, err := ch.LoadReplyContext(ctx, m.InReplyTo, &where); err != nil {
				return err
			}
			fmt.Printf("post %q in chat %s, thread %q\n", m.Text, where.Chat, where.TS)
			return nil
		})
	})
	defer stop()
	ctx := context.Background()
	ch, _ := srv.Channel(chID)
	// Inbound, from the target's events: messages in two threads.
	for _, ts := range []string{"1700000001.000100", "1700000002.000200"} {
		isNew, _ := ch.Publish(ctx, connector.UserMessage{MessageID: "C1-" + ts, Text: "question",
			ReplyContext: thread{Chat: "C1", TS: ts}})
		fmt.Println("new:", isNew)
	}
	// What xAgent does: answers naming the message they answer.
	for _, p := range []protocol.ChatMessagePayload{
		{MessageID: "a2", Text: "answer to the second", InReplyTo: "C1-1700000002.000200"},
		{MessageID: "a1", Text: "answer to the first", InReplyTo: "C1-1700000001.000100"},
		{MessageID: "a3", Text: "a reminder"},
	} {
		env, _ := connectortest.Packet(protocol.TypeChatMessage, chID, p)
		_, _ = host.RoundTrip(ctx, env)
	}
	// Output:
	// new: true
	// new: true
	// post "answer to the second" in chat C1, thread "1700000002.000200"
	// post "answer to the first" in chat C1, thread "1700000001.000100"
	// post "a reminder" in chat C1, thread ""
}
