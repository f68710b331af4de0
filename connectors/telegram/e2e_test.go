package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/connectors/telegram/telegramtest"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// TestConformance: signed in with telegram_bot_binding against the fake
// Bot API, the suite passes every applicable MUST; the Inbound hook makes
// the person in the chat write, and the suite invokes
// telegram_message_send, so the inbound, redelivery and tool checks run
// instead of being skipped.
func TestConformance(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	var inbound atomic.Int32
	const toolText = "posted by tool.invoke"
	opts := conformance.Options{
		APIKey: testKey, AuthFlow: FlowBot, AuthInput: login,
		Inbound: func(_ context.Context, channelID string) error {
			f.SendText(testToken, testChat, fmt.Sprintf("inbound %d for %s", inbound.Add(1), channelID))
			return nil
		},
		Tool:     ToolSend,
		ToolArgs: json.RawMessage(fmt.Sprintf(`{"text": %q}`, toolText)),
		Out:      testLog{t},
	}
	rep, err := conformance.Check(t.Context(), cn.base, opts)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	_ = rep.WriteText(&text)
	t.Log(rep.Summary())
	if passed, failed, _ := rep.Counts(); !rep.OK() || failed != 0 || passed == 0 {
		t.Fatalf("failed %v:\n%s", rep.Failed(), text.String())
	}
	for _, id := range []string{"auth.authenticated", "tool.invoke", "imv2.inbound-valid", "imv2.inbound-delivered",
		"imv2.inbound-message-id", "imv2.redelivery", "imv2.inbound-acked-not-resent", "imv2.ack-accepted"} {
		if r, ok := rep.Result(id); !ok || r.Status != conformance.Pass {
			t.Errorf("%s: %s %s (want pass)", id, r.Status, r.Reason)
		}
	}
	// Every other skip is a capability this connector does not have.
	notDeclared := []conformance.Capability{conformance.CapHasPathPrefix, conformance.CapHasQRFlow,
		conformance.CapDeclaresIMv1, conformance.CapDeclaresDevice, conformance.CapPublishesFiles, conformance.CapPublishesMessagePush}
	for _, r := range rep.Results {
		if req, _ := conformance.Lookup(r.ID); r.Status == conformance.Skip && !slices.Contains(notDeclared, req.Capability) && !progressless(r) {
			t.Errorf("%s (%s, %s) skipped: %s", r.ID, r.Level, req.Capability, r.Reason)
		}
	}
	if inbound.Load() == 0 {
		t.Error("the suite never called the Inbound hook")
	}
	// Two calls, each repeated once: with a tool_call_id
	// (tool.idempotency) and without context (tool.idempotency-request-id).
	if n := countText(f.Sent(testChat), toolText); n != 2 {
		t.Errorf("the tool's text posted %d times, want twice, once per distinct call", n)
	}
	if t.Failed() {
		t.Logf("report:\n%s", text.String())
	}
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func countText(sent []telegramtest.Sent, text string) int {
	n := 0
	for _, s := range sent {
		if s.Text == text {
			n++
		}
	}
	return n
}

// xagent is an in-process xAgent host with the echo agent, as xconn host
// --agent echo runs it, counting the chat acks it saw accepted.
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

// expectOneReply makes the person write text in the chat and requires the
// echo agent's reply in the chat exactly once, also after both sides
// acknowledged everything and a grace period passed.
func expectOneReply(t *testing.T, f *telegramtest.Server, x *xagent, text string) {
	t.Helper()
	reply := host.EchoText(&host.UserMessage{Text: text})
	toHost, toConn := x.accepted(protocol.ToHost), x.accepted(protocol.ToConnector)
	f.SendText(testToken, testChat, text)
	waitSent(t, f, testChat, fmt.Sprintf("%q in the chat", reply), func(s []telegramtest.Sent) bool { return countText(s, reply) > 0 })
	eventually(t, "both acks", func() bool {
		return x.accepted(protocol.ToConnector) > toConn && x.accepted(protocol.ToHost) > toHost
	})
	time.Sleep(300 * time.Millisecond) // a duplicate would land here
	if n := countText(f.Sent(testChat), reply); n != 1 {
		t.Fatalf("%q posted %d times, want once", reply, n)
	}
}

// TestHostEcho: an xAgent host with the echo agent, signed in with
// telegram_bot_binding, answers a message written in the chat with
// exactly one reply in that chat, before and after the connector is
// stopped and restarted on the same data directory and address; a wrong
// token fails the sign-in and leaves no channel.
func TestHostEcho(t *testing.T) {
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
	s, err := x.h.Connect(sctx, "alice", c.CardID, FlowBot, login)
	if err != nil {
		t.Fatal(err)
	}
	if uc, err := s.Wait(sctx); err != nil || !uc.Authenticated {
		t.Fatalf("sign-in: %+v, %v", uc, err)
	}
	expectOneReply(t, f, x, "hello")

	if s, err := x.h.Connect(sctx, "mallory", c.CardID, FlowBot, map[string]string{"bot_token": "1:wrong-token-abcdefghijkl", "chat_id": "424242"}); err == nil {
		if _, err = s.Wait(sctx); err == nil || !strings.Contains(err.Error(), "does not accept this bot token") {
			t.Fatalf("a wrong token: %v", err)
		}
	} else if !strings.Contains(err.Error(), "does not accept this bot token") {
		t.Fatalf("a wrong token: %v", err)
	}
	if ucs, err := x.h.Channels(ctx, "mallory", c.CardID); err != nil || len(ucs) != 0 {
		t.Fatalf("a refused sign-in left channels %+v (%v)", ucs, err)
	}

	cn.stop()
	online := func() bool { cc, ok := x.h.Connector(c.CardID); return ok && cc.Link == host.LinkOnline }
	eventually(t, "the host sees the connector go away", func() bool { return !online() })
	// Written while the connector is down: answered once after the restart.
	f.SendText(testToken, testChat, "while you were away")
	cn = startConn(t, data, api, addr, nil)
	eventually(t, "the host reconnects", online)
	away := host.EchoText(&host.UserMessage{Text: "while you were away"})
	waitSent(t, f, testChat, "the reply to the message written while down", func(s []telegramtest.Sent) bool { return countText(s, away) > 0 })
	expectOneReply(t, f, x, "after the restart")
	if n := countText(f.Sent(testChat), away); n != 1 {
		t.Fatalf("%q posted %d times", away, n)
	}
	if got := len(f.Sent(testChat)); got != 3 {
		t.Fatalf("%d bot messages in the chat, want 3 replies", got)
	}
}

// progressless reports a tool.progress-push skip because the tool sends no
// tool.progress.push: progress is optional (section 8.20), so that
// requirement does not apply to this connector's tool.
func progressless(r conformance.Result) bool {
	return r.ID == "tool.progress-push" && strings.Contains(r.Reason, "sent no tool.progress.push")
}
