package connector

import (
	"strings"
	"testing"
)

func FuzzParseLockOwner(f *testing.F) {
	f.Add("1234 127.0.0.1:8080\n")
	f.Add("")
	f.Add("x y z")
	f.Add("-5")
	f.Fuzz(func(t *testing.T, s string) {
		pid, addr := parseLockOwner(s)
		if pid < 0 || len(addr) > 256 || (pid == 0 && addr != "") || strings.ContainsAny(addr, " \n\t") {
			t.Fatalf("parseLockOwner(%q) = %d, %q", s, pid, addr)
		}
	})
}
