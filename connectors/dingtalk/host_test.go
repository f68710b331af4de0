package dingtalk

import (
	"context"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
)

// TestHostAcrossDrops: a real host with the echo agent answers alice
// exactly once before and after the Stream connection is dropped (a
// network failure) and after DingTalk announces a disconnect; the
// connector registers anew each time; no secret or issued token reaches
// the host or the logs.
func TestHostAcrossDrops(t *testing.T) {
	f, url := newFake(t)
	fake := chatOn(f, url)
	f.SetDisconnectGrace(200 * time.Millisecond)
	cn := startConn(t, t.TempDir(), fake.Addr, "127.0.0.1:0", nil)
	h := e2e.StartHost(t, e2e.HostOptions{Secrets: e2e.Secrets{testSecret, testKey}})
	if _, err := h.SignIn(t.Context(), "alice", h.AdmitConnector(cn.URL, testKey), e2e.SignIn{Flow: FlowApp, Input: login}); err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	want := []string{}
	answer := func(text string) {
		t.Helper()
		accepted := h.Acks(protocol.ToConnector, protocol.AckAccepted)
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := fake.Say(ctx, text); err != nil {
			t.Fatal(err)
		}
		reply := host.EchoText(&host.UserMessage{Text: text})
		want = append(want, reply)
		e2e.Eventually(t, "the reply to "+text, func() bool {
			return e2e.Count(fake.Posted(t), reply) > 0 && h.Acks(protocol.ToConnector, protocol.AckAccepted) > accepted
		})
	}
	answer("hello")
	opens := f.Calls("open")
	f.Drop(testClient)
	answer("after the drop")
	f.Disconnect(testClient)
	e2e.Eventually(t, "a registration after the disconnect", func() bool { return f.Calls("open") >= opens+2 })
	answer("after the disconnect")
	time.Sleep(200 * time.Millisecond) // a second reply would show by now
	got := fake.Posted(t)
	if len(got) != len(want) {
		t.Fatalf("posted %q, want %q", got, want)
	}
	for _, w := range want {
		if e2e.Count(got, w) != 1 {
			t.Fatalf("posted %q, want each of %q once", got, want)
		}
	}
	s := e2e.Secrets(fake.Secrets())
	s.Check(t, "the connector's logs", cn.Logs.String())
	h.CheckSecrets(t, s)
}
