package e2e

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
)

// Run is a connector's standard end-to-end test against its fake target,
// as subtests of t:
//
//   - conformance: the conformance suite signed in with tg.SignIn, the
//     fake's Say as its inbound hook and tg.Tool as its tool; every MUST
//     passes and nothing is skipped that the Card declares;
//   - host: a real host (package host) with the echo agent answers a
//     message a person writes exactly once; a refused sign-in leaves no
//     channel; after the connector stops and starts again on its data
//     directory, messages (also one written while it was down, where the
//     target keeps it) are answered exactly once;
//   - crash: the connector runs in a child process (this test binary run
//     again), is killed with SIGKILL while an answer streams to it, and
//     starts again on the same data directory and address: every message
//     is answered exactly once, none is lost, and no partial answer stays
//     on the target (unless Fake.PartialAfterCrash);
//   - wire: the assistant side over a bare data-plane client (activity,
//     deltas, finals, a file uploaded through the transfer plane, their
//     acks, an unknown tool, a refused sign-in).
//
// In every scenario the secrets (the API key, the secret fields of the
// sign-in inputs, tg.Secrets, what Fake.Secrets returns) must not appear
// in the Card, in any log line of the connector or the host, in any packet
// the connector sends (Descriptors, acks, errors, tool results) or in a
// refusal. The host and crash scenarios are skipped for a target whose
// Fake has no Say and Said (a device).
//
// The test that calls Run must call nothing else that matters: in the
// child process of the crash scenario the same test runs again and Run
// serves the connector there instead.
func Run(t *testing.T, tg Target) {
	if cfg, ok := childOf(t.Name()); ok {
		serveChild(t, tg, cfg)
		return
	}
	if tg.New == nil || tg.Fake == nil || tg.SignIn.Flow == "" {
		t.Fatal("e2e: Target needs New, Fake and SignIn.Flow")
	}
	if tg.APIKey == "" {
		tg.APIKey = "e2e-" + rand.Text()
	}
	test := t.Name()
	t.Run("conformance", func(t *testing.T) { runConformance(t, tg) })
	t.Run("host", func(t *testing.T) { runHost(t, tg) })
	t.Run("crash", func(t *testing.T) { runCrash(t, tg, test) })
	t.Run("wire", func(t *testing.T) { runWire(t, tg) })
}

// rig is one scenario's connector (served in this process), fake and
// secrets.
type rig struct {
	tg      Target
	conn    *Conn
	fake    *Fake
	card    *protocol.Card
	secrets Secrets
	signIn  SignIn // tg.SignIn, with Confirm for a QR flow
	// atEnd, when set, runs after the host and the connector stopped and
	// before the fake does.
	atEnd func()
	host  *Host // the scenario's host, if it has one
}

// newRig starts a fake and the connector on it in this process.
func newRig(t *testing.T, tg Target) *rig {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("e2e: listen: %v", err)
	}
	url := "http://" + ln.Addr().String()
	f := tg.Fake(t, url)
	if f == nil {
		ln.Close()
		t.Fatal("e2e: Target.Fake returned nil")
	}
	r := &rig{tg: tg, fake: f}
	t.Cleanup(func() {
		if r.atEnd != nil && !t.Failed() {
			r.atEnd()
		}
		if f.Secrets != nil {
			s := f.Secrets()
			s.Check(t, "the connector's logs", r.conn.Logs.String())
			if r.host != nil {
				r.host.CheckSecrets(t, s)
			}
		}
	})
	r.conn = startOn(t, Config{APIKey: tg.APIKey, Fake: f.Addr, Secrets: tg.Secrets}, tg.New, ln)
	r.card, r.secrets = cardSecrets(t, url, tg)
	r.conn.cfg.Secrets = r.secrets
	r.signIn = signInOf(r.card, tg)
	return r
}

// cardSecrets reads the Card and returns it with every secret of tg: the
// API key, tg.Secrets and the secret fields of the sign-in inputs. A secret
// in the Card itself fails the test.
func cardSecrets(t *testing.T, url string, tg Target) (*protocol.Card, Secrets) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	card, err := connectortest.FetchCard(ctx, url, tg.APIKey)
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	s := tg.Secrets.With(tg.APIKey).With(OfInput(card, tg.SignIn.Flow, tg.SignIn.Input)...)
	if tg.BadSignIn != nil {
		s = s.With(OfInput(card, tg.SignIn.Flow, tg.BadSignIn.Input)...)
	}
	if b, err := json.Marshal(card); err == nil {
		s.Check(t, "the Card", string(b))
	}
	return card, s
}

// signInOf is tg.SignIn with Confirm set to OpenURL for a QR flow that
// gives none.
func signInOf(card *protocol.Card, tg Target) SignIn {
	s := tg.SignIn
	if flow, ok := card.AuthFlow(s.Flow); ok && flow.Type == protocol.AuthFlowQRLogin && s.Confirm == nil {
		s.Confirm = OpenURL
	}
	return s
}

// isChat reports whether f can play a chat's people.
func (f *Fake) isChat() bool { return f.Say != nil && f.Said != nil }

// say makes a person write text; an error fails the test.
func (f *Fake) say(t *testing.T, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	if err := f.Say(ctx, text); err != nil {
		t.Fatalf("e2e: a person writes %q: %v", text, err)
	}
}

// Posted returns what the connector posted (f.Said), failing tb on an
// error.
func (f *Fake) Posted(tb testing.TB) []string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	got, err := f.Said(ctx)
	if err != nil {
		tb.Fatalf("e2e: what the connector posted: %v", err)
	}
	return got
}

// Count returns how often s is in list.
func Count(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}

// reply is the echo agent's answer to text.
func reply(text string) string { return host.EchoText(&host.UserMessage{Text: text}) }

// expectOneReply makes a person write text and waits until the echo
// agent's reply shows on the target and both sides accepted their
// message (the host the user's, the connector the reply); then the reply
// must show exactly once.
func expectOneReply(t *testing.T, f *Fake, h *Host, text string) {
	t.Helper()
	want := reply(text)
	toHost, toConn := h.Acks(protocol.ToHost, protocol.AckAccepted), h.Acks(protocol.ToConnector, protocol.AckAccepted)
	f.say(t, text)
	var got []string
	waitFor(t, func() bool { got = f.Posted(t); return Count(got, want) > 0 },
		func() string { return fmt.Sprintf("%q on the target, which shows %q", want, got) })
	Eventually(t, "the host accepts the message and the connector the reply", func() bool {
		return h.Acks(protocol.ToConnector, protocol.AckAccepted) > toConn && h.Acks(protocol.ToHost, protocol.AckAccepted) > toHost
	})
	if got := f.Posted(t); Count(got, want) != 1 {
		t.Fatalf("%q posted %d times, want once; the target shows %q", want, Count(got, want), got)
	}
}

// expectExactly requires that the target shows each reply in want exactly
// once and nothing else, except for text that partial allows (a partial
// answer a kill left behind), which is logged.
func expectExactly(t *testing.T, f *Fake, want []string, partial func(string) bool) {
	t.Helper()
	got := f.Posted(t)
	for _, w := range want {
		if n := Count(got, w); n != 1 {
			t.Errorf("%q posted %d times, want once; the target shows %q", w, n, got)
		}
	}
	for _, g := range got {
		switch {
		case Count(want, g) > 0:
		case partial != nil && partial(g):
			t.Logf("a partial answer stays on the target: %q", g)
		default:
			t.Errorf("the target shows %q, which is none of the replies %q", g, want)
		}
	}
}

// testLog writes the conformance suite's progress to the test log.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
