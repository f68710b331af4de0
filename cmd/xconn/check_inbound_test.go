package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Environment of the poster helper process (TestInboundPoster).
const (
	envTestPoster  = "XCONN_TEST_INBOUND_POSTER"
	envTestRoomURL = "XCONN_TEST_ROOM_SAY_URL"
)

// TestInboundPoster is not a test: run by --inbound-cmd in
// TestCheckInboundCmdRoomchat, it posts one message in a roomchat room as
// a person would, naming the channel and the text the command was given,
// and fails when check did not set them.
func TestInboundPoster(t *testing.T) {
	if os.Getenv(envTestPoster) != "1" {
		t.Skip("the helper process of TestCheckInboundCmdRoomchat")
	}
	ch, text, seq := os.Getenv(envChannelID), os.Getenv(envInboundText), os.Getenv(envInboundSeq)
	if ch == "" || text == "" || seq == "" || os.Getenv(envBaseURL) == "" {
		t.Fatalf("environment: %s=%q %s=%q %s=%q %s=%q", envChannelID, ch, envInboundText, text, envInboundSeq, seq,
			envBaseURL, os.Getenv(envBaseURL))
	}
	body, _ := json.Marshal(map[string]string{"text": fmt.Sprintf("%s for %s", text, ch)})
	resp, err := http.Post(os.Getenv(envTestRoomURL), "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST say: %s", resp.Status)
	}
}

// TestCheckInboundCmdRoomchat is issue 33 item 6: "xconn check
// --inbound-cmd" runs imv2.inbound-delivered and imv2.inbound-message-id
// (and the redelivery checks) from the CLI against examples/roomchat, built
// and started as its own process, with a command that posts to its room.
func TestCheckInboundCmdRoomchat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds examples/roomchat")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build examples/roomchat")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "roomchat")
	build := exec.Command(goBin, "build", "-o", bin, "../../examples/roomchat")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build examples/roomchat: %v\n%s", err, out)
	}
	const key = "inbound-cmd-test-key-0123456789"
	base := startRoomchatProc(t, bin, filepath.Join(dir, "data"), key)

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(envTestPoster, "1")
	t.Setenv(envTestRoomURL, base+"/room/r1/say")
	t.Setenv(envInboundCmd, "") // only the flag
	command := fmt.Sprintf("%q -test.run='^TestInboundPoster$' -test.count=1", self)
	code, out, errOut := xconn(t, "", "check", base, "--api-key", key, "--json", "--timeout", "10s",
		"--auth-flow", "room_login", "--auth-input", "room=r1", "--auth-input", "access_code=c0de-c0de",
		"--inbound-cmd", command)
	var rep struct {
		Results []struct {
			ID, Status, Reason string
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("exit %d, report %q: %v\nstderr:\n%s", code, out, err, errOut)
	}
	status := map[string]string{}
	for _, r := range rep.Results {
		status[r.ID] = r.Status + " " + r.Reason
	}
	for _, id := range []string{"imv2.inbound-delivered", "imv2.inbound-message-id", "imv2.redelivery", "imv2.inbound-acked-not-resent"} {
		if !strings.HasPrefix(status[id], "pass") {
			t.Errorf("%s: %q, want pass", id, status[id])
		}
	}
	if code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	if !strings.Contains(errOut, "--inbound-cmd (1) for channel cch_") {
		t.Errorf("stderr does not show the command's runs:\n%s", errOut)
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", errOut)
	}
}

// TestCheckInboundCmdUsage: --inbound-cmd without --auth-flow, or with
// --xagent, is a usage error (exit 2) before any network access; a
// command that fails skips the inbound checks with its exit status and
// output as the reason.
func TestCheckInboundCmdUsage(t *testing.T) {
	t.Setenv(envInboundCmd, "")
	for _, args := range [][]string{
		{"check", "http://127.0.0.1:1", "--inbound-cmd", "true"},
		{"check", "--xagent", "--inbound-cmd", "true"},
	} {
		code, out, errOut := xconn(t, "", args...)
		if code != 2 || !strings.Contains(errOut, "--inbound-cmd") || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 naming --inbound-cmd", args, code, out, errOut)
		}
	}
	var progress bytes.Buffer
	hook := inboundCmdHook(`echo "no room $XCONN_CHANNEL_ID" >&2; exit 3`, "http://127.0.0.1:1", &progress)
	err := hook(context.Background(), "cch_x")
	if err == nil || !strings.Contains(err.Error(), "exited with 3") || !strings.Contains(err.Error(), "no room cch_x") {
		t.Fatalf("failing command: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = inboundCmdHook("sleep 30 & sleep 30; wait", "http://127.0.0.1:1", io.Discard)(ctx, "cch_x")
	if err == nil || !strings.Contains(err.Error(), "--timeout") || time.Since(start) > 10*time.Second {
		t.Fatalf("command past its deadline: %v after %v", err, time.Since(start))
	}
}

// startRoomchatProc starts the roomchat binary on a free loopback port and
// returns its Base URL once it serves; the process is stopped (SIGTERM,
// then killed) when the test ends.
func startRoomchatProc(t *testing.T, bin, data, key string) string {
	t.Helper()
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--data", data, "--api-key", key)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	addr := make(chan string, 1)
	var logs syncBuffer
	go func() {
		serving := regexp.MustCompile(`connector: serving addr=(\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.Write(append(sc.Bytes(), '\n'))
			if m := serving.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("roomchat log:\n%s", logs.String())
		}
	})
	select {
	case a := <-addr:
		return "http://" + a
	case <-exited:
		t.Fatalf("roomchat exited:\n%s", logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("roomchat did not serve within 30 s:\n%s", logs.String())
	}
	return ""
}
