package conformance_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/xconn/xconn/conformance"
)

// TestREADMETable keeps the requirement tables of README.md equal to the
// output of xconn check --list --markdown. Run with XCONN_UPDATE_README=1 to
// rewrite them.
func TestREADMETable(t *testing.T) {
	const marker = "## Requirements by section\n\n"
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	head, _, ok := strings.Cut(string(data), marker)
	if !ok {
		t.Fatalf("README.md lacks %q", marker)
	}
	var table bytes.Buffer
	if err := conformance.WriteMarkdown(&table, conformance.Requirements()); err != nil {
		t.Fatal(err)
	}
	want := head + marker + table.String()
	if os.Getenv("XCONN_UPDATE_README") == "1" {
		if err := os.WriteFile("README.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(data) != want {
		t.Error("README.md tables are stale: run XCONN_UPDATE_README=1 go test -run TestREADMETable ./conformance")
	}
}
