package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// envChaosChild makes the test binary act as xconn: "xconn chaos" re-execs
// os.Executable(), which under "go test" is this binary.
const envChaosChild = "XCONN_CHAOS_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(envChaosChild) == "1" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

var invariantsLine = regexp.MustCompile(`^invariants: sent=(\d+) accepted=(\d+) lost=(\d+) duplicated=(\d+) expired=(\d+) faults=(\d+) leaks=(\d+)$`)

// runChaosTest runs "xconn chaos" with args and checks that it ended with
// every invariant holding.
func runChaosTest(t *testing.T, args ...string) {
	t.Helper()
	t.Setenv(envChaosChild, "1")
	var stdout, stderr syncBuffer
	// Stop well before the test binary's deadline, so a run that cannot
	// finish fails with its output rather than a goroutine dump.
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-30*time.Second))
		defer cancel()
	}
	code := run(ctx, append([]string{"chaos"}, args...), strings.NewReader(""), &stdout, &stderr)
	out := stdout.String()
	t.Logf("output:\n%s%s", out, stderr.String())
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	m := invariantsLine.FindStringSubmatch(last)
	if m == nil {
		t.Fatalf("last line %q", last)
	}
	if m[1] == "0" || m[1] != m[2] && m[5] == "0" || m[3] != "0" || m[4] != "0" || m[6] == "0" || m[7] != "0" {
		t.Fatalf("invariants: %s", last)
	}
	if !strings.Contains(out, "replay with --seed") {
		t.Fatal("no seed printed")
	}
}

// TestChaosShort is the short run of the normal suite: 30 s of faults on
// SQLite, then the drain; and the same on PostgreSQL with two connectors
// and failover when XCONN_TEST_POSTGRES is set.
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the chaos run takes about a minute")
	}
	args := []string{"--duration", "30s", "--min-gap", "1500ms", "--max-gap", "5s", "--seed", "20"}
	t.Run("sqlite", func(t *testing.T) { runChaosTest(t, args...) })
	t.Run("postgres-failover", func(t *testing.T) {
		dsn := os.Getenv("XCONN_TEST_POSTGRES")
		if dsn == "" {
			t.Skip("XCONN_TEST_POSTGRES is unset: no failover run")
		}
		runChaosTest(t, append(args, "--store", dsn)...)
	})
}

// TestChaosCI is the CI-sized run, only when XCONN_CHAOS_CI is set: two
// minutes on SQLite, and two minutes on PostgreSQL with failover when
// XCONN_TEST_POSTGRES is set too.
func TestChaosCI(t *testing.T) {
	if os.Getenv("XCONN_CHAOS_CI") == "" {
		t.Skip("set XCONN_CHAOS_CI=1 for the CI-sized chaos runs")
	}
	d := os.Getenv("XCONN_CHAOS_CI_DURATION")
	if d == "" {
		d = "2m"
	}
	t.Run("sqlite", func(t *testing.T) { runChaosTest(t, "--duration", d) })
	t.Run("postgres", func(t *testing.T) {
		dsn := os.Getenv("XCONN_TEST_POSTGRES")
		if dsn == "" {
			t.Skip("XCONN_TEST_POSTGRES is unset")
		}
		runChaosTest(t, "--duration", d, "--store", dsn)
	})
}

func TestChaosJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	t.Setenv(envChaosChild, "1")
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	code := run(ctx, []string{"chaos", "--duration", "5s", "--min-gap", "1s", "--max-gap", "2s", "--json", "--rooms", "1"}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	var res struct {
		Seed                                                     uint64
		Sent, Accepted, Lost, Duplicated, Expired, Faults, Leaks int
		OK                                                       bool
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(stdout.String())))
	if err := dec.Decode(&res); err != nil || dec.More() {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout.String())
	}
	if !res.OK || res.Seed == 0 || res.Sent == 0 || res.Faults == 0 {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(stderr.String(), "replay with --seed") {
		t.Fatalf("progress not on stderr:\n%s", stderr.String())
	}
}

func TestChaosUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--rooms", "0"},
		{"--duration", "0s"},
		{"--store", "mysql://x"},
		{"--min-gap", "5s", "--max-gap", "1s"},
		{"extra"},
		{"--faults", "kill-host,meteor"},
	} {
		var stdout, stderr syncBuffer
		if code := run(context.Background(), append([]string{"chaos"}, args...), strings.NewReader(""), &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, stderr.String())
		}
	}
}
