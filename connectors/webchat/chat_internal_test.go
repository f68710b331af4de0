package webchat

import (
	"strings"
	"testing"
)

// A webchat_message_send executed again for one call id (its result lost
// to a crash) shows the same page message, kept once (xconn chaos saw a
// call "executed 2 times" after a SIGKILL).
func TestToolMessageIDStable(t *testing.T) {
	a := toolMessageID("cch_1", "call-1")
	if a != toolMessageID("cch_1", "call-1") || !strings.HasPrefix(a, "wcm_") || len(a) != len("wcm_")+26 {
		t.Fatalf("id %q is not stable or not wcm_ + 26 characters", a)
	}
	for _, other := range []string{toolMessageID("cch_1", "call-2"), toolMessageID("cch_2", "call-1"), toolMessageID("cch_1", "")} {
		if other == a {
			t.Fatalf("two calls share the page message id %q", a)
		}
	}
	if toolMessageID("c", "") == toolMessageID("c", "") {
		t.Fatal("calls without an id share a page message id")
	}
}
