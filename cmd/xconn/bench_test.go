package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchTraceNeedsInvoke: --trace without the invoke scenario would
// leave an empty file behind; it is a usage error (exit code 2), and no
// file is created.
func TestBenchTraceNeedsInvoke(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.trace")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--quiet", "--scenario", "ping", "--trace", path}, strings.NewReader(""), &stdout, &stderr)
	if code != 2 {
		t.Fatalf("exit code %d, want 2; stderr: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "--trace traces the invoke scenario") {
		t.Errorf("stderr = %q", stderr.String())
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("trace file exists after a usage error: %v", err)
	}
}
