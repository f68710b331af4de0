package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// syncBuffer is an io.Writer safe for the demo's goroutines and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls the output until re matches, and returns the first group.
func waitFor(t *testing.T, out *syncBuffer, re *regexp.Regexp, d time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			if len(m) > 1 {
				return m[1]
			}
			return m[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %q in the demo output within %v:\n%s", re, d, out.String())
	return ""
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// startDemo runs "xconn demo" in-process until the returned stop is called;
// stop returns the exit code.
func startDemo(t *testing.T, addr, dir string, extra ...string) (*syncBuffer, func() int) {
	t.Helper()
	out, _, stop := startDemoOut(t, addr, dir, append([]string{"--log", "pretty"}, extra...)...)
	return out, stop
}

// startDemoOut is startDemo with both outputs and the demo's arguments
// after the address and directory.
func startDemoOut(t *testing.T, addr, dir string, extra ...string) (*syncBuffer, *syncBuffer, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	args := append([]string{"demo", "--listen", addr, "--data", dir, "--pace", "0"}, extra...)
	go func() {
		done <- run(ctx, args, strings.NewReader(""), out, errOut)
	}()
	return out, errOut, func() int {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Logf("stderr:\n%s", errOut.String())
			}
			return code
		case <-time.After(30 * time.Second):
			t.Fatalf("demo did not stop after cancel:\n%s", out.String())
			return -1
		}
	}
}

// TestDemo runs the demo as a newcomer would: the login URL appears, a
// browser (here an HTTP client with cookies) confirms it, a message gets the
// echo, Ctrl-C stops it cleanly, and a restart resumes the same channel.
func TestDemo(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	addr := freeAddr(t)
	out, stop := startDemo(t, addr, dir)

	loginURL := waitFor(t, out, regexp.MustCompile(`(?m)^Login URL: (\S+)$`), 60*time.Second)
	if !strings.HasPrefix(loginURL, "http://"+addr+"/webchat/login/") {
		t.Fatalf("login URL %q", loginURL)
	}
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Get(loginURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET login URL: %s", resp.Status)
	}
	req, _ := http.NewRequest(http.MethodPost, loginURL, nil)
	req.Header.Set("Origin", "http://"+addr)
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST login URL (Confirm): %s", resp.Status)
	}
	channel := waitFor(t, out, regexp.MustCompile(`Signed in: channel (\S+)\.`), 30*time.Second)
	if s := out.String(); strings.Count(s, "Signed in") != 1 || strings.Contains(s, "sign-in: authenticated") || strings.Contains(s, "signed in by QR") {
		t.Fatalf("one QR sign-in logged more than once:\n%s", s)
	}

	req, _ = http.NewRequest(http.MethodPost, "http://"+addr+"/webchat/api/messages", strings.NewReader(`{"text":"hello demo"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://"+addr)
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST message: %s", resp.Status)
	}
	// The inbound message is acknowledged, the echo streams and its final is acknowledged.
	waitFor(t, out, regexp.MustCompile(`connector → host\s+chat\.message `), 30*time.Second)
	waitFor(t, out, regexp.MustCompile(`host → connector\s+chat\.message\.delta`), 30*time.Second)
	waitFor(t, out, regexp.MustCompile(`(?s)host → connector\s+chat\.message .*connector → host\s+chat\.message\.ack`), 30*time.Second)
	if code := stop(); code != 0 {
		t.Fatalf("demo exit code %d after Ctrl-C:\n%s", code, out.String())
	}

	// A restart resumes the signed-in channel: the chat page URL, no QR.
	out2, stop2 := startDemo(t, addr, dir)
	resumed := waitFor(t, out2, regexp.MustCompile(`Resuming channel (\S+) \(signed in`), 60*time.Second)
	if resumed != channel {
		t.Fatalf("restart resumed channel %s, want %s", resumed, channel)
	}
	waitFor(t, out2, regexp.MustCompile(`Chat page: http://`+regexp.QuoteMeta(addr)+`/webchat/`), 30*time.Second)
	waitFor(t, out2, regexp.MustCompile(`No new QR code`), 30*time.Second)
	if strings.Contains(out2.String(), "Login URL:") || strings.Contains(out2.String(), "sign-in: pending") {
		t.Fatalf("a restart of a signed-in channel showed a QR sign-in:\n%s", out2.String())
	}
	// A second demo on the same directory stops at once, naming the first.
	code, _, errOut := xconn(t, "", "demo", "--listen", freeAddr(t), "--data", dir)
	if code != 1 || !regexp.MustCompile(`^xconn: data directory \S+ is in use by process \d+ listening on `+regexp.QuoteMeta(addr)+`; [^\n]*\n$`).MatchString(errOut) {
		t.Fatalf("second demo on one directory: exit %d, stderr %q", code, errOut)
	}
	// The browser signs out on the page: then a restart needs a sign-in.
	req, _ = http.NewRequest(http.MethodPost, "http://"+addr+"/webchat/logout", nil)
	req.Header.Set("Origin", "http://"+addr)
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code := stop2(); code != 0 {
		t.Fatalf("second demo exit code %d", code)
	}
	out3, stop3 := startDemo(t, addr, dir)
	waitFor(t, out3, regexp.MustCompile(`(?m)^Login URL: `), 60*time.Second)
	if code := stop3(); code != 0 {
		t.Fatalf("third demo exit code %d", code)
	}
}

// TestDemoStructuredLog: without a terminal the demo writes one style,
// logfmt records on stderr, and nothing else.
func TestDemoStructuredLog(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	addr := freeAddr(t)
	out, errOut, stop := startDemoOut(t, addr, dir)
	waitFor(t, errOut, regexp.MustCompile(`login_url=http://`+regexp.QuoteMeta(addr)+`/webchat/login/`), 60*time.Second)
	if code := stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	// stdout holds only what the person at the terminal needs (the QR code
	// and the Login URL line), never a log line.
	if !regexp.MustCompile(`(?m)^Login URL: http://` + regexp.QuoteMeta(addr) + `/webchat/login/\S+$`).MatchString(out.String()) {
		t.Fatalf("no Login URL line on stdout:\n%s", out.String())
	}
	logLine := regexp.MustCompile(`(^time=|level=|^\d\d:\d\d:\d\d\.\d{3} )`)
	for _, line := range strings.Split(out.String(), "\n") {
		if logLine.MatchString(line) {
			t.Fatalf("structured style wrote a log line to stdout: %q", line)
		}
	}
	record := regexp.MustCompile(`^time=\S+ level=(INFO|WARN|ERROR|DEBUG) msg=`)
	for _, line := range strings.Split(strings.TrimSpace(errOut.String()), "\n") {
		if !record.MatchString(line) {
			t.Fatalf("not a structured record: %q", line)
		}
	}
}
