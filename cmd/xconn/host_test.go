package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/store"
)

// TestHostCommand runs "xconn host" against an in-process web chat
// connector: admission, form sign-in from flags, one line per packet, a
// clean stop, and a restart that reuses the stored channel.
func TestHostCommand(t *testing.T) {
	const apiKey = "host-cli-test-api-key-0123456789"
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "c.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := httptest.NewUnstartedServer(nil)
	srv.Start()
	defer srv.Close()
	conn, err := webchat.New(webchat.Options{SDK: connector.Options{Store: db, APIKey: apiKey, DataDir: filepath.Join(dir, "files")},
		PublicURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Server().Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer conn.Server().Close(ctx)
	srv.Config.Handler = conn.Server()

	hostDir := filepath.Join(dir, "host")
	runHostCmd := func() (*syncBuffer, func() int) {
		cctx, cancel := context.WithCancel(context.Background())
		out, errOut := &syncBuffer{}, &syncBuffer{}
		done := make(chan int, 1)
		go func() {
			done <- run(cctx, []string{"host", "--log", "pretty", srv.URL, "--api-key", apiKey, "--data", hostDir,
				"--auth-flow", webchat.FlowRoom, "--auth-input", "room=lobby", "--auth-input", "access_code=s3cret-code"},
				strings.NewReader(""), out, errOut)
		}()
		return out, func() int {
			cancel()
			select {
			case code := <-done:
				if code != 0 {
					t.Logf("stderr: %s", errOut.String())
				}
				return code
			case <-time.After(30 * time.Second):
				t.Fatal("xconn host did not stop")
				return -1
			}
		}
	}

	out, stop := runHostCmd()
	ch := waitFor(t, out, regexp.MustCompile(`serving channel (\S+) `), 30*time.Second)
	waitFor(t, out, regexp.MustCompile(`-> connector\.hello`), time.Second)
	waitFor(t, out, regexp.MustCompile(`<- auth\.start\.ack`), time.Second)
	if strings.Contains(out.String(), apiKey) || strings.Contains(out.String(), "s3cret-code") {
		t.Fatal("a secret reached the packet log")
	}
	// A second host on the same data directory stops at once.
	if code, _, errOut := xconn(t, "", "host", srv.URL, "--api-key", apiKey, "--data", hostDir); code != 1 ||
		!regexp.MustCompile(`^xconn: data directory \S+ is in use by process \d+; [^\n]*\n$`).MatchString(errOut) {
		t.Fatalf("second host on one directory: exit %d, stderr %q", code, errOut)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d after Ctrl-C:\n%s", code, out.String())
	}

	out2, stop2 := runHostCmd()
	waitFor(t, out2, regexp.MustCompile(`reusing stored channel `+regexp.QuoteMeta(ch)), 30*time.Second)
	if code := stop2(); code != 0 {
		t.Fatalf("second run exit %d", code)
	}
}

// A refused admission prints the reason and exits 1.
func TestHostCommandRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	code, _, errOut := xconn(t, "", "host", srv.URL, "--data", t.TempDir())
	if code != 1 || !strings.Contains(errOut, "card") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if code, _, _ := xconn(t, "", "host"); code != 2 {
		t.Fatalf("missing BASE_URL: exit %d, want 2", code)
	}
}
