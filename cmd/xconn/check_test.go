package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xconn/xconn/conformance/xagent"
)

// TestCheckHelpDocumentsToolFlags: --tool and --tool-args are in --help,
// next to every flag that was there before.
func TestCheckHelpDocumentsToolFlags(t *testing.T) {
	code, out, _ := xconn(t, "", "check", "--help")
	if code != 0 {
		t.Fatalf("check --help: exit %d", code)
	}
	for _, want := range []string{"--tool ID", "--tool-args JSON", "never invents", "auth.logout",
		"--api-key", "--auth-flow", "--auth-input", "--auth-open-url", "--qr-wait", "--json", "--junit", "--list",
		"--markdown", "--only", "--skip", "--strict", "--timeout"} {
		if !strings.Contains(out, want) {
			t.Errorf("check --help lacks %q:\n%s", want, out)
		}
	}
}

// TestCheckToolArgsUsage: malformed --tool-args, or --tool-args without
// --tool, is a usage error (exit 2) before any network access.
func TestCheckToolArgsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--tool", "x", "--tool-args", "{not json"},
		{"--tool", "x", "--tool-args", `["a"]`},
		{"--tool", "x", "--tool-args", `"text"`},
		{"--tool", "x", "--tool-args", "null"},
		{"--tool", "x", "--tool-args", ""},
		{"--tool-args", `{"text":"hi"}`},
	} {
		// Port 1 on loopback: a run that started would fail card.http (exit 1).
		code, out, errOut := xconn(t, "", append([]string{"check", "http://127.0.0.1:1"}, args...)...)
		if code != 2 || !strings.Contains(errOut, "--tool-args") || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 naming --tool-args", args, code, out, errOut)
		}
	}
}

// TestCheckToolFlag runs "xconn check" against "xconn serve webchat": with
// --tool and --tool-args the selected tool is invoked and passes; without
// --tool, tool.invoke is skipped with the reason; the channel is signed out
// at the end either way.
func TestCheckToolFlag(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	addr := freeAddr(t)
	const key = "check-test-api-key-0123456789"
	ctx, cancel := context.WithCancel(context.Background())
	serveOut, serveErr := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "webchat", "--listen", addr, "--data", t.TempDir(), "--api-key", key},
			strings.NewReader(""), serveOut, serveErr)
	}()
	defer func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exit %d:\n%s", code, serveErr.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	}()
	base := waitFor(t, serveOut, regexp.MustCompile(`Base URL:\s+(\S+)`), 60*time.Second)

	common := []string{"check", base, "--api-key", key, "--auth-flow", "webchat_room",
		"--auth-input", "room=lobby", "--auth-input", "access_code=s3cret-1234", "--only", "auth.authenticated", "--only", "tool.invoke"}
	code, out, errOut := xconn(t, "", append(common, "--tool", "webchat_message_send", "--tool-args", `{"text":"from xconn check"}`)...)
	if code != 0 || !regexp.MustCompile(`(?m)^PASS MUST\s+tool\.invoke\s`).MatchString(out) {
		t.Fatalf("with --tool: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "signed channel ") {
		t.Errorf("with --tool: no sign-out reported on stderr:\n%s", errOut)
	}

	code, out, errOut = xconn(t, "", common...)
	if code != 0 || !regexp.MustCompile(`(?m)^SKIP MUST\s+tool\.invoke\s.*\n\s+skipped:\s+no tool selected`).MatchString(out) {
		t.Fatalf("without --tool: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "1 passed, 0 failed, 1 skipped") {
		t.Errorf("summary line:\n%s", out)
	}
}

// TestCheckPreflight: nothing listening at BASE_URL stops the run with one
// sentence on stderr and exit 1, without 100 lines of failures.
func TestCheckPreflight(t *testing.T) {
	addr := freeAddr(t) // nothing listens there
	code, out, errOut := xconn(t, "", "check", "http://"+addr)
	if code != 1 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "nothing answers at http://"+addr) {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and one sentence", code, out, errOut)
	}
}

// TestCheckInvokeAliases: --invoke and --args are documented aliases of
// --tool and --tool-args, with the same usage checks.
func TestCheckInvokeAliases(t *testing.T) {
	code, out, _ := xconn(t, "", "check", "--help")
	if code != 0 || !strings.Contains(out, "--invoke TOOL") || !strings.Contains(out, "--args JSON") || !strings.Contains(out, "--tool ID") {
		t.Fatalf("help lacks --invoke/--args next to --tool:\n%s", out)
	}
	for _, args := range [][]string{
		{"--invoke", "x", "--args", "{not json"},
		{"--args", `{"text":"hi"}`},
		{"--invoke", "x", "--tool", "y"},
	} {
		code, _, errOut := xconn(t, "", append([]string{"check", "http://127.0.0.1:1"}, args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, stderr %q; want a usage error", args, code, errOut)
		}
	}
}

// TestCheckXAgentList: "xconn check --xagent --list" lists the xAgent-side
// requirements without touching the network; a BASE_URL with --xagent is a
// usage error.
func TestCheckXAgentList(t *testing.T) {
	code, out, errOut := xconn(t, "", "check", "--xagent", "--list")
	if code != 0 || !strings.Contains(out, "xagent.no-resend-accepted") || strings.Contains(out, "card.http") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := xconn(t, "", "check", "--xagent", "http://127.0.0.1:1"); code != 2 || !strings.Contains(errOut, "--xagent takes no BASE_URL") {
		t.Errorf("--xagent with a BASE_URL: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := xconn(t, "", "check", "--xagent", "--listen", "127.0.0.1:0", "--other-origin", "ftp://cdn.example"); code != 2 || !strings.Contains(errOut, "OtherOrigin") {
		t.Errorf("--other-origin that is not an origin: exit %d, stderr %q", code, errOut)
	}
}

// TestCheckXAgentRun: "xconn check --xagent --listen" against "xconn host"
// with the echo agent passes every MUST and exits 0.
func TestCheckXAgentRun(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	const key = "xagent-cli-key-0123456789"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	junit := filepath.Join(t.TempDir(), "xagent.xml")
	go func() {
		var out, errOut bytes.Buffer
		code := run(ctx, []string{"check", "--xagent", "--listen", addr, "--api-key", key, "--junit", junit}, strings.NewReader(""), &out, &errOut)
		done <- result{code, out.String(), errOut.String()}
	}()
	hctx, hcancel := context.WithCancel(ctx)
	hostDone := make(chan struct{})
	go func() {
		defer close(hostDone)
		dir := t.TempDir()
		for hctx.Err() == nil { // until the scripted server listens
			var out, errOut bytes.Buffer
			// --allow-private-downloads: M4's file is on the loopback
			// alias of the Base URL's host.
			run(hctx, []string{"host", "http://" + addr, "--api-key", key, "--data", dir, "--auth-flow", xagent.FormFlow,
				"--auth-input", "code=1234", "--allow-private-downloads"}, strings.NewReader(""), &out, &errOut)
			select {
			case <-hctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	res := <-done
	hcancel()
	<-hostDone
	if res.code != 0 || !strings.Contains(res.out, "0 failed") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.out, res.errOut)
	}
	if strings.Contains(res.out+res.errOut, key) {
		t.Error("the API key was printed")
	}
	if b, err := os.ReadFile(junit); err != nil || !strings.Contains(string(b), "xagent.no-resend-accepted") || strings.Contains(string(b), key) {
		t.Errorf("JUnit report: %v\n%s", err, b)
	}
}
