package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Environment of an --inbound-cmd command, besides the one xconn check
// runs in.
const (
	// envChannelID is the connector_channel_id the suite signed in.
	envChannelID = "XCONN_CHANNEL_ID"
	// envBaseURL is the Base URL under check.
	envBaseURL = "XCONN_BASE_URL"
	// envInboundText is a text unique to this call, for the message.
	envInboundText = "XCONN_INBOUND_TEXT"
	// envInboundSeq is 1, 2 or 3: which call of the run this is.
	envInboundSeq = "XCONN_INBOUND_SEQ"
	// envInboundCmd is the default of --inbound-cmd.
	envInboundCmd = "XCONN_INBOUND_CMD"
)

const (
	// inboundCmdTail bounds the output of the command kept for the error
	// message of a failed run.
	inboundCmdTail = 512
	// inboundCmdWaitDelay bounds the wait for the command's output after
	// it was killed.
	inboundCmdWaitDelay = 2 * time.Second
)

// inboundCmdHook returns the conformance Options.Inbound hook of
// "xconn check --inbound-cmd": each call runs command with "sh -c" in
// xconn's environment plus XCONN_CHANNEL_ID, XCONN_BASE_URL,
// XCONN_INBOUND_TEXT and XCONN_INBOUND_SEQ, and returns once it exited 0,
// so that a connector in any language can be made to receive a message.
// Its output goes to out (the progress stream); a non-zero exit is an
// error quoting the end of it. ctx bounds the run (the suite's --timeout):
// when it ends, the command's whole process group is killed.
func inboundCmdHook(command, baseURL string, out io.Writer) func(ctx context.Context, channelID string) error {
	var seq int
	stamp := strconv.FormatInt(time.Now().UnixMilli(), 36)
	return func(ctx context.Context, channelID string) error {
		seq++ // the suite calls the hook from one goroutine
		cmd := exec.CommandContext(ctx, "sh", "-c", command)
		cmd.Env = append(os.Environ(),
			envChannelID+"="+channelID,
			envBaseURL+"="+baseURL,
			envInboundText+"="+fmt.Sprintf("xconn check inbound message %d (%s)", seq, stamp),
			envInboundSeq+"="+strconv.Itoa(seq))
		w := &lockedWriter{w: out} // stdout and stderr share it; it keeps the tail
		cmd.Stdout, cmd.Stderr = w, w
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = inboundCmdWaitDelay
		fmt.Fprintf(out, "--inbound-cmd (%d) for channel %s\n", seq, channelID)
		err := cmd.Run()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("--inbound-cmd did not finish within --timeout: %w", ctx.Err())
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if t := strings.TrimSpace(w.last()); t != "" {
				if len(t) > inboundCmdTail {
					t = "…" + strings.ToValidUTF8(t[len(t)-inboundCmdTail:], "")
				}
				return fmt.Errorf("--inbound-cmd exited with %d: %s", ee.ExitCode(), t)
			}
			return fmt.Errorf("--inbound-cmd exited with %d", ee.ExitCode())
		}
		return fmt.Errorf("--inbound-cmd: %w", err)
	}
}
