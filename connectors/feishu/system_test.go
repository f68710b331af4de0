package feishu

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/connectors/feishu/feishutest"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestConformanceWithoutHook: as xconn check runs it (no inbound hook, no
// user wrote to the bot yet), every MUST that applies passes; the outbound
// chat checks are skipped, saying a conversation is needed.
func TestConformanceWithoutHook(t *testing.T) {
	_, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	rep, err := conformance.Check(t.Context(), cn.base, conformance.Options{
		APIKey: testKey, AuthFlow: FlowApp, AuthInput: login, Out: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep.Summary())
	if _, failed, _ := rep.Counts(); !rep.OK() || failed != 0 {
		t.Fatalf("failed %v", rep.Failed())
	}
	if r, _ := rep.Result("imv2.ack-accepted"); r.Status != conformance.Skip || !strings.Contains(r.Reason, "target_delivery_failed") {
		t.Fatalf("imv2.ack-accepted: %s %q, want a skip naming the missing conversation", r.Status, r.Reason)
	}
}

// TestConformance: xconn check signed in with feishu_app_binding passes
// every applicable MUST; the Inbound hook makes alice write to the bot
// and the suite invokes feishu_message_send.
func TestConformance(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	var inbound atomic.Int32
	rep, err := conformance.Check(t.Context(), cn.base, conformance.Options{
		APIKey: testKey, AuthFlow: FlowApp, AuthInput: login,
		Inbound: func(ctx context.Context, channelID string) error {
			_, err := f.SendText(ctx, testApp, testChat, fmt.Sprintf("inbound %d", inbound.Add(1)))
			return err
		},
		Tool:     ToolSend,
		ToolArgs: json.RawMessage(`{"text": "posted by tool.invoke"}`),
		Out:      testLog{t},
		// Feishu gives a bot no chat to write to until a person messages
		// it (fact sheet §9): the connector rejects the suite's first
		// final, and the suite opens the conversation through this hook,
		// as a person would, and sends it again. Every check applies.
	})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	_ = rep.WriteText(&text)
	t.Log(rep.Summary())
	if passed, failed, _ := rep.Counts(); !rep.OK() || failed != 0 || passed == 0 {
		t.Fatalf("failed %v:\n%s", rep.Failed(), text.String())
	}
	for _, id := range []string{"auth.authenticated", "tool.invoke", "imv2.inbound-delivered", "imv2.inbound-message-id", "imv2.redelivery",
		"imv2.ack-accepted", "imv2.ack-duplicate", "imv2.ack-conflict", "imv2.final-with-file", "imv2.delta-final"} {
		if r, ok := rep.Result(id); !ok || r.Status != conformance.Pass {
			t.Errorf("%s: %s %s (want pass)", id, r.Status, r.Reason)
		}
	}
	n := 0
	for _, s := range f.Sent(testChat) {
		if s.Text() == "posted by tool.invoke" {
			n++
		}
	}
	// The suite invokes the tool before its Inbound hook, when there is
	// no default chat yet: the call is answered with an error, and the
	// text is sent at most once.
	if n > 1 {
		t.Errorf("the tool's text was sent %d times", n)
	}
}

// xagent is an in-process xAgent with the echo agent.
type xagent struct {
	h    *host.Host
	mu   sync.Mutex
	acks map[protocol.Direction]int
}

func (x *xagent) accepted(dir protocol.Direction) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.acks[dir]
}

func startHost(t *testing.T, dir string) *xagent {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "host.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	x := &xagent{acks: map[protocol.Direction]int{}}
	x.h, err = host.New(host.Options{Store: db, Delivery: db, Agent: host.Echo{}, FilesDir: filepath.Join(dir, "files"),
		ReconnectMin: 50 * time.Millisecond, ReconnectMax: 250 * time.Millisecond,
		OnPacket: func(dir protocol.Direction, _ string, env *protocol.Envelope) {
			var ack protocol.ChatAckPayload
			if env.Type == protocol.TypeChatMessageAck && env.DecodePayload(&ack) == nil && ack.Status == protocol.AckAccepted {
				x.mu.Lock()
				x.acks[dir]++
				x.mu.Unlock()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := x.h.Close(cctx); err != nil {
			t.Errorf("host close: %v", err)
		}
	})
	return x
}

// expectOneReply makes alice write text and requires the echo reply in
// the p2p chat exactly once. It is usually streamed (sent, then edited),
// but deltas are best effort (IM v2 §6: a final never depends on them), so
// a loaded machine may deliver the final alone; TestInboundP2P checks the
// streamed edit itself.
func expectOneReply(t *testing.T, f *feishutest.Server, x *xagent, text string) {
	t.Helper()
	reply := host.EchoText(&host.UserMessage{Text: text})
	toHost, toConn := x.accepted(protocol.ToHost), x.accepted(protocol.ToConnector)
	say(t, f, text)
	count := func() (n int, edited bool) {
		for _, s := range f.Sent(testChat) {
			if s.Text() == reply {
				n++
				edited = s.Edits > 0
			}
		}
		return n, edited
	}
	eventually(t, "the reply", func() bool { n, _ := count(); return n > 0 })
	eventually(t, "both acks", func() bool {
		return x.accepted(protocol.ToConnector) > toConn && x.accepted(protocol.ToHost) > toHost
	})
	time.Sleep(300 * time.Millisecond)
	if n, edited := count(); n != 1 {
		t.Fatalf("reply %q sent %d times (edited %v): %+v", reply, n, edited, f.Sent(testChat))
	}
}

// TestHostEchoRestart: xconn host --agent echo answers an injected p2p
// message with one streamed reply, and again exactly once after the
// connector restarts on the same data directory.
func TestHostEchoRestart(t *testing.T) {
	ctx := t.Context()
	f, api := newFake(t)
	data := t.TempDir()
	cn := startConn(t, data, api, "127.0.0.1:0", nil)
	addr := strings.TrimPrefix(cn.base, "http://")
	x := startHost(t, t.TempDir())
	c, err := x.h.Admit(ctx, cn.base, testKey)
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	s, err := x.h.Connect(sctx, "alice", c.CardID, FlowApp, login)
	if err != nil {
		t.Fatal(err)
	}
	if uc, err := s.Wait(sctx); err != nil || !uc.Authenticated {
		t.Fatalf("sign-in: %+v %v", uc, err)
	}
	expectOneReply(t, f, x, "before the restart")

	cn.stop()
	online := func() bool { cc, ok := x.h.Connector(c.CardID); return ok && cc.Link == host.LinkOnline }
	eventually(t, "the host sees the connector go", func() bool { return !online() })
	eventually(t, "the long connection closed", func() bool { return !f.Connected(testApp) })
	cn = startConn(t, data, api, addr, nil)
	eventually(t, "the host reconnects", online)
	expectOneReply(t, f, x, "after the restart")
	if n := len(f.Sent(testChat)); n != 2 {
		t.Fatalf("sent %d messages, want the two replies: %+v", n, f.Sent(testChat))
	}
}
