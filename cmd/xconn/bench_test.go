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

// TestBenchBadValues: a value no default stands for is a usage error (exit
// code 2) that names the flag, before any scenario runs.
func TestBenchBadValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--chat-channels", "0"}, "--chat-channels: 0 is not a channel count"},
		{[]string{"--chat-channels", "64,-5"}, "--chat-channels: -5 is not a channel count"},
		{[]string{"--duration", "-1s"}, "--duration must not be negative"},
		{[]string{"--file-size", "-3"}, "--file-size must not be negative"},
		{[]string{"--file-runs", "-1"}, "--file-runs must not be negative"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"bench", "--quiet", "--scenario", "inbound"}, tc.args...)
			code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
			if code != 2 {
				t.Fatalf("exit code %d, want 2; stderr: %s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr = %q, want it to say %q", stderr.String(), tc.want)
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout = %q, want nothing: no scenario may run", stdout.String())
			}
		})
	}
}
