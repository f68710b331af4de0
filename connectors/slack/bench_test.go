package slack

import (
	"context"
	"fmt"
	"testing"

	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/slack/slacktest"
	"github.com/xconn/xconn/protocol"
)

// benchConn serves the connector against a fresh fake Slack and signs a
// channel in to #general over a host's wire client.
func benchConn(b *testing.B) (*slacktest.Server, *e2e.Client, string) {
	f, api := newFake(b, nil)
	cn := e2e.Start(b, e2e.Config{APIKey: testKey, Fake: api, Secrets: secrets}, build(nil))
	cl := cn.Dial(b)
	ch, _ := cl.SignIn(FlowApp, login)
	e2e.Await(b, "a Socket Mode connection", func(ctx context.Context) (slacktest.SocketStats, error) {
		return f.WaitStats(ctx, appToken, func(s slacktest.SocketStats) bool { return s.Connections == 1 })
	})
	return f, cl, ch
}

// BenchmarkInbound: one message a person writes, from the events_api
// envelope on the Socket Mode connection to the chat.message the host
// receives and acks (the envelope is acked to Slack after the durable
// publish).
func BenchmarkInbound(b *testing.B) {
	f, cl, ch := benchConn(b)
	i := 0
	for b.Loop() {
		i++
		f.Say(general, alice, fmt.Sprint("bench ", i))
		cl.ExpectAccept(ch)
	}
}

// BenchmarkFinal: one assistant final, from the host's chat.message to
// the connector's accepted ack, after chat.postMessage.
func BenchmarkFinal(b *testing.B) {
	_, cl, ch := benchConn(b)
	i := 0
	for b.Loop() {
		i++
		if a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: fmt.Sprint("bench-", i), Text: "an answer"}); a.Status != protocol.AckAccepted {
			b.Fatalf("ack %+v", a)
		}
	}
}
