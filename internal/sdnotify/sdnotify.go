// Package sdnotify tells a service manager (systemd with Type=notify, or
// anything speaking the same protocol) about the process's state: READY=1
// once it serves, STOPPING=1 when it begins to stop, STATUS= lines, and
// WATCHDOG=1 keep-alives. The messages are datagrams on the unix socket
// named by $NOTIFY_SOCKET (a path, or "@name" for the abstract namespace);
// without it every call is a no-op, so a program calls them
// unconditionally.
//
// See sd_notify(3) and systemd.service(5), Type=notify and WatchdogSec=.
package sdnotify

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Notifier sends state to one service manager socket. The zero value and
// a Notifier from FromEnv without $NOTIFY_SOCKET do nothing. It is safe for
// concurrent use: each message is one datagram on a fresh socket.
type Notifier struct {
	socket   string
	watchdog time.Duration
}

// writeTimeout bounds one datagram's send (a service manager that does not
// read must not stall the program).
const writeTimeout = time.Second

// FromEnv returns the Notifier of $NOTIFY_SOCKET, with the watchdog
// interval of $WATCHDOG_USEC when $WATCHDOG_PID is unset or names this
// process.
func FromEnv() *Notifier {
	n := &Notifier{socket: os.Getenv("NOTIFY_SOCKET")}
	if usec, err := strconv.ParseInt(os.Getenv("WATCHDOG_USEC"), 10, 64); err == nil && usec > 0 {
		pid := os.Getenv("WATCHDOG_PID")
		if pid == "" || pid == strconv.Itoa(os.Getpid()) {
			n.watchdog = time.Duration(usec) * time.Microsecond
		}
	}
	return n
}

// New returns a Notifier for socket (a path or "@abstract"; "" disables
// it) with watchdog as the interval the manager expects keep-alives in (0:
// no watchdog).
func New(socket string, watchdog time.Duration) *Notifier {
	return &Notifier{socket: socket, watchdog: watchdog}
}

// Enabled reports whether messages go anywhere.
func (n *Notifier) Enabled() bool { return n != nil && n.socket != "" }

// Notify sends the variable assignments (such as "READY=1") as one
// datagram. Values must not hold newlines; Status removes them for you.
func (n *Notifier) Notify(assignments ...string) error {
	if !n.Enabled() {
		return nil
	}
	for _, a := range assignments {
		if !strings.Contains(a, "=") || strings.ContainsAny(a, "\n\x00") {
			return fmt.Errorf("sdnotify: %q is not one VAR=value line", a)
		}
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: n.socket, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	defer conn.Close()
	_ = conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := conn.Write([]byte(strings.Join(assignments, "\n") + "\n")); err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	return nil
}

// Ready says the service is up (READY=1), with a STATUS line when status is
// not empty.
func (n *Notifier) Ready(status string) error {
	if status == "" {
		return n.Notify("READY=1")
	}
	return n.Notify("READY=1", "STATUS="+oneLine(status))
}

// Stopping says the service has begun to stop (STOPPING=1).
func (n *Notifier) Stopping() error { return n.Notify("STOPPING=1") }

// Status sets the free-form status line the manager shows.
func (n *Notifier) Status(s string) error { return n.Notify("STATUS=" + oneLine(s)) }

// Watchdog sends one keep-alive (WATCHDOG=1).
func (n *Notifier) Watchdog() error { return n.Notify("WATCHDOG=1") }

// WatchdogInterval returns the interval within which the manager expects a
// keep-alive, or 0 when it expects none.
func (n *Notifier) WatchdogInterval() time.Duration {
	if !n.Enabled() {
		return 0
	}
	return n.watchdog
}

// RunWatchdog sends a keep-alive every half watchdog interval while
// healthy (nil: always) reports true, until ctx ends; it returns at once
// when no watchdog is expected. A process that stops being healthy stops
// the keep-alives, and the manager restarts it. The caller runs it in a
// goroutine it waits for.
func (n *Notifier) RunWatchdog(ctx context.Context, healthy func(context.Context) bool) {
	every := n.WatchdogInterval() / 2
	if every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if healthy == nil || healthy(ctx) {
			_ = n.Watchdog()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
