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

// TestBenchBrokerURLFromEnv: XCONN_BENCH_RABBITMQ_URL names the broker
// (here one that does not answer, so the rows are skipped and say where
// they looked, without the password), and --help never prints the
// environment's value.
func TestBenchBrokerURLFromEnv(t *testing.T) {
	t.Setenv("XCONN_BENCH_RABBITMQ_URL", "amqp://u:s3cret@127.0.0.1:1/")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"bench", "--help"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("--help: exit code %d; stderr: %s", code, stderr.String())
	}
	if strings.Contains(stdout.String()+stderr.String(), "s3cret") {
		t.Errorf("--help prints the environment's broker password:\n%s", stdout.String())
	}
	stdout.Reset()
	stderr.Reset()
	code := run(context.Background(), []string{"bench", "--quiet", "--scenario", "rabbitmq", "--chat-channels", "1", "--duration", "50ms", "--warmup", "10ms"},
		strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code %d; stderr: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "skipped: RabbitMQ at amqp://u:xxxxx@127.0.0.1:1/") || strings.Contains(stdout.String(), "s3cret") {
		t.Errorf("stdout = %s, want the row skipped naming the URL from the environment without its password", stdout.String())
	}
}

func TestRedactArgs(t *testing.T) {
	got := strings.Join(redactArgs([]string{"bench", "--store", "postgres://u:pw@h/db", "--rabbitmq-url=amqp://g:pw2@h/", "--nats-url", "nats://h:4222"}), " ")
	want := "bench --store postgres://u:xxxxx@h/db --rabbitmq-url=amqp://g:xxxxx@h/ --nats-url nats://h:4222"
	if got != want {
		t.Errorf("redactArgs = %q, want %q", got, want)
	}
}
