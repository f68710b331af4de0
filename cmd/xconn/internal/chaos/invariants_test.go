package chaos

import (
	"strings"
	"testing"
)

// run plays a scenario on a checker: a room "r" with messages 1..n sent
// with ids "id<n>" and texts "t<n>".
type step func(c *Checker)

func sent(n int, file bool) step {
	return func(c *Checker) {
		id, text := idOf(n), textOf(n)
		c.Maybe("r", n, text, file)
		c.Sent("r", n, text, id, file)
	}
}
func recv(n int) step               { return func(c *Checker) { c.Received(idOf(n), textOf(n)) } }
func ack(n int, status string) step { return func(c *Checker) { c.Ack(idOf(n), status) } }
func final(n int, id string, file bool) step {
	return func(c *Checker) { c.Final(textOf(n), id, file) }
}
func idOf(n int) string   { return "id" + string(rune('0'+n)) }
func textOf(n int) string { return "t" + string(rune('0'+n)) }

// delivered is a message sent, received, accepted and answered once.
func delivered(n int) []step {
	return []step{sent(n, false), recv(n), ack(n, "accepted"), final(n, "a"+idOf(n), false)}
}

func join(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestCheckerVerdicts(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
		line  string
		ok    bool
		why   string
	}{
		{"all delivered", join(delivered(1), delivered(2)),
			"sent=2 accepted=2 lost=0 duplicated=0 expired=0", true, ""},
		{"redelivery acked duplicate is fine", join(delivered(1), []step{ack(1, "duplicate"), final(1, "aid1", false)}),
			"sent=1 accepted=1 lost=0 duplicated=0", true, ""},
		{"accepted twice", join(delivered(1), []step{ack(1, "accepted")}),
			"duplicated=1", false, "accepted 2 times"},
		{"never accepted", []step{sent(1, false)},
			"sent=1 accepted=0 lost=1", false, "neither accepted nor expired"},
		{"expired", []step{sent(1, false), func(c *Checker) { c.Expired(idOf(1)) }},
			"sent=1 accepted=0 lost=0 duplicated=0 expired=1", true, ""},
		{"expired after acceptance", join(delivered(1), []step{func(c *Checker) { c.Expired(idOf(1)) }}),
			"lost=1", false, "accepted and reported expired"},
		{"reply missing", []step{sent(1, false), recv(1), ack(1, "accepted")},
			"accepted=1 lost=1", false, "no reply"},
		{"two replies", join(delivered(1), []step{final(1, "other", false)}),
			"duplicated=1", false, "shown 2 times"},
		{"file dropped from the reply", []step{sent(1, true), recv(1), ack(1, "accepted"), final(1, "a", false)},
			"lost=1", false, "lost its file"},
		{"file kept", []step{sent(1, true), recv(1), ack(1, "accepted"), final(1, "a", true)},
			"lost=0", true, ""},
		{"out of order", join(delivered(2), delivered(1)),
			"lost=0 duplicated=0", false, "#1 accepted after #2"},
		{"maybe never queued is not sent", []step{func(c *Checker) { c.Maybe("r", 1, "t1", false) }},
			"sent=0", true, ""},
		{"maybe that arrived counts", []step{func(c *Checker) { c.Maybe("r", 1, "t1", false) }, recv(1), ack(1, "accepted"), final(1, "a", false)},
			"sent=1 accepted=1 lost=0", true, ""},
		{"a rejection before the 202 is ignored", []step{func(c *Checker) { c.Maybe("r", 1, textOf(1), false); c.Ack(idOf(1), "rejected") }, sent(1, false), recv(1), ack(1, "accepted"), final(1, "a", false)},
			"sent=1 accepted=1 lost=0", true, ""},
		{"an accept of an unknown id", []step{ack(1, "accepted")},
			"sent=0", false, "unknown message"},
		{"received but never sent", []step{recv(1)},
			"sent=0", false, "nobody sent"},
		{"tool once", []step{func(c *Checker) {
			c.ToolStarted("c1")
			c.ToolEffect("c1", "p1")
			c.ToolDone("c1", "p1")
			c.ToolDone("c1", "p1")
		}},
			"lost=0 duplicated=0", true, ""},
		{"tool twice", []step{func(c *Checker) {
			c.ToolStarted("c1")
			c.ToolEffect("c1", "p1")
			c.ToolEffect("c1", "p2")
			c.ToolDone("c1", "p2")
		}},
			"duplicated=1", false, "executed 2 times"},
		{"tool never ran", []step{func(c *Checker) { c.ToolStarted("c1") }},
			"lost=2", false, "never executed"},
		{"leak", []step{func(c *Checker) { c.Leak("canary api_key in host log") }},
			"leaks=1", false, "canary api_key"},
		{"faults are counted", []step{func(c *Checker) { c.Fault(Drop); c.Fault(Drop); c.Fault(KillHost) }},
			"faults=3 leaks=0", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewChecker()
			for _, s := range tt.steps {
				s(c)
			}
			r := c.Result()
			if !strings.Contains(r.Line(), tt.line) {
				t.Errorf("line %q, want it to contain %q", r.Line(), tt.line)
			}
			if r.OK != tt.ok {
				t.Errorf("ok = %v, want %v (details %v)", r.OK, tt.ok, r.Details)
			}
			if tt.why != "" && !strings.Contains(strings.Join(r.Details, "\n"), tt.why) {
				t.Errorf("details %v, want %q", r.Details, tt.why)
			}
			if !strings.HasPrefix(r.Line(), "invariants: sent=") {
				t.Errorf("line %q", r.Line())
			}
			if again := c.Result(); again.Line() != r.Line() || again.OK != r.OK || len(again.Details) != len(r.Details) {
				t.Errorf("Result is not repeatable: %v then %v", r, again)
			}
		})
	}
}

func TestCheckerPending(t *testing.T) {
	c := NewChecker()
	sent(1, false)(c)
	sent(2, false)(c)
	c.ToolStarted("c1")
	if m, r, tl := c.Pending(); m != 2 || r != 0 || tl != 1 {
		t.Fatalf("pending %d %d %d", m, r, tl)
	}
	recv(1)(c)
	ack(1, "accepted")(c)
	c.Expired(idOf(2))
	if m, r, _ := c.Pending(); m != 0 || r != 1 {
		t.Fatalf("pending %d %d", m, r)
	}
	final(1, "a", false)(c)
	c.ToolEffect("c1", "p")
	c.ToolDone("c1", "p")
	if m, r, tl := c.Pending(); m+r+tl != 0 {
		t.Fatalf("pending %d %d %d", m, r, tl)
	}
	if r := c.Result(); !r.OK || r.JSON() == "" || !strings.Contains(r.JSON(), `"expired":1`) {
		t.Fatalf("result %+v", r)
	}
}
