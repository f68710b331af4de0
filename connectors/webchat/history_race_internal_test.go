package webchat

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/store"
)

// gatedHistory is an in-memory HistoryStore whose appends wait for a gate,
// so a test can hold a message between being shown and being recorded.
type gatedHistory struct {
	mu      sync.Mutex
	entries map[string][][]byte
	entered chan struct{} // receives when an append starts
	gate    chan struct{} // closed to let appends finish
}

func (g *gatedHistory) AppendMemory(ctx context.Context, conv string, entries [][]byte, _ int, _ int64) error {
	g.entered <- struct{}{}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.entries[conv] = append(g.entries[conv], entries...)
	return nil
}

func (g *gatedHistory) ListMemory(_ context.Context, conv string) ([]store.MemoryEntry, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []store.MemoryEntry
	for _, e := range g.entries[conv] {
		out = append(out, store.MemoryEntry{Data: e})
	}
	return out, nil
}

func (g *gatedHistory) ClearMemory(_ context.Context, conv string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.entries, conv)
	return nil
}

// A stream that subscribes while a message is shown but not yet recorded
// still gets the message, live or from the history (xconn chaos lost one:
// the message was published before the stream subscribed, and the stream
// read the history before the message was written to it).
func TestStreamSubscribingMidPublishSeesTheMessage(t *testing.T) {
	g := &gatedHistory{entries: map[string][][]byte{}, entered: make(chan struct{}, 1), gate: make(chan struct{})}
	c, err := New(Options{SDK: connector.Options{DataDir: t.TempDir()}, PublicURL: "http://127.0.0.1:8080", History: g})
	if err != nil {
		t.Fatal(err)
	}
	const ch = "cch_race"
	ctx := t.Context()
	published := make(chan error, 1)
	go func() {
		published <- c.publishMessage(ctx, ch, MessageEvent{MessageID: "m1", From: "user", Text: "hello", CreatedAt: 1})
	}()
	<-g.entered // shown, not yet recorded

	type result struct {
		sub  *subscriber
		past []event
		err  error
	}
	subscribed := make(chan result, 1)
	go func() {
		sub, past, err := c.subscribeWithHistory(ctx, ch, "192.0.2.1")
		subscribed <- result{sub, past, err}
	}()
	// Let the subscription run (with the bug it completes here, having
	// missed the message both ways), then let the record be written.
	time.Sleep(50 * time.Millisecond)
	close(g.gate)
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	r := <-subscribed
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer c.hub.unsubscribe(r.sub)
	seen := func(ev event) bool {
		var m MessageEvent
		return ev.typ == EventMessage && json.Unmarshal(ev.data, &m) == nil && m.MessageID == "m1"
	}
	for _, ev := range r.past {
		if seen(ev) {
			return
		}
	}
	for {
		select {
		case ev := <-r.sub.ch:
			if seen(ev) {
				return
			}
		default:
			t.Fatalf("the stream got m1 neither from the history (%d events) nor live", len(r.past))
		}
	}
}
