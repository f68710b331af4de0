package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/xconn/xconn/cmd/xconn/internal/chaos"
)

// chaosProc is one child process of a chaos run (a connector or the host),
// restarted as often as the run wants: the same binary and arguments each
// time, output appended to one log file and scanned for canaries. Owned by
// the run; safe for concurrent use.
type chaosProc struct {
	name  string
	exe   string
	args  []string
	env   []string
	extra []string // arguments of the next start only (set by the run's one fault goroutine)
	log   *lockedWriter

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{} // closed when the current process was waited for
	told     bool          // the run signalled the current process
	state    *os.ProcessState
	reported bool // an unexpected exit was reported
}

// lockedWriter serialises writes of a log shared by a process's stdout and
// stderr and by its successive incarnations.
type lockedWriter struct {
	mu   sync.Mutex
	w    io.Writer
	tail []byte // the last maxTail bytes written
}

// maxTail bounds lockedWriter.tail.
const maxTail = 4096

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tail = append(l.tail, p...)
	if len(l.tail) > maxTail {
		l.tail = append(l.tail[:0], l.tail[len(l.tail)-maxTail:]...)
	}
	return l.w.Write(p)
}

// last returns the last bytes written.
func (l *lockedWriter) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.tail)
}

func newChaosProc(name, exe string, args, env []string, logPath string, scan *chaos.Scanner) *chaosProc {
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	var w io.Writer = io.Discard
	if err == nil {
		w = f // closed with the process exit; the file lives in the work directory
	}
	return &chaosProc{name: name, exe: exe, args: args, env: env,
		log: &lockedWriter{w: io.MultiWriter(w, scan.Stream(name+" log"))}}
}

// start starts a new incarnation; the previous one must have exited.
func (p *chaosProc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited != nil {
		select {
		case <-p.exited:
		default:
			return fmt.Errorf("%s is still running", p.name)
		}
	}
	cmd := exec.Command(p.exe, append(append([]string(nil), p.args...), p.extra...)...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the run
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited, p.told, p.state, p.reported = cmd, exited, false, nil, false
	go func() {
		_ = cmd.Wait()
		p.mu.Lock()
		p.state = cmd.ProcessState
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

// pid returns the running process's id, or 0.
func (p *chaosProc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.state != nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// running reports whether the current incarnation runs.
func (p *chaosProc) running() bool { return p.pid() != 0 }

// signal sends sig to the current incarnation, marked as told, and waits
// up to d for it to exit; then it kills it.
func (p *chaosProc) signal(sig syscall.Signal, d time.Duration) {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	if cmd == nil || p.state != nil {
		p.mu.Unlock()
		return
	}
	p.told = true
	p.mu.Unlock()
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// kill sends SIGKILL and waits for the exit.
func (p *chaosProc) kill() { p.signal(syscall.SIGKILL, time.Minute) }

// term sends SIGTERM and waits up to d (then SIGKILL).
func (p *chaosProc) term(d time.Duration) { p.signal(syscall.SIGTERM, d) }

// exitedUnexpectedly reports, once per incarnation, an exit the run did not
// cause, with the last output of the process.
func (p *chaosProc) exitedUnexpectedly() (string, string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil || p.told || p.reported {
		return "", "", false
	}
	p.reported = true
	return p.state.String(), p.log.last(), true
}
