package wechat_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/connectors/wechat"
	"github.com/xconn/xconn/connectors/wechat/wechattest"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// TestConformance: signed in by opening the fake's QR URL, with an
// Inbound hook that makes a fake peer write and wechat_message_send as
// the tool, the connector passes every applicable MUST.
func TestConformance(t *testing.T) {
	r := newRig(t, wechattest.Options{}, nil)
	var inbound atomic.Int32
	var progress bytes.Buffer
	opts := conformance.Options{APIKey: apiKey, AuthFlow: wechat.FlowQR, AuthOpenURL: true, QRWait: 10 * time.Second,
		Inbound: func(ctx context.Context, channelID string) error {
			_, err := r.fake.Inject(wechattest.Inbound{From: "u_conf", Text: fmt.Sprintf("inbound %d", inbound.Add(1))})
			return err
		},
		Tool: wechat.ToolSend, ToolArgs: []byte(`{"text":"from the conformance suite"}`),
		Timeout: 5 * time.Second, Out: &progress}
	rep, err := conformance.Check(t.Context(), r.base, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep.Summary())
	var text bytes.Buffer
	_ = rep.WriteText(&text)
	if passed, failed, _ := rep.Counts(); !rep.OK() || failed != 0 || passed == 0 {
		t.Fatalf("failed %v:\n%s", rep.Failed(), text.String())
	}
	for _, id := range []string{"auth.authenticated", "tool.invoke", "imv2.inbound-delivered", "imv2.inbound-message-id",
		"imv2.redelivery", "imv2.inbound-acked-not-resent", "imv2.ack-accepted"} {
		if res, ok := rep.Result(id); !ok || res.Status != conformance.Pass {
			t.Errorf("%s: %s %s (want pass)", id, res.Status, res.Reason)
		}
	}
	notDeclared := []conformance.Capability{conformance.CapHasPathPrefix, conformance.CapHasFormFlow,
		conformance.CapDeclaresIMv1, conformance.CapDeclaresDevice, conformance.CapPublishesFiles, conformance.CapPublishesMessagePush}
	for _, res := range rep.Results {
		if req, _ := conformance.Lookup(res.ID); res.Status == conformance.Skip && !containsCap(notDeclared, req.Capability) && !progressless(res) {
			t.Errorf("%s (%s, %s) skipped: %s", res.ID, res.Level, req.Capability, res.Reason)
		}
	}
	if inbound.Load() == 0 {
		t.Error("the suite never called the Inbound hook")
	}
	if t.Failed() {
		t.Logf("report:\n%s\nprogress:\n%s", text.String(), progress.String())
	}
}

func containsCap(list []conformance.Capability, c conformance.Capability) bool {
	for _, x := range list {
		if x == c {
			return true
		}
	}
	return false
}

// TestHostEcho: an in-process xAgent host with the echo agent, signed in
// by opening the fake's QR URL, answers a message injected into the fake
// with exactly one sendmessage to that peer carrying its context_token.
func TestHostEcho(t *testing.T) {
	r := newRig(t, wechattest.Options{}, nil)
	dir := t.TempDir()
	ctx := t.Context()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "host.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mu sync.Mutex
	accepted := 0
	h, err := host.New(host.Options{Store: db, Delivery: db, Agent: host.Echo{}, FilesDir: filepath.Join(dir, "files"),
		ReconnectMin: 50 * time.Millisecond, ReconnectMax: 250 * time.Millisecond,
		OnPacket: func(dir protocol.Direction, _ string, env *protocol.Envelope) {
			var ack protocol.ChatAckPayload
			if dir == protocol.ToConnector && env.Type == protocol.TypeChatMessageAck && env.DecodePayload(&ack) == nil && ack.Status == protocol.AckAccepted {
				mu.Lock()
				accepted++
				mu.Unlock()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := h.Close(cctx); err != nil {
			t.Errorf("host close: %v", err)
		}
	}()
	card, err := h.Admit(ctx, r.base, apiKey)
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	s, err := h.Connect(sctx, "alice", card.CardID, wechat.FlowQR, nil)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "a QR code", func() bool { return r.fake.QRCodes() > 0 })
	if !r.fake.Confirm() {
		t.Fatal("no QR code to confirm")
	}
	if uc, err := s.Wait(sctx); err != nil || !uc.Authenticated {
		t.Fatalf("sign-in: %+v, %v", uc, err)
	}
	wm, err := r.fake.Inject(wechattest.Inbound{From: "u_bob", Text: "hello from WeChat"})
	if err != nil {
		t.Fatal(err)
	}
	reply := host.EchoText(&host.UserMessage{Text: "hello from WeChat"})
	eventually(t, "the echo reply", func() bool { return len(r.fake.Delivered("")) > 0 })
	eventually(t, "the reply's ack", func() bool { mu.Lock(); defer mu.Unlock(); return accepted > 0 })
	time.Sleep(300 * time.Millisecond) // a duplicate would land here
	sent := r.fake.Sent("")
	if len(sent) != 1 || sent[0].To != "u_bob" || sent[0].ContextToken != wm.ContextToken || sent[0].Text != reply {
		t.Fatalf("sent %+v, want one %q to u_bob with its context token", sent, reply)
	}
	if strings.Contains(r.logs.String(), wm.ContextToken) {
		t.Error("the context token reached the log")
	}
	r.noViolations()
}

// progressless reports a tool.progress-push skip because the tool sends no
// tool.progress.push: progress is optional (section 8.20), so that
// requirement does not apply to this connector's tool.
func progressless(r conformance.Result) bool {
	return r.ID == "tool.progress-push" && strings.Contains(r.Reason, "sent no tool.progress.push")
}
