//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
)

// childListenerFD is the listener's file descriptor in the child process
// (the first of exec.Cmd.ExtraFiles).
const childListenerFD = 3

// child is the connector running in a child process: the test binary run
// again for the test that called Run, serving on a listener the test
// process holds, so that the address survives the child.
type child struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process ended and its output was read
	err  error         // Wait's result, set before done closes
	logs *Logs
}

// startChild starts the child process with cfg and the listener file lf;
// its stdout and stderr go to logs. The test's cleanup kills it if it is
// still running.
func startChild(t *testing.T, cfg childConfig, lf *os.File, logs *Logs) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("e2e: the test binary: %v", err)
	}
	env, _ := json.Marshal(cfg)
	cmd := exec.Command(exe, "-test.run="+runPattern(cfg.Test), "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), childEnv+"="+string(env))
	cmd.ExtraFiles = []*os.File{lf}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("e2e: start the connector's process: %v", err)
	}
	c := &child{cmd: cmd, done: make(chan struct{}), logs: logs}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.done
	})
	return c
}

// kill ends the child with SIGKILL, as a crash or an OOM kill would.
func (c *child) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatalf("e2e: SIGKILL: %v", err)
	}
	<-c.done
}

// stop ends the child with SIGTERM and requires a clean exit (which
// includes the child's own checks, goleak in its TestMain say).
func (c *child) stop(t *testing.T) {
	t.Helper()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(Wait):
		_ = c.cmd.Process.Kill()
		<-c.done
		t.Errorf("e2e: the connector's process did not stop within %v of SIGTERM", Wait)
		return
	}
	if c.err != nil {
		t.Errorf("e2e: the connector's process ended with %v after SIGTERM", c.err)
	}
}

// exited reports whether the child has ended.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// waitServing waits until the child answers the Card at url.
func (c *child) waitServing(t *testing.T, url, apiKey string) {
	t.Helper()
	Eventually(t, "the connector's process serves", func() bool {
		if c.exited() {
			t.Fatalf("e2e: the connector's process ended (%v) before serving:\n%s", c.err, c.logs.String())
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := connectortest.FetchCard(ctx, url, apiKey)
		return err == nil
	})
}

// listenerFile returns a loopback listener and a file of its socket to
// hand to child processes; both close when the test ends.
func listenerFile(t *testing.T) (net.Listener, *os.File) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("e2e: listen: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatalf("e2e: listener file: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return ln, f
}

// serveChild is Run in the child process: it builds the connector with
// tg.New and serves it on the inherited listener, logging to stderr, until
// SIGTERM (or SIGINT).
func serveChild(t *testing.T, tg Target, cfg childConfig) {
	f := os.NewFile(childListenerFD, "e2e-listener")
	ln, err := net.FileListener(f)
	f.Close()
	if err != nil {
		t.Fatalf("e2e child: listener: %v", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := tg.New(Env{SDK: connector.Options{DataDir: cfg.DataDir, APIKey: cfg.APIKey, Logger: logger},
		Fake: cfg.Fake, URL: cfg.URL})
	if err != nil {
		ln.Close()
		t.Fatalf("e2e child: build the connector: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := srv.Serve(ctx, ln); err != nil {
		t.Fatalf("e2e child: Serve: %v", err)
	}
}
