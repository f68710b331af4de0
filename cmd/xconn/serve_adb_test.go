package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xconn/xconn/connectors/adb/adbtest"
)

// TestServeADB runs "xconn serve adb --adb-addr" against a fake ADB
// server, then, as the issue's done-when says, "xconn check BASE --api-key
// K --auth-flow adb_device_binding --auth-input serial=S" passes (exit 0,
// no failure), and "xconn host BASE ... --invoke android_screenshot --args
// '{}'" prints a file_ref whose downloaded file is a PNG. Then Ctrl-C
// stops it; bad flags exit with their codes.
func TestServeADB(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const key = "serve-adb-test-key-0123456789"
	fake := adbtest.New()
	fake.AddDevice(adbtest.Device{Serial: "emulator-5554", Model: "Pixel 7"})
	adbAddr := fake.Start()
	defer fake.Close()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "adb", "--data", t.TempDir(), "--listen", addr, "--adb-addr", adbAddr, "--api-key", key},
			strings.NewReader(""), out, errOut)
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case code := <-done:
			if code != 0 || !strings.HasSuffix(out.String(), "Stopping…\n") {
				t.Errorf("exit %d, output %q, stderr %s", code, out.String(), errOut.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	}
	defer stop()
	waitFor(t, out, regexp.MustCompile(`ADB: `), 60*time.Second)
	if want := "Android connector\n  Base URL:  http://" + addr + "\n  ADB:       " + adbAddr + "\n"; out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
	base := "http://" + addr

	code, report, stderr := xconn(t, "", "check", base, "--api-key", key, "--auth-flow", "adb_device_binding", "--auth-input", "serial=emulator-5554")
	if code != 0 || !regexp.MustCompile(`(?m)^PASS MUST\s+auth\.authenticated`).MatchString(report) ||
		!regexp.MustCompile(`(?m)^PASS MUST\s+device\.descriptor`).MatchString(report) || regexp.MustCompile(`(?m)^FAIL `).MatchString(report) {
		t.Fatalf("check: exit %d\n%s\n%s", code, report, stderr)
	}

	code, stdout, stderr := xconn(t, "", "host", base, "--api-key", key, "--data", t.TempDir(), "--auth-flow", "adb_device_binding",
		"--auth-input", "serial=emulator-5554", "--invoke", "android_screenshot", "--args", "{}")
	var res struct {
		Result json.RawMessage `json:"result"`
		Files  []struct {
			FileRef  string `json:"file_ref"`
			Path     string `json:"path"`
			MimeType string `json:"mime_type"`
		} `json:"files"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil || len(res.Files) != 1 {
		t.Fatalf("host --invoke: exit %d\n%s\n%s", code, stdout, stderr)
	}
	f := res.Files[0]
	b, err := os.ReadFile(f.Path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.DecodeConfig(bytes.NewReader(b)); err != nil || f.FileRef == "" || f.MimeType != "image/png" {
		t.Fatalf("downloaded %q (%s): %d bytes, %v", f.Path, f.MimeType, len(b), err)
	}
	if !strings.Contains(string(res.Result), `"file_ref"`) || strings.Contains(string(res.Result), "iVBOR") {
		t.Fatalf("result %s", res.Result)
	}
	stop()

	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--adb-bogus", "x"}, 2, "unknown flag: --adb-bogus"},
		{[]string{"--adb-addr", "no-port"}, 1, "Options.ADBAddr"},
	} {
		var stderr syncBuffer
		code := run(context.Background(), append([]string{"serve", "adb", "--data", t.TempDir(), "--listen", "127.0.0.1:0"}, tc.args...),
			strings.NewReader(""), &syncBuffer{}, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.msg)
		}
	}
}
