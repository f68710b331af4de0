package sdnotify

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// listen opens a real unixgram socket as a service manager does.
func listen(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func recv(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(buf[:n])
}

func TestNotify(t *testing.T) {
	for _, tc := range []struct {
		name   string
		socket func(t *testing.T) string
	}{
		{"path", func(t *testing.T) string { return filepath.Join(t.TempDir(), "notify.sock") }},
		{"abstract", func(t *testing.T) string {
			return "@xconn-sdnotify-test-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock := tc.socket(t)
			srv := listen(t, sock)
			t.Setenv("NOTIFY_SOCKET", sock)
			t.Setenv("WATCHDOG_USEC", "")
			n := FromEnv()
			if !n.Enabled() {
				t.Fatal("not enabled with NOTIFY_SOCKET set")
			}
			for _, step := range []struct {
				send func() error
				want string
			}{
				{func() error { return n.Ready("") }, "READY=1\n"},
				{func() error { return n.Ready("serving on\n127.0.0.1:8080") }, "READY=1\nSTATUS=serving on 127.0.0.1:8080\n"},
				{func() error { return n.Status("standby: lease held by a") }, "STATUS=standby: lease held by a\n"},
				{n.Watchdog, "WATCHDOG=1\n"},
				{n.Stopping, "STOPPING=1\n"},
			} {
				if err := step.send(); err != nil {
					t.Fatal(err)
				}
				if got := recv(t, srv); got != step.want {
					t.Errorf("got %q, want %q", got, step.want)
				}
			}
			if err := n.Notify("READY=1\nMAINPID=1"); err == nil {
				t.Error("an assignment with a newline was sent")
			}
			if err := n.Notify("READY"); err == nil {
				t.Error("an assignment without = was sent")
			}
		})
	}
}

func TestUnsetIsNoop(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	t.Setenv("WATCHDOG_USEC", "1000000")
	n := FromEnv()
	if n.Enabled() || n.WatchdogInterval() != 0 {
		t.Fatalf("enabled=%v watchdog=%v without NOTIFY_SOCKET", n.Enabled(), n.WatchdogInterval())
	}
	for _, f := range []func() error{func() error { return n.Ready("x") }, n.Stopping, n.Watchdog, func() error { return n.Status("x") }} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	var zero *Notifier
	if zero.Enabled() || zero.Notify("READY=1") != nil {
		t.Fatal("nil Notifier is not a no-op")
	}
	n.RunWatchdog(t.Context(), nil) // returns at once
}

func TestMissingSocketFails(t *testing.T) {
	n := New(filepath.Join(t.TempDir(), "absent.sock"), 0)
	if err := n.Ready(""); err == nil || !strings.HasPrefix(err.Error(), "sdnotify:") {
		t.Fatalf("err %v", err)
	}
}

func TestWatchdog(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify.sock")
	srv := listen(t, sock)
	t.Setenv("NOTIFY_SOCKET", sock)
	t.Setenv("WATCHDOG_USEC", "200000")
	t.Setenv("WATCHDOG_PID", "1") // another process's watchdog
	if d := FromEnv().WatchdogInterval(); d != 0 {
		t.Fatalf("watchdog of pid 1 taken: %v", d)
	}
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	n := FromEnv()
	if d := n.WatchdogInterval(); d != 200*time.Millisecond {
		t.Fatalf("interval %v", d)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); n.RunWatchdog(ctx, nil) }()
	start := time.Now()
	for i := 0; i < 3; i++ {
		if got := recv(t, srv); got != "WATCHDOG=1\n" {
			t.Fatalf("got %q", got)
		}
	}
	if el := time.Since(start); el < 150*time.Millisecond || el > 2*time.Second {
		t.Errorf("3 keep-alives in %v, want about 200ms (every 100ms)", el)
	}
	cancel()
	<-done

	// Unhealthy: no keep-alives.
	ctx, cancel = context.WithTimeout(t.Context(), 350*time.Millisecond)
	defer cancel()
	n.RunWatchdog(ctx, func(context.Context) bool { return false })
	_ = srv.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := srv.Read(make([]byte, 64)); err == nil {
		t.Fatal("keep-alive sent while unhealthy")
	}
}
