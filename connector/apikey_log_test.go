package connector_test

import (
	"strings"
	"testing"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// TestRejectedAPIKeyIsLoggedWithoutTheKey checks that a refused system API
// key is a logged security event, and that the log line never carries the
// key that was presented nor the real one.
func TestRejectedAPIKeyIsLoggedWithoutTheKey(t *testing.T) {
	t.Parallel()
	const apiKey = "real-api-key-7c41d9e2"
	const wrong = "wrong-api-key-0f9a3b"
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{APIKey: apiKey})
	status, _, _ := get(t, f.URL+protocol.PathHealth, wrong)
	if status != 403 {
		t.Fatalf("GET /health with a wrong key: status %d, want 403", status)
	}
	logs := f.Logs.String()
	if !strings.Contains(logs, "system API key rejected") {
		t.Fatalf("a rejected key was not logged; logs:\n%s", logs)
	}
	if strings.Contains(logs, wrong) || strings.Contains(logs, apiKey) {
		t.Fatalf("the log carries an API key:\n%s", logs)
	}
}
