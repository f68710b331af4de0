//go:build unix

package e2e

import (
	"testing"
	"time"
)

// Texts of the crash scenario's messages.
const (
	crashBefore = "before the crash"
	crashHeld   = "an answer that streams while the connector dies"
	crashDown   = "written while the connector is down"
	crashAfter  = "after the crash"
)

// runCrash is the crash scenario of Run: the connector runs in a child
// process of test (the test binary run again), dies by SIGKILL in the
// middle of a streamed answer and starts again on the same data directory
// and address; every message is answered exactly once.
func runCrash(t *testing.T, tg Target, test string) {
	ln, lf := listenerFile(t)
	url := "http://" + ln.Addr().String()
	f := tg.Fake(t, url)
	if f == nil {
		t.Fatal("e2e: Target.Fake returned nil")
	}
	if !f.isChat() {
		t.Skip("not a chat target: the Fake has no Say and Said")
	}
	cfg := childConfig{Test: test, DataDir: t.TempDir(), Fake: f.Addr, URL: url, APIKey: tg.APIKey}
	logs := &Logs{}
	var secrets Secrets
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the connector's processes logged:\n%s", logs.String())
		}
	})
	var want []string
	var h *Host
	var leftover func(string) bool // a partial answer the crash may leave
	if f.PartialAfterCrash {
		leftover = partialOf(reply(crashHeld))
	}
	t.Cleanup(func() {
		if !t.Failed() && !f.Volatile {
			expectExactly(t, f, want, leftover) // nothing came late
		}
		if f.Secrets != nil {
			secrets = secrets.With(f.Secrets()...)
		}
		secrets.Check(t, "the connector's logs", logs.String())
		if h != nil {
			h.CheckSecrets(t, secrets)
		}
	})

	proc := startChild(t, cfg, lf, logs)
	proc.waitServing(t, url, tg.APIKey)
	card, s := cardSecrets(t, url, tg)
	secrets = s
	agent := newHoldAgent(crashHeld)
	h = StartHost(t, HostOptions{Agent: agent, Secrets: secrets})
	t.Cleanup(agent.release) // before the host closes
	cardID := h.AdmitConnector(url, tg.APIKey)
	if _, err := h.SignIn(t.Context(), "alice", cardID, signInOf(card, tg)); err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	expectOneReply(t, f, h, crashBefore)
	want = append(want, reply(crashBefore))

	// The answer to crashHeld starts streaming; the connector dies in it.
	f.say(t, crashHeld)
	select {
	case <-agent.streaming:
	case <-time.After(Wait):
		t.Fatalf("the agent's answer to %q did not start within %v", crashHeld, Wait)
	}
	held := reply(crashHeld)
	if f.Streams {
		Eventually(t, "the partial answer on the target", func() bool { return len(longestPartial(f.Posted(t), held)) > 0 })
		if !growStream(t, f, agent, held) && leftover == nil {
			// Without an edit the kit cannot tell that the connector
			// recorded its stream before the kill: what it posted last may
			// be lost to it, as to any program killed between two writes.
			t.Log("the partial answer was not edited while the agent streamed: a partial answer the kill leaves is tolerated")
			leftover = partialOf(held)
		}
	}
	proc.kill(t)
	Eventually(t, "the host sees the connector die", func() bool { return !h.Online(cardID) })
	if f.Connected != nil {
		Eventually(t, "the dead connector's connection to the target closes", func() bool { return !f.Connected() })
	}
	if f.Volatile {
		want = nil
	}
	want = append(want, held)
	if f.SayWhileDown {
		f.say(t, crashDown)
		want = append(want, reply(crashDown))
	}
	// The host ended the agent's handler with the socket, or kept it: the
	// answer is finished now (its final waits in the host's outbox) or given
	// again to the redelivered message after the restart, with the same
	// message_id.
	agent.release()

	proc = startChild(t, cfg, lf, logs)
	proc.waitServing(t, url, tg.APIKey)
	Eventually(t, "the host reconnects", func() bool { return h.Online(cardID) })
	Eventually(t, "the answers held by the crash on the target", func() bool {
		got := f.Posted(t)
		return Count(got, held) > 0 && (!f.SayWhileDown || Count(got, reply(crashDown)) > 0)
	})
	// The channel's messages are delivered in order, both ways: once this
	// one is answered and acknowledged, nothing earlier is still on its way.
	expectOneReply(t, f, h, crashAfter)
	want = append(want, reply(crashAfter))
	expectExactly(t, f, want, leftover)
	proc.stop(t)
}

// StepWait is how long the crash scenario waits for the partial answer to
// grow after each further delta, before it lets out the next.
const StepWait = 200 * time.Millisecond

// growStream lets the held answer stream on, one delta at a time, until
// the partial answer on the target grows: an edit, made by the handler of
// a later delta, shows that the connector finished with the first one
// (the SDK hands a channel's deltas over one at a time), its durable
// record of the stream included. It reports whether the answer grew.
func growStream(t *testing.T, f *Fake, agent *holdAgent, answer string) bool {
	t.Helper()
	first := longestPartial(f.Posted(t), answer)
	for range agent.steps() {
		select {
		case agent.step <- struct{}{}:
		case <-time.After(Wait):
			t.Fatalf("the agent did not stream on within %v", Wait)
		}
		for deadline := time.Now().Add(StepWait); time.Now().Before(deadline); time.Sleep(PollInterval) {
			if len(longestPartial(f.Posted(t), answer)) > len(first) {
				return true
			}
		}
	}
	return false
}
