//go:build !unix

package e2e

import "testing"

func runCrash(t *testing.T, tg Target, test string) {
	t.Skip("e2e: the crash scenario needs SIGKILL and inherited listeners (unix)")
}

func serveChild(t *testing.T, tg Target, cfg childConfig) {
	t.Fatal("e2e: no child processes on this system")
}
