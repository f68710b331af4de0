package webchat

import (
	"fmt"
	"testing"
)

func msgEvent(t *testing.T, id string) event {
	t.Helper()
	ev, err := newEvent(EventMessage, MessageEvent{MessageID: id, From: "assistant", Text: id})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestHubFanOutAndBacklog(t *testing.T) {
	h := newHub(4, 10, 3, 2)
	for i := range 5 {
		h.publish("ch1", msgEvent(t, fmt.Sprint("m", i)))
	}
	s, err := h.subscribe("ch1", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	defer h.unsubscribe(s)
	// Only the last 3 messages are replayed.
	for _, want := range []string{"m2", "m3", "m4"} {
		ev := <-s.ch
		if got := string(ev.data); got != fmt.Sprintf(`{"message_id":%q,"from":"assistant","text":%q,"created_at":0}`, want, want) {
			t.Fatalf("replayed %s, want %s", got, want)
		}
	}
	// Deltas reach subscribers but are not kept.
	d, _ := newEvent(EventDelta, DeltaEvent{MessageID: "m5", Sequence: 1, Text: "x"})
	h.publish("ch1", d)
	if ev := <-s.ch; ev.typ != EventDelta {
		t.Fatalf("got %s, want delta", ev.typ)
	}
	s2, _ := h.subscribe("ch1", "192.0.2.1")
	defer h.unsubscribe(s2)
	if n := len(s2.ch); n != 3 {
		t.Fatalf("second subscriber got %d replayed events, want 3", n)
	}
	// Other channels see nothing.
	s3, _ := h.subscribe("ch2", "192.0.2.1")
	defer h.unsubscribe(s3)
	if n := len(s3.ch); n != 0 {
		t.Fatalf("other channel got %d events", n)
	}
}

func TestHubDropsSlowClient(t *testing.T) {
	h := newHub(2, 10, 1, 10)
	s, err := h.subscribe("ch", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := newEvent(EventDelta, DeltaEvent{MessageID: "m", Sequence: 1, Text: "x"})
	for range 3 { // buffer is clientBuf + backlog = 3
		h.publish("ch", d)
	}
	select {
	case <-s.gone:
		t.Fatal("dropped too early")
	default:
	}
	h.publish("ch", d) // the fourth does not fit
	select {
	case <-s.gone:
	default:
		t.Fatal("slow client not dropped")
	}
	if h.clients("ch") != 0 {
		t.Fatal("dropped client still counted")
	}
	h.unsubscribe(s) // safe after a drop
}

func TestHubBounds(t *testing.T) {
	h := newHub(1, 2, 1, 2)
	a, err := h.subscribe("a", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.subscribe("b", "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.subscribe("c", "192.0.2.1"); err != errTooManyClients {
		t.Fatalf("third stream: err %v, want errTooManyClients", err)
	}
	h.unsubscribe(a)
	if _, err := h.subscribe("c", "192.0.2.1"); err != nil {
		t.Fatalf("after unsubscribe: %v", err)
	}
	// Backlogs: at most 2 channels, least recently used evicted.
	h.publish("x", msgEvent(t, "1"))
	h.publish("y", msgEvent(t, "2"))
	h.publish("x", msgEvent(t, "3"))
	h.publish("z", msgEvent(t, "4")) // evicts y
	if _, ok := h.backlogs["y"]; ok || len(h.backlogs) != 2 {
		t.Fatalf("backlogs %v, want x and z", keys(h.backlogs))
	}
	h.close()
	if _, err := h.subscribe("a", "192.0.2.1"); err == nil {
		t.Fatal("subscribe after close succeeded")
	}
}

func TestHubForget(t *testing.T) {
	h := newHub(0, 0, 0, 0)
	h.publish("ch", msgEvent(t, "1"))
	s, _ := h.subscribe("ch", "192.0.2.1")
	h.forget("ch")
	select {
	case <-s.gone:
	default:
		t.Fatal("stream not ended by forget")
	}
	s2, _ := h.subscribe("ch", "192.0.2.1")
	defer h.unsubscribe(s2)
	if len(s2.ch) != 0 {
		t.Fatal("backlog survived forget")
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
