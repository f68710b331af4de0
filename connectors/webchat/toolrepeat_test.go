package webchat_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/xconn/xconn/connectors/webchat"
)

// TestToolRepeatAfterLostRecord repeats a webchat_message_send call whose
// SDK record was lost (as when the connector dies between the send and the
// record): the repeat sends again, with the same page message id, so the
// page and the history show the message once.
func TestToolRepeatAfterLostRecord(t *testing.T) {
	s := newSystem(t, systemOptions{})
	c := newBrowserClient(t)
	api := s.baseURL + "/webchat/api"
	channel := signInByQR(t, s, c, "alice")
	ev := openEvents(t, c, api+"/events")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	args, _ := json.Marshal(map[string]string{"connector_channel_id": channel, "text": "sent once"})
	send := func() webchat.MessageEvent {
		t.Helper()
		r, err := s.host.Invoke(ctx, "alice", "", webchat.ToolSend, args, "call-lost")
		if err != nil {
			t.Fatalf("invoke: %v", err)
		}
		out := decode[webchat.SendResult](t, string(r.Output))
		m := decode[webchat.MessageEvent](t, ev.next(t, func(e sseEvent) bool {
			return e.Type == webchat.EventMessage && decode[webchat.MessageEvent](t, e.Data).Text == "sent once"
		}).Data)
		if m.MessageID != out.MessageID {
			t.Fatalf("page message %s, result %s", m.MessageID, out.MessageID)
		}
		return m
	}
	first := send()
	// Lose the SDK's record of the call.
	if n, err := s.cdb.PruneToolCalls(ctx, webchat.CardID, time.Now().Add(time.Hour), 0); err != nil || n != 1 {
		t.Fatalf("pruned %d records: %v", n, err)
	}
	if again := send(); again.MessageID != first.MessageID {
		t.Fatalf("the repeated call showed a second message %s (first %s)", again.MessageID, first.MessageID)
	}
	// Another call id is another message.
	args, _ = json.Marshal(map[string]string{"connector_channel_id": channel, "text": "another"})
	r, err := s.host.Invoke(ctx, "alice", "", webchat.ToolSend, args, "call-other")
	if err != nil {
		t.Fatal(err)
	}
	if out := decode[webchat.SendResult](t, string(r.Output)); out.MessageID == first.MessageID {
		t.Fatal("two call ids share a message id")
	}
}
