package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/host/admin"
	"github.com/xconn/xconn/store"
)

// TestHostAdmin runs "xconn host --admin" against an in-process web chat:
// the page answers the token from the file, refuses anything else, and
// shows the signed-in channel; bad flags exit 2 without quoting the token.
func TestHostAdmin(t *testing.T) {
	const apiKey = "host-admin-test-api-key-0123456789"
	const token = "admin-file-token-7c2e91"
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
	conn, err := webchat.New(webchat.Options{SDK: connector.Options{Store: db, APIKey: apiKey, DataDir: filepath.Join(dir, "files")}, PublicURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Server().Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer conn.Server().Close(ctx)
	srv.Config.Handler = conn.Server()

	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tokenFile := write("admin.token", token+"\n", 0o600)
	for name, args := range map[string][]string{
		"no token file":    {"--admin", "127.0.0.1:0"},
		"no address":       {"--admin-token-file", tokenFile},
		"short token":      {"--admin", "127.0.0.1:0", "--admin-token-file", write("short.token", "short-token\n", 0o600)},
		"token file 0644":  {"--admin", "127.0.0.1:0", "--admin-token-file", write("open.token", token+"\n", 0o644)},
		"missing the file": {"--admin", "127.0.0.1:0", "--admin-token-file", filepath.Join(dir, "none")},
	} {
		code, _, errOut := xconn(t, "", append([]string{"host", srv.URL, "--api-key", apiKey, "--data", filepath.Join(dir, "h-"+name)}, args...)...)
		if code != 2 || strings.Contains(errOut, token) || strings.Contains(errOut, "short-token") {
			t.Errorf("%s: exit %d, stderr %q", name, code, errOut)
		}
	}

	cctx, cancel := context.WithCancel(context.Background())
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(cctx, []string{"host", "--log", "pretty", srv.URL, "--api-key", apiKey, "--data", filepath.Join(dir, "host"),
			"--auth-flow", webchat.FlowRoom, "--auth-input", "room=lobby", "--auth-input", "access_code=s3cret-code",
			"--admin", "127.0.0.1:0", "--admin-token-file", tokenFile}, strings.NewReader(""), out, errOut)
	}()
	defer func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("exit %d: %s", code, errOut.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("xconn host did not stop")
		}
	}()
	page := waitFor(t, out, regexp.MustCompile(`operator page at (http://\S+/) `), 30*time.Second)
	ch := waitFor(t, out, regexp.MustCompile(`serving channel (\S+) `), 30*time.Second)
	get := func(auth string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, page+"api/state", nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d", code)
	}
	if code, _ := get(token + "x"); code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", code)
	}
	code, body := get(token)
	var s admin.Snapshot
	if code != http.StatusOK || json.Unmarshal([]byte(body), &s) != nil {
		t.Fatalf("state: %d %s", code, body)
	}
	var found bool
	for _, c := range s.Channels {
		found = found || c.ID == ch && c.State == admin.StateSignedIn
	}
	if !found || len(s.Connectors) != 1 {
		t.Fatalf("state %+v lacks channel %s signed in", s, ch)
	}
	for _, sec := range []string{apiKey, token, "s3cret-code"} {
		if strings.Contains(body, sec) || strings.Contains(out.String(), sec) {
			t.Fatalf("a secret is on the page or in the output")
		}
	}
}
