package connector_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

func TestLockDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	l, err := connector.LockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, connector.DataDirLockFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file: %v, mode %v, want 0600", err, fi.Mode().Perm())
	}
	if err := l.SetAddr("127.0.0.1:8080"); err != nil {
		t.Fatal(err)
	}
	_, err = connector.LockDataDir(dir)
	var inUse *connector.DataDirInUseError
	if !errors.As(err, &inUse) {
		t.Fatalf("second lock: %v, want a *DataDirInUseError", err)
	}
	if inUse.PID != os.Getpid() || inUse.Addr != "127.0.0.1:8080" || inUse.Dir != dir {
		t.Fatalf("holder %+v, want pid %d at 127.0.0.1:8080", inUse, os.Getpid())
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "process "+itoa(os.Getpid())) || !strings.Contains(msg, "127.0.0.1:8080") {
		t.Fatalf("error %q: want one line naming the pid and the address", msg)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	l2, err := connector.LockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l2.Close()
}

func itoa(n int) string {
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// Two servers on one DataDir: the second Start fails and names the first
// one's address; after the first closes, a new one starts.
func TestServerLocksDataDir(t *testing.T) {
	dir := t.TempDir()
	newSrv := func() *connector.Server {
		srv, err := connector.New(connector.Options{DataDir: dir,
			Identity: connector.Identity{CardID: "im.lock", Name: "Lock", Provider: "lock", TargetType: protocol.TargetIM}})
		if err != nil {
			t.Fatal(err)
		}
		srv.OnAssistantMessage(func(context.Context, *connector.Channel, *connector.AssistantMessage) error { return nil })
		return srv
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := newSrv()
	if err := first.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- first.Serve(ctx, ln) }()
	var startErr error
	for range 400 { // Serve records its address
		startErr = newSrv().Start(context.Background())
		var inUse *connector.DataDirInUseError
		if errors.As(startErr, &inUse) && inUse.Addr == ln.Addr().String() {
			break
		}
		if startErr == nil {
			t.Fatal("a second server started on the same DataDir")
		}
		time.Sleep(25 * time.Millisecond)
	}
	if startErr == nil || !strings.Contains(startErr.Error(), ln.Addr().String()) {
		t.Fatalf("second Start: %v, want the first one's address %s", startErr, ln.Addr())
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	third := newSrv()
	if err := third.Start(context.Background()); err != nil {
		t.Fatalf("start after the first closed: %v", err)
	}
	if err := third.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A program that serves from a data directory takes its lock first, so
// that a second process on the same directory stops at once and says
// which process holds it. (connector.Server takes the lock of
// Options.DataDir by itself in Start.)
func ExampleLockDataDir() {
	dir, _ := os.MkdirTemp("", "xconn-data-")
	defer os.RemoveAll(dir)
	lock, err := connector.LockDataDir(dir)
	if err != nil {
		fmt.Println(err) // data directory … is in use by process 4242 listening on 127.0.0.1:8080; …
		return
	}
	defer lock.Close()
	_ = lock.SetAddr("127.0.0.1:8080") // once listening

	_, err = connector.LockDataDir(dir) // a second holder
	var inUse *connector.DataDirInUseError
	fmt.Println(errors.As(err, &inUse), inUse.Addr)
	// Output: true 127.0.0.1:8080
}

// TestDataDirClaim: a data directory belongs to the first owner that
// claims it; another owner is refused in one line naming the directory as
// given and both owners, and the directory is left as it was.
func TestDataDirClaim(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	l, err := connector.LockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Claim("im.webchat"); err != nil {
		t.Fatal(err)
	}
	if err := l.Claim("im.webchat"); err != nil { // the same owner again
		t.Fatal(err)
	}
	err = l.Claim("im.wechat")
	var owned *connector.DataDirOwnedError
	if !errors.As(err, &owned) || owned.Dir != dir || owned.Owner != "im.webchat" || owned.Claimant != "im.wechat" {
		t.Fatalf("Claim by another owner = %v, want a *DataDirOwnedError", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, dir) {
		t.Fatalf("error %q: want one line naming %s", msg, dir)
	}
	if b, err := os.ReadFile(filepath.Join(dir, connector.DataDirOwnerFile)); err != nil || string(b) != "im.webchat\n" {
		t.Fatalf("owner file %q, %v", b, err)
	}
	for _, bad := range []string{"", "two\nlines", strings.Repeat("x", 200)} {
		if err := l.Claim(bad); err == nil {
			t.Fatalf("Claim(%q) accepted", bad)
		}
	}
	l.Close()
	if err := l.Claim("im.webchat"); err == nil {
		t.Fatal("Claim after Close accepted")
	}
}
