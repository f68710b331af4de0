package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/connector/connectortest/e2e"
)

// TestMain runs main itself, as the roomchat command, in a child process
// started by command; otherwise it runs the tests.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

const childEnv = "ROOMCHAT_TEST_RUN_MAIN"

// The "Done when": sign in with room_login room=r1 access_code=c0de-c0de.
const (
	testKey  = "roomchat-test-key-5f0e27c9a1d3b8"
	testRoom = "r1"
	testCode = "c0de-c0de"
	flowID   = "room_login"
	// wait bounds the wait for the command to end.
	wait = e2e.Wait
)

var login = map[string]string{"room": testRoom, "access_code": testCode}

// client keeps no idle connections, so goleak sees none of its goroutines.
var client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// TestE2E proves the "Done when" with the kit's end-to-end: the
// conformance suite signed in with room_login room=r1 access_code=c0de-c0de
// passes every applicable MUST, with POST /room/r1/say as its inbound hook
// and room_message_send as its tool; an xAgent host with the echo agent
// answers POST /room/r1/say in /room/r1/said exactly once, also after the
// connector restarts (gracefully, and by SIGKILL in the middle of an
// answer) on the same data directory; a wrong access code fails the
// sign-in with the room's message.
func TestE2E(t *testing.T) {
	e2e.Run(t, e2e.Target{
		New: func(env e2e.Env) (e2e.Server, error) {
			return e2e.ServeFunc(func(ctx context.Context, ln net.Listener) error {
				return run(ctx, ln, env.SDK.DataDir, env.SDK.APIKey)
			}), nil
		},
		Fake:      roomR1,
		SignIn:    e2e.SignIn{Flow: flowID, Input: login},
		BadSignIn: &e2e.BadSignIn{Input: map[string]string{"room": testRoom, "access_code": "not-the-code"}, Message: "wrong access code for room r1"},
		Tool:      "room_message_send",
		ToolArgs:  json.RawMessage(`{"text": "` + toolText + `"}`),
	})
}

const toolText = "posted by tool.invoke"

// roomR1 is room r1 of the connector at url: the room lives in the
// connector, so its people write through the connector's own endpoints,
// and what was said goes with the process.
func roomR1(_ testing.TB, url string) *e2e.Fake {
	return &e2e.Fake{Volatile: true,
		Say:  func(ctx context.Context, text string) error { return say(ctx, url, testRoom, text) },
		Said: func(ctx context.Context) ([]string, error) { return said(ctx, url, testRoom) },
		Conformance: func(t *testing.T, _ *conformance.Report) {
			// Two calls, each repeated once: with a tool_call_id
			// (tool.idempotency) and without context
			// (tool.idempotency-request-id).
			if got, err := said(t.Context(), url, testRoom); err != nil || e2e.Count(got, toolText) != 2 {
				t.Errorf("said %q (%v): want the tool's text twice, once per distinct call", got, err)
			}
		}}
}

// say posts text in room as a person would: POST /room/{room}/say.
func say(ctx context.Context, base, room, text string) error {
	body, _ := json.Marshal(Say{Text: text})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/room/"+room+"/say", bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("POST /room/%s/say: HTTP %d %s", room, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return nil
}

// said returns GET /room/{room}/said: what the agent said in the room.
func said(ctx context.Context, base, room string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/room/"+room+"/said", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /room/%s/said: HTTP %d", room, resp.StatusCode)
	}
	var out []string
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("GET /room/%s/said: %w", room, err)
	}
	return out, nil
}

// TestNoKeyOffLoopback: without an API key roomchat serves loopback only.
func TestNoKeyOffLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skip(err)
	}
	if err := run(t.Context(), ln, t.TempDir(), ""); err == nil || !strings.Contains(err.Error(), "no system API key") {
		t.Fatalf("run without a key on %s: %v, want a refusal saying there is no system API key", ln.Addr(), err)
	}
}

// command is the roomchat command (main, in this test binary) with args;
// lines gets its stderr line by line and is closed at its end.
func command(t *testing.T, args ...string) (cmd *exec.Cmd, lines <-chan string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), childEnv+"=1", "XCONN_API_KEY=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 256)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Logf("roomchat: %s", sc.Text())
			ch <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			for range ch {
			}
			cmd.Wait()
		}
	})
	return cmd, ch
}

// exit waits for cmd to end within wait and returns its exit code and the
// rest of its stderr.
func exit(t *testing.T, cmd *exec.Cmd, lines <-chan string) (int, string) {
	t.Helper()
	var rest strings.Builder
	timeout := time.After(wait)
	for open := true; open; {
		select {
		case l, ok := <-lines:
			if open = ok; ok {
				rest.WriteString(l + "\n")
			}
		case <-timeout:
			t.Fatalf("%v still running after %v", cmd.Args, wait)
		}
	}
	cmd.Wait()
	return cmd.ProcessState.ExitCode(), rest.String()
}

// TestCommandSignal: the command stops on SIGINT and SIGTERM with exit code
// 0 while an xAgent host is connected, closing the connector in order.
func TestCommandSignal(t *testing.T) {
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, lines := command(t, "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--api-key", testKey)
			var base string
			for l := range lines {
				if _, addr, ok := strings.Cut(l, "connector: serving addr="); ok {
					base = "http://" + addr
					break
				}
			}
			if base == "" {
				code, _ := exit(t, cmd, lines)
				t.Fatalf("roomchat exited with %d before serving", code)
			}
			h := e2e.StartHost(t, e2e.HostOptions{Secrets: e2e.Secrets{testKey, testCode}})
			if _, err := h.SignIn(t.Context(), "alice", h.AdmitConnector(base, testKey), e2e.SignIn{Flow: flowID, Input: login}); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			code, rest := exit(t, cmd, lines)
			if code != 0 || !strings.Contains(rest, "connector: closed") {
				t.Fatalf("after %v: exit code %d, stderr %q; want 0 after \"connector: closed\"", sig, code, rest)
			}
		})
	}
}

// TestCommandRefuses: bad command lines fail with a message and the exit
// code of their kind: 2 for usage, 1 for a key that cannot be used.
func TestCommandRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"unknown flag", []string{"--bogus"}, 2, "flag provided but not defined: -bogus"},
		{"weak key", []string{"--api-key", "abcabcabcabcabcabc"}, 1, "API key is too weak"},
		{"no key off loopback", []string{"--listen", "0.0.0.0:0"}, 1, "no system API key"},
		{"bad listen address", []string{"--listen", "nowhere", "--api-key", testKey}, 1, "roomchat: listen tcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--listen", "127.0.0.1:0", "--data", t.TempDir()}, tc.args...)
			cmd, lines := command(t, args...)
			code, out := exit(t, cmd, lines)
			if code != tc.code || !strings.Contains(out, tc.msg) {
				t.Fatalf("exit code %d, stderr %q; want %d and %q", code, out, tc.code, tc.msg)
			}
		})
	}
}
