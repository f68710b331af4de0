package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/xconn/xconn/connectors/webchat"
)

// TestHostSignInErrorSaysSignInOnce is issue 33 item 8: a refused sign-in
// of "xconn host" is one line that names the sign-in once (it printed
// "xconn: sign-in: host: sign-in: invalid_auth_input: ...") and keeps the
// connector's reason and code.
func TestHostSignInErrorSaysSignInOnce(t *testing.T) {
	const apiKey = "host-cli-test-api-key-0123456789"
	dir := t.TempDir()
	srv := serveWebchatForTest(t, dir, apiKey)

	code, _, errOut := xconn(t, "", "host", srv.URL, "--api-key", apiKey, "--data", filepath.Join(dir, "host"),
		"--auth-flow", webchat.FlowRoom, "--auth-input", "room=Not A Room!", "--auth-input", "access_code=s3cret-code")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", code, errOut)
	}
	var last string
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if strings.HasPrefix(line, "xconn: ") {
			last = line
		}
	}
	if n := strings.Count(last, "sign-in"); n != 1 || !strings.Contains(last, "invalid_auth_input") || !strings.Contains(last, "room must be") {
		t.Fatalf("error line %q: want it to name the sign-in once, with the code and the reason\n%s", last, errOut)
	}
	if strings.Contains(errOut, "s3cret-code") {
		t.Fatal("the access code reached stderr")
	}
}
