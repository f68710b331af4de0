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
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
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
	// wait bounds every condition loop; the loops end as soon as the
	// condition holds, so it only matters when something is broken.
	wait = 15 * time.Second
)

var login = map[string]string{"room": testRoom, "access_code": testCode}

// client keeps no idle connections, so goleak sees none of its goroutines.
var client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// roomchat is the connector of main.go running in this process.
type roomchat struct {
	t      *testing.T
	base   string
	cancel context.CancelFunc
	done   chan error
}

// startRoomchat runs run() on addr ("127.0.0.1:0" picks a port) with data
// as its data directory; t's cleanup stops it if the test did not.
func startRoomchat(t *testing.T, addr, data string) *roomchat {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rc := &roomchat{t: t, base: "http://" + ln.Addr().String(), cancel: cancel, done: make(chan error, 1)}
	go func() { rc.done <- run(ctx, ln, data, testKey) }()
	t.Cleanup(rc.stop)
	return rc
}

// stop cancels run's context and requires it to return nil promptly.
func (rc *roomchat) stop() {
	rc.t.Helper()
	if rc.done == nil {
		return
	}
	rc.cancel()
	select {
	case err := <-rc.done:
		if err != nil {
			rc.t.Errorf("run returned %v, want nil", err)
		}
	case <-time.After(wait):
		rc.t.Errorf("run did not return within %v of its context's end", wait)
	}
	rc.done = nil
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
func said(t *testing.T, base, room string) []string {
	t.Helper()
	resp, err := client.Get(base + "/room/" + room + "/said")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []string
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /room/%s/said: HTTP %d", room, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("GET /room/%s/said: %v", room, err)
	}
	return out
}

func count(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}

// eventually polls cond until it holds or wait passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", wait, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConformance is the first "Done when": xconn check signed in with
// room_login room=r1 access_code=c0de-c0de passes every applicable MUST.
// The Inbound hook posts in room r1 and the suite invokes room_message_send,
// so the inbound, redelivery and tool checks run instead of being skipped.
// It uses conformance.Check rather than conformance.Run because it must see
// the report to prove those checks ran.
func TestConformance(t *testing.T) {
	rc := startRoomchat(t, "127.0.0.1:0", t.TempDir())
	var inbound atomic.Int32
	const toolText = "posted by tool.invoke"
	opts := conformance.Options{
		APIKey: testKey, AuthFlow: flowID, AuthInput: login,
		Inbound: func(ctx context.Context, channelID string) error {
			return say(ctx, rc.base, testRoom, fmt.Sprintf("inbound %d for %s", inbound.Add(1), channelID))
		},
		Tool:     "room_message_send",
		ToolArgs: json.RawMessage(fmt.Sprintf(`{"text": %q}`, toolText)),
		Out:      testLog{t},
	}
	rep, err := conformance.Check(t.Context(), rc.base, opts)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	_ = rep.WriteText(&text)
	t.Log(rep.Summary())
	if passed, failed, _ := rep.Counts(); !rep.OK() || failed != 0 || passed == 0 {
		t.Fatalf("failed %v:\n%s", rep.Failed(), text.String())
	}
	// The checks the hook and the tool make applicable ran and passed.
	for _, id := range []string{"auth.authenticated", "tool.invoke", "imv2.inbound-valid", "imv2.inbound-delivered",
		"imv2.inbound-message-id", "imv2.redelivery", "imv2.inbound-acked-not-resent", "imv2.ack-accepted"} {
		if r, ok := rep.Result(id); !ok || r.Status != conformance.Pass {
			t.Errorf("%s: %s %s (want pass)", id, r.Status, r.Reason)
		}
	}
	// Every other skip is a capability roomchat does not have.
	notDeclared := []conformance.Capability{conformance.CapHasPathPrefix, conformance.CapHasQRFlow,
		conformance.CapDeclaresIMv1, conformance.CapDeclaresDevice, conformance.CapPublishesFiles, conformance.CapPublishesMessagePush}
	for _, r := range rep.Results {
		if req, _ := conformance.Lookup(r.ID); r.Status == conformance.Skip && !slices.Contains(notDeclared, req.Capability) && !progressless(r) {
			t.Errorf("%s (%s, %s) skipped: %s", r.ID, r.Level, req.Capability, r.Reason)
		}
	}
	if n := inbound.Load(); n == 0 {
		t.Error("the suite never called the Inbound hook")
	}
	// Two calls, each repeated once: with a tool_call_id
	// (tool.idempotency) and without context (tool.idempotency-request-id).
	if got := said(t, rc.base, testRoom); count(got, toolText) != 2 {
		t.Errorf("said %q: want the tool's text twice, once per distinct call", got)
	}
	if t.Failed() {
		t.Logf("report:\n%s", text.String())
	}
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// xagent is an in-process xAgent: a host with the echo agent, as
// xconn host --agent echo runs it, and the chat acks it saw.
type xagent struct {
	h  *host.Host
	mu sync.Mutex
	// acks counts chat.message.ack accepted by direction.
	acks map[protocol.Direction]int
}

func (x *xagent) accepted(dir protocol.Direction) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.acks[dir]
}

func startHost(t *testing.T, dir string) *xagent {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "host.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	x := &xagent{acks: map[protocol.Direction]int{}}
	x.h, err = host.New(host.Options{Store: db, Delivery: db, Agent: host.Echo{}, FilesDir: filepath.Join(dir, "files"),
		ReconnectMin: 50 * time.Millisecond, ReconnectMax: 250 * time.Millisecond,
		OnPacket: func(dir protocol.Direction, _ string, env *protocol.Envelope) {
			var ack protocol.ChatAckPayload
			if env.Type == protocol.TypeChatMessageAck && env.DecodePayload(&ack) == nil && ack.Status == protocol.AckAccepted {
				x.mu.Lock()
				x.acks[dir]++
				x.mu.Unlock()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := x.h.Close(cctx); err != nil {
			t.Errorf("host close: %v", err)
		}
	})
	return x
}

// signIn signs user in to roomchat with room_login, as xconn host
// --auth-flow room_login --auth-input ... does.
func (x *xagent) signIn(ctx context.Context, cardID, user string, input map[string]string) (store.UserChannel, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	s, err := x.h.Connect(ctx, user, cardID, flowID, input)
	if err != nil {
		return store.UserChannel{}, err
	}
	return s.Wait(ctx)
}

// expectOneReply posts text in the room and requires the echo agent's
// reply to appear in /said exactly once, and still once after both sides
// acknowledged everything and a grace period passed.
func expectOneReply(t *testing.T, rc *roomchat, x *xagent, text string) {
	t.Helper()
	reply := host.EchoText(&host.UserMessage{Text: text})
	toHost, toConn := x.accepted(protocol.ToHost), x.accepted(protocol.ToConnector)
	if err := say(t.Context(), rc.base, testRoom, text); err != nil {
		t.Fatal(err)
	}
	eventually(t, fmt.Sprintf("%q in /said", reply), func() bool { return count(said(t, rc.base, testRoom), reply) > 0 })
	// The host accepted the inbound message and the connector accepted the
	// reply: nothing is left to redeliver.
	eventually(t, "both acks", func() bool {
		return x.accepted(protocol.ToConnector) > toConn && x.accepted(protocol.ToHost) > toHost
	})
	time.Sleep(300 * time.Millisecond) // grace: a duplicate would land here
	if got := said(t, rc.base, testRoom); count(got, reply) != 1 {
		t.Fatalf("said %q: want %q exactly once", got, reply)
	}
}

// TestHostEcho is the second "Done when": with an xAgent host running the
// echo agent, signed in with room_login room=r1 access_code=c0de-c0de,
// POST /room/r1/say is answered in /room/r1/said exactly once; a wrong
// access code fails the sign-in with the room's message.
func TestHostEcho(t *testing.T) {
	ctx := t.Context()
	rc := startRoomchat(t, "127.0.0.1:0", t.TempDir())
	x := startHost(t, t.TempDir())
	c, err := x.h.Admit(ctx, rc.base, testKey)
	if err != nil {
		t.Fatal(err)
	}
	uc, err := x.signIn(ctx, c.CardID, "alice", login)
	if err != nil || !uc.Authenticated {
		t.Fatalf("sign-in: %+v, %v", uc, err)
	}
	expectOneReply(t, rc, x, "hello")

	_, err = x.signIn(ctx, c.CardID, "mallory", map[string]string{"room": testRoom, "access_code": "not-the-code"})
	if err == nil || !strings.Contains(err.Error(), "wrong access code for room r1") {
		t.Fatalf("sign-in with a wrong access code: %v, want the room's refusal", err)
	}
	if ucs, err := x.h.Channels(ctx, "mallory", c.CardID); err != nil || len(ucs) != 0 {
		t.Fatalf("a refused sign-in left channels %+v (%v)", ucs, err)
	}
	if got := said(t, rc.base, testRoom); len(got) != 1 {
		t.Fatalf("said %q after a refused sign-in, want only the one reply", got)
	}
}

// TestHostEchoRestart restarts roomchat on the same data directory while
// the host is connected: the host reconnects to the restored channel and a
// new message is still answered exactly once.
func TestHostEchoRestart(t *testing.T) {
	ctx := t.Context()
	data := t.TempDir()
	rc := startRoomchat(t, "127.0.0.1:0", data)
	addr := strings.TrimPrefix(rc.base, "http://")
	x := startHost(t, t.TempDir())
	c, err := x.h.Admit(ctx, rc.base, testKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.signIn(ctx, c.CardID, "alice", login); err != nil {
		t.Fatal(err)
	}
	expectOneReply(t, rc, x, "before the restart")

	rc.stop()
	online := func() bool { cc, ok := x.h.Connector(c.CardID); return ok && cc.Link == host.LinkOnline }
	eventually(t, "the host sees the connector go away", func() bool { return !online() })
	rc = startRoomchat(t, addr, data)
	eventually(t, "the host reconnects", online)
	expectOneReply(t, rc, x, "after the restart")
	if got := said(t, rc.base, testRoom); len(got) != 1 {
		t.Fatalf("said %q after the restart, want only the new reply", got)
	}
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
			x := startHost(t, t.TempDir())
			c, err := x.h.Admit(t.Context(), base, testKey)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := x.signIn(t.Context(), c.CardID, "alice", login); err != nil {
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

// progressless reports a tool.progress-push skip because the tool sends no
// tool.progress.push: progress is optional (section 8.20), so that
// requirement does not apply to this connector's tool.
func progressless(r conformance.Result) bool {
	return r.ID == "tool.progress-push" && strings.Contains(r.Reason, "sent no tool.progress.push")
}
