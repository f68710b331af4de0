package wechat_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connectors/wechat/wechattest"
	"github.com/xconn/xconn/protocol"
)

// TestAnswerGoesToWhoAsked: u_a asks, then u_b asks before u_a is
// answered; the answer to u_a's message goes to u_a (with u_a's context
// token), found by the message it answers (x-in-reply-to and the reply
// context Publish recorded), not to the latest sender. Proactive output
// still goes to the latest sender.
func TestAnswerGoesToWhoAsked(t *testing.T) {
	r := newRig(t, wechattest.Options{}, nil)
	c := r.Dial(t)
	ch, _ := r.signIn(c)
	ctx, cancel := context.WithTimeout(t.Context(), 2*wait)
	defer cancel()
	asked := map[string]string{} // peer -> connector message id
	var tokens = map[string]string{}
	for _, peer := range []string{"u_a", "u_b"} {
		wm, err := r.fake.Inject(wechattest.Inbound{From: peer, Text: "question from " + peer})
		if err != nil {
			t.Fatal(err)
		}
		m, err := c.ExpectMessage(ctx, ch, wait)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Ack(ctx, m, protocol.AckAccepted); err != nil {
			t.Fatal(err)
		}
		asked[peer], tokens[peer] = m.MessageID, wm.ContextToken
	}
	for _, p := range []protocol.ChatMessagePayload{
		{MessageID: "ans-a", Text: "answer for u_a", InReplyTo: asked["u_a"]},
		{MessageID: "note", Text: "a note"},
	} {
		env, _ := connectortest.Packet(protocol.TypeChatMessage, ch, p)
		ack, err := c.RoundTrip(ctx, env)
		if err != nil || ack.Type != protocol.TypeChatMessageAck {
			t.Fatalf("ack %+v %v", ack, err)
		}
	}
	var got []string
	for _, s := range r.fake.Delivered("") {
		got = append(got, fmt.Sprintf("%s %v: %s", s.To, s.ContextToken == tokens[s.To], s.Text))
	}
	if want := []string{"u_a true: answer for u_a", "u_b true: a note"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("delivered %q, want %q", got, want)
	}
	r.noViolations()
}
