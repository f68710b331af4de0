package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xconn/xconn/connectors/adb/adbtest"
	"github.com/xconn/xconn/internal/health"
	"github.com/xconn/xconn/store/storetest"
)

// background runs xconn with args in-process until stop, which cancels it
// and returns the exit code.
func background(t *testing.T, args ...string) (out, errOut *syncBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut = &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, strings.NewReader(""), out, errOut) }()
	code, stopped := 0, false
	stop = func() int {
		if stopped {
			return code
		}
		stopped = true
		cancel()
		select {
		case code = <-done:
		case <-time.After(60 * time.Second):
			t.Errorf("xconn %s did not stop", strings.Join(args[:2], " "))
			code = -1
		}
		return code
	}
	t.Cleanup(func() { stop() })
	return out, errOut, stop
}

// getHealth GETs url (as JSON when asJSON) and returns the status and body.
func getHealth(t *testing.T, url string, asJSON bool) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if asJSON {
		req.Header.Set("Accept", "application/json")
	}
	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitHealth polls url until it answers status with a body matching re.
func waitHealth(t *testing.T, url string, status int, re *regexp.Regexp, d time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(d)
	var code int
	var body string
	for time.Now().Before(deadline) {
		if code, body = getHealth(t, url, false); code == status && re.MatchString(body) {
			return body
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: %d %q after %v, want %d matching %q", url, code, body, d, status, re)
	return ""
}

// notifySocket listens as a service manager does on a unixgram socket
// named in NOTIFY_SOCKET for the rest of the test.
func notifySocket(t *testing.T) *net.UnixConn {
	t.Helper()
	dir, err := os.MkdirTemp("", "sdn") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify.sock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	t.Setenv("WATCHDOG_USEC", "")
	return c
}

// nextNotify returns the next datagram on c containing want.
func nextNotify(t *testing.T, c *net.UnixConn, want string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	buf := make([]byte, 4096)
	for {
		_ = c.SetReadDeadline(deadline)
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("no %q from the service notifications: %v", want, err)
		}
		if msg := string(buf[:n]); strings.Contains(msg, want) {
			return msg
		}
	}
}

// TestServeHealth runs serve webchat, serve adb (a connector on the shared
// serve flags) and host with --health: /livez is 200 "ok", /readyz is 200
// "ready" with its checks in text and JSON once serving, the service
// manager gets READY=1 then STOPPING=1, and /readyz fails once stopping
// begins.
func TestServeHealth(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const key = "serve-health-test-key-0123456789"
	fake := adbtest.New()
	fake.AddDevice(adbtest.Device{Serial: "emulator-5554", Model: "Pixel 7"})
	adbAddr := fake.Start()
	defer fake.Close()

	for _, tc := range []struct {
		name   string
		args   []string
		banner *regexp.Regexp
		checks []string
	}{
		{"webchat", []string{"serve", "webchat"}, regexp.MustCompile(`Chat page: `), []string{checkStore}},
		{"adb", []string{"serve", "adb", "--adb-addr", adbAddr}, regexp.MustCompile(`ADB: `), []string{checkStore}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock := notifySocket(t)
			addr, haddr := freeAddr(t), freeAddr(t)
			out, errOut, stop := background(t, append(tc.args, "--data", t.TempDir(), "--listen", addr, "--api-key", key, "--health", haddr)...)
			waitFor(t, out, tc.banner, 60*time.Second)
			if msg := nextNotify(t, sock, "READY=1"); !strings.Contains(msg, "STATUS=serving on "+addr) {
				t.Errorf("READY datagram %q", msg)
			}
			if code, body := getHealth(t, "http://"+haddr+"/livez", false); code != 200 || body != "ok\n" {
				t.Errorf("/livez: %d %q", code, body)
			}
			body := waitHealth(t, "http://"+haddr+"/readyz", 200, regexp.MustCompile(`^ready\n`), 10*time.Second)
			for _, c := range tc.checks {
				if !strings.Contains(body, "[+] "+c+"\n") {
					t.Errorf("/readyz %q: no passing %s", body, c)
				}
			}
			code, js := getHealth(t, "http://"+haddr+"/readyz", true)
			var rep health.Report
			if err := json.Unmarshal([]byte(js), &rep); err != nil || code != 200 || !rep.Ready || len(rep.Checks) != len(tc.checks) {
				t.Errorf("/readyz JSON: %d %q (%v)", code, js, err)
			}
			// base serves too: the same process is the one /readyz vouches for.
			if code, _ := getHealth(t, "http://"+addr+"/connector-card.json", false); code != 200 {
				t.Errorf("connector card: %d", code)
			}
			if code := stop(); code != 0 {
				t.Fatalf("exit %d\n%s", code, errOut.String())
			}
			nextNotify(t, sock, "STOPPING=1")
			if code, _ := getHealth(t, "http://"+haddr+"/readyz", false); code != 0 {
				t.Errorf("--health still answers after the exit: %d", code)
			}
		})
	}

	t.Run("host", func(t *testing.T) {
		addr, haddr := freeAddr(t), freeAddr(t)
		out, errOut, stop := background(t, "serve", "adb", "--data", t.TempDir(), "--listen", addr, "--adb-addr", adbAddr, "--api-key", key)
		waitFor(t, out, regexp.MustCompile(`ADB: `), 60*time.Second)
		sock := notifySocket(t)
		hout, herr, hstop := background(t, "host", "http://"+addr, "--api-key", key, "--data", t.TempDir(), "--health", haddr,
			"--auth-flow", "adb_device_binding", "--auth-input", "serial=emulator-5554", "--agent", "echo", "--log", "pretty")
		waitFor(t, hout, regexp.MustCompile(`serving channel`), 60*time.Second)
		if msg := nextNotify(t, sock, "READY=1"); !strings.Contains(msg, "STATUS=serving connector ") {
			t.Errorf("READY datagram %q", msg)
		}
		body := waitHealth(t, "http://"+haddr+"/readyz", 200, regexp.MustCompile(`^ready\n`), 10*time.Second)
		if !strings.Contains(body, "[+] store\n[+] host\n") {
			t.Errorf("/readyz %q", body)
		}
		// The connector goes away: the host is not ready, and says why.
		if code := stop(); code != 0 {
			t.Fatalf("serve adb: exit %d\n%s", code, errOut.String())
		}
		waitHealth(t, "http://"+haddr+"/readyz", 503, regexp.MustCompile(`(?m)^\[-\] host: connector \S+: data plane (backoff|connecting)`), 30*time.Second)
		if code := hstop(); code != 0 {
			t.Fatalf("host: exit %d\n%s", code, herr.String())
		}
		nextNotify(t, sock, "STOPPING=1")
	})
}

// TestServeHealthStandby runs two "serve webchat --lease-ttl" on one store
// and --data: the second is a standby whose /readyz is 503 "standby: lease
// held by <the first's holder>" (and xconn probe exits 1 saying so) while
// the first is ready; when the first stops, the standby takes over and
// becomes ready. It runs on PostgreSQL when XCONN_TEST_POSTGRES is set
// and on a shared SQLite file otherwise.
func TestServeHealthStandby(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	dsn := "sqlite:" + filepath.Join(dir, "shared.db")
	if os.Getenv("XCONN_TEST_POSTGRES") != "" {
		dsn = storetest.PostgresDSN(t, "ops_")
	}
	start := func() (*syncBuffer, string, func() int) {
		haddr := freeAddr(t)
		out, _, stop := background(t, "serve", "webchat", "--data", dir, "--store", dsn, "--lease-ttl", "2s",
			"--listen", freeAddr(t), "--health", haddr)
		return out, "http://" + haddr + "/readyz", stop
	}
	aOut, aReady, aStop := start()
	waitFor(t, aOut, regexp.MustCompile(`Chat page: `), 60*time.Second)
	waitHealth(t, aReady, 200, regexp.MustCompile(`^ready\n\[\+\] store\n\[\+\] lease\n`), 10*time.Second)

	bOut, bReady, bStop := start()
	waitFor(t, bOut, regexp.MustCompile(`Standby: `), 60*time.Second)
	body := waitHealth(t, bReady, 503, regexp.MustCompile(`^standby: lease held by \S+/\d+/\S+\n`), 10*time.Second)
	if !strings.Contains(body, "[+] store\n[-] lease: standby: lease held by ") {
		t.Errorf("standby /readyz %q", body)
	}
	code, stdout, stderr := xconn(t, "", "probe", bReady)
	if code != 1 || !strings.Contains(stderr, "not ready: standby: lease held by ") {
		t.Errorf("probe of the standby: exit %d\n%s%s", code, stdout, stderr)
	}

	if code := aStop(); code != 0 {
		t.Fatalf("active: exit %d", code)
	}
	waitFor(t, bOut, regexp.MustCompile(`Chat page: `), 30*time.Second)
	waitHealth(t, bReady, 200, regexp.MustCompile(`^ready\n`), 10*time.Second)
	if code, stdout, stderr := xconn(t, "", "probe", bReady); code != 0 || stdout != "ready\n" {
		t.Errorf("probe of the new active: exit %d\n%s%s", code, stdout, stderr)
	}
	if code := bStop(); code != 0 {
		t.Fatalf("standby turned active: exit %d", code)
	}
}
