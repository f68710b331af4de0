package e2e_test

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/xconn/xconn/connector/connectortest/e2e"
)

// brokenEnv makes TestBrokenConnectors run: TestKitCatches sets it for the
// test binary it runs again, whose failures it expects.
const brokenEnv = "E2E_KIT_BROKEN"

// TestKitCatches: Run fails a connector that posts a final twice, one that
// logs its bot token and one that leaves the partial message of an answer
// cut by a crash; each scenario says why. The broken connectors run in a
// child process (the test binary again), whose failure is the expected
// outcome.
func TestKitCatches(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, scenario, want string
	}{
		{"posts twice", "host", `"You said: hello" posted 2 times, want once`},
		{"logs its token", "wire", "a secret is in the connector's logs"},
		{"forgets a stream", "crash", `which is none of the replies`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.scenario == "crash" && runtime.GOOS == "windows" {
				t.Skip("the crash scenario needs a Unix system")
			}
			sub := strings.ReplaceAll(tc.name, " ", "_")
			cmd := exec.Command(exe, "-test.run=^TestBrokenConnectors$/^"+sub+"$/^"+tc.scenario+"$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), brokenEnv+"=1")
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Fatalf("the kit did not fail the connector saying %q (exit %v):\n%s", tc.want, err, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestBrokenConnectors/"+sub+"/"+tc.scenario) {
				t.Fatalf("the failure is not the %s scenario's:\n%s", tc.scenario, out)
			}
		})
	}
}

// TestBrokenConnectors runs the kit on broken connectors, for
// TestKitCatches only: each of its subtests must fail.
func TestBrokenConnectors(t *testing.T) {
	if os.Getenv(brokenEnv) == "" {
		t.Skip("run by TestKitCatches, which expects it to fail")
	}
	t.Run("posts_twice", func(t *testing.T) { e2e.Run(t, kitTarget(postsTwice)) })
	t.Run("logs_its_token", func(t *testing.T) { e2e.Run(t, kitTarget(logsToken)) })
	t.Run("forgets_a_stream", func(t *testing.T) { e2e.Run(t, kitTarget(forgetsStream)) })
}
