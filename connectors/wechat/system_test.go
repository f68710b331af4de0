package wechat_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/wechat"
	"github.com/xconn/xconn/connectors/wechat/wechattest"
)

// TestE2E is the kit's end-to-end against the fake iLink server, signed in
// by opening the fake's QR URL: the conformance suite with a peer writing on
// its request and wechat_message_send as its tool; an in-process host with
// the echo agent answering the peer exactly once, before and after a
// restart (with a message written while the connector was down); a SIGKILL
// in the middle of an answer; the assistant side over the wire. Every
// message the bot sends goes to the peer with a context_token of the
// peer's, no context token reaches a log line or packet, and the fake sees
// only requests the fact sheet allows.
func TestE2E(t *testing.T) {
	e2e.Run(t, e2e.Target{
		Fake: func(tb testing.TB, _ string) *e2e.Fake {
			p := &peer{f: startFake(tb, wechattest.Options{}), id: "u_bob"}
			return &e2e.Fake{Addr: fakeAddr(p.f), Say: p.say, Said: p.said, Secrets: p.tokens, SayWhileDown: true}
		},
		SignIn:   e2e.SignIn{Flow: wechat.FlowQR, Confirm: e2e.OpenURL},
		New:      build(nil),
		Tool:     wechat.ToolSend,
		ToolArgs: []byte(`{"text":"from the conformance suite"}`),
	})
}

// peer is a WeChat user writing to the bot.
type peer struct {
	f        *wechattest.Server
	id       string
	mu       sync.Mutex
	contexts []string // the context_tokens of the peer's messages
}

func (p *peer) say(_ context.Context, text string) error {
	wm, err := p.f.Inject(wechattest.Inbound{From: p.id, Text: text})
	if err == nil {
		p.mu.Lock()
		p.contexts = append(p.contexts, wm.ContextToken)
		p.mu.Unlock()
	}
	return err
}

// said returns the texts the bot sent, and an error when one did not go
// to the peer with a context token of the peer's messages, or when the
// fake saw a request that breaks the fact sheet.
func (p *peer) said(context.Context) ([]string, error) {
	if v := p.f.Violations(); len(v) > 0 {
		return nil, fmt.Errorf("the fake saw requests that break the fact sheet:\n%s", strings.Join(v, "\n"))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, s := range p.f.Sent("") {
		if s.To != p.id || !slices.Contains(p.contexts, s.ContextToken) {
			return nil, fmt.Errorf("%q went to %q with context token %q, want %q with one of its messages' tokens", s.Text, s.To, s.ContextToken, p.id)
		}
		out = append(out, s.Text)
	}
	return out, nil
}

// tokens are the context tokens handed to the connector: secrets.
func (p *peer) tokens() e2e.Secrets {
	p.mu.Lock()
	defer p.mu.Unlock()
	return e2e.Secrets(nil).With(p.contexts...)
}
