package webchat_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/xconn/xconn/connectors/webchat"
)

// TestHistoryAndStatusOverHTTP is the browser test's core without a
// browser: the history survives a connector restart; the event stream says
// the agent is offline when the host stops, and connected when it is back
// and has answered what was sent meanwhile; a logout clears the history.
func TestHistoryAndStatusOverHTTP(t *testing.T) {
	s := newSystem(t, systemOptions{})
	c := newBrowserClient(t)
	signInByQR(t, s, c, "hana")
	api := s.baseURL + "/webchat/api"
	isStatus := func(e sseEvent) bool { return e.Type == webchat.EventStatus }

	ev := openEvents(t, c, api+"/events")
	if st := decode[webchat.StatusEvent](t, ev.next(t, isStatus).Data); st.State != webchat.StateConnected {
		t.Fatalf("first status %+v", st)
	}
	status, id := postJSON(t, c, api+"/messages", "remember me")
	if status != http.StatusAccepted {
		t.Fatalf("post: %d", status)
	}
	expectEcho(t, ev, id, "You said: remember me")
	ev.close()

	s.restartConnector()
	ev = openEvents(t, c, api+"/events")
	ev.next(t, isStatus)
	var got []string
	for len(got) < 2 {
		e := ev.next(t, func(e sseEvent) bool { return e.Type == webchat.EventMessage })
		m := decode[webchat.MessageEvent](t, e.Data)
		got = append(got, m.From+": "+m.Text)
	}
	if got[0] != "user: remember me" || got[1] != "assistant: You said: remember me" {
		t.Fatalf("history after restart: %q", got)
	}

	s.stopHost()
	if st := decode[webchat.StatusEvent](t, ev.next(t, isStatus).Data); st.State != webchat.StateAgentOffline ||
		st.Detail != "agent offline — your messages will be answered when it is back" {
		t.Fatalf("status after the host stopped: %+v", st)
	}
	status, _ = postJSON(t, c, api+"/messages", "while you were away")
	if status != http.StatusAccepted {
		t.Fatalf("post while offline: %d", status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.startHost(ctx)
	// Both come, in either order: the answer and the connected state. (A
	// final the host delivered again around the connector's restart may
	// show up too: the page keys messages by id.)
	var answered, online bool
	for !answered || !online {
		e := ev.next(t, func(e sseEvent) bool { return e.Type == webchat.EventStatus || e.Type == webchat.EventMessage })
		if e.Type == webchat.EventStatus {
			st := decode[webchat.StatusEvent](t, e.Data)
			online = st.State == webchat.StateConnected
			continue
		}
		m := decode[webchat.MessageEvent](t, e.Data)
		answered = answered || m.From == "assistant" && m.Text == "You said: while you were away"
	}

	// A logout signs the browser out and forgets the history.
	chans, err := s.host.Channels(ctx, "hana", webchat.CardID)
	if err != nil || len(chans) != 1 {
		t.Fatalf("channels: %v %v", chans, err)
	}
	if err := s.host.Logout(ctx, chans[0].ID); err != nil {
		t.Fatal(err)
	}
	if st := decode[webchat.StatusEvent](t, ev.next(t, isStatus).Data); st.State != webchat.StateSignedOut {
		t.Fatalf("status after logout: %+v", st)
	}
	c2 := newBrowserClient(t)
	signInByQR(t, s, c2, "hana")
	ev2 := openEvents(t, c2, api+"/events")
	ev2.next(t, isStatus)
	status, id = postJSON(t, c2, api+"/messages", "fresh start")
	if status != http.StatusAccepted {
		t.Fatalf("post: %d", status)
	}
	first := decode[webchat.MessageEvent](t, ev2.next(t, func(e sseEvent) bool { return e.Type == webchat.EventMessage }).Data)
	if first.MessageID != id {
		t.Fatalf("after logout and a new sign-in the stream replayed %q: the history was not cleared", first.Text)
	}
}

// TestStatusReplaced: a browser whose chat moved to another channel (it
// signed in again by QR, for another channel) is told so on the stream of
// the old one.
func TestStatusReplaced(t *testing.T) {
	s := newSystem(t, systemOptions{})
	c := newBrowserClient(t)
	first := signInByQR(t, s, c, "ida")
	isStatus := func(e sseEvent) bool { return e.Type == webchat.EventStatus }
	ev := openEvents(t, c, s.baseURL+"/webchat/api/events")
	if st := decode[webchat.StatusEvent](t, ev.next(t, isStatus).Data); st.State != webchat.StateConnected {
		t.Fatalf("first status %+v", st)
	}
	if second := signInByQR(t, s, c, "jo"); second == first {
		t.Fatal("the second sign-in reused the channel")
	}
	if st := decode[webchat.StatusEvent](t, ev.next(t, isStatus).Data); st.State != webchat.StateReplaced || st.Detail == "" {
		t.Fatalf("status of the old chat: %+v", st)
	}
}
