package e2e

import (
	"strings"
	"testing"
)

// runHost is the host scenario of Run: the echo agent behind a real host
// answers exactly once, before and after a restart of the connector.
func runHost(t *testing.T, tg Target) {
	r := newRig(t, tg)
	f := r.fake
	if !f.isChat() {
		t.Skip("not a chat target: the Fake has no Say and Said")
	}
	h := StartHost(t, HostOptions{Secrets: r.secrets})
	r.host = h
	cardID := h.AdmitConnector(r.conn.URL, tg.APIKey)
	if _, err := h.SignIn(t.Context(), "alice", cardID, r.signIn); err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	expectOneReply(t, f, h, "hello")
	want := []string{reply("hello")}

	if bad := tg.BadSignIn; bad != nil {
		before := f.Posted(t)
		_, err := h.SignIn(t.Context(), "mallory", cardID, SignIn{Flow: tg.SignIn.Flow, Input: bad.Input})
		if err == nil || !strings.Contains(err.Error(), bad.Message) {
			t.Fatalf("a refused sign-in: %v, want the connector's refusal %q", err, bad.Message)
		}
		r.secrets.Check(t, "the refusal", err.Error())
		if ucs, err := h.Channels(t.Context(), "mallory", cardID); err != nil || len(ucs) != 0 {
			t.Fatalf("a refused sign-in left channels %+v (%v)", ucs, err)
		}
		if got := f.Posted(t); len(got) != len(before) {
			t.Fatalf("after a refused sign-in the target shows %q, before %q", got, before)
		}
	}

	// A graceful restart on the same data directory and address.
	r.conn.Stop()
	Eventually(t, "the host sees the connector go", func() bool { return !h.Online(cardID) })
	if f.Connected != nil {
		Eventually(t, "the connector's connection to the target closes", func() bool { return !f.Connected() })
	}
	if f.Volatile {
		want = nil // the target went with the connector
	}
	if f.SayWhileDown {
		f.say(t, "while you were away")
		want = append(want, reply("while you were away"))
	}
	r.conn.Restart()
	Eventually(t, "the host reconnects", func() bool { return h.Online(cardID) })
	if f.SayWhileDown {
		Eventually(t, "the reply to the message written while the connector was down", func() bool {
			return Count(f.Posted(t), reply("while you were away")) > 0
		})
	}
	expectOneReply(t, f, h, "after the restart")
	// The channel's messages are delivered in order both ways: once this
	// last one is answered, a duplicate of an earlier answer would show.
	expectOneReply(t, f, h, "that is all")
	want = append(want, reply("after the restart"), reply("that is all"))
	expectExactly(t, f, want, nil)
	if !f.Volatile {
		// Once the host and the connector stopped, nothing came late.
		r.atEnd = func() { expectExactly(t, f, want, nil) }
	}
}
