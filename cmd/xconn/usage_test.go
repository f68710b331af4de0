package main

import (
	"context"
	"net"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// TestUsageErrors: every command's usage mistakes exit 2 with one line in
// one shape, and print nothing on stdout (unknown commands and
// subcommands included: cobra alone prints help and exits 0).
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	cases := [][]string{
		{},
		{"nope"},
		{"serv"},
		{"serve"},
		{"serve", "webchatt"},
		{"serve", "webchat", "extra"},
		{"serve", "webchat", "--nope"},
		{"serve", "telegram", "extra"},
		{"serve", "wechat", "--nope"},
		{"serve", "feishu", "extra"},
		{"validate"},
		{"validate", "cards", "x"},
		{"validate", "card"},
		{"validate", "card", "a", "b"},
		{"validate", "descriptor"},
		{"validate", "packet"},
		{"validate", "card", "--nope", "x"},
		{"host"},
		{"host", "http://127.0.0.1:1", "extra"},
		{"host", "not-a-url", "--data", filepath.Join(dir, "h")},
		{"host", "--nope", "http://127.0.0.1:1"},
		{"host", "http://127.0.0.1:1", "--auth-input", "novalue", "--data", filepath.Join(dir, "h")},
		{"check"},
		{"check", "--nope", "http://127.0.0.1:1"},
		{"check", "--list", "http://127.0.0.1:1"},
		{"demo", "extra"},
		{"demo", "--log", "fancy", "--data", filepath.Join(dir, "d")},
		{"demo", "--agent", "nope", "--data", filepath.Join(dir, "d")},
		{"version", "extra"},
		{"bench", "extra"},
		{"chaos", "extra"},
	}
	shape := regexp.MustCompile(`^(xconn(?: [a-z-]+)*): [^\n]+; see '(xconn(?: [a-z-]+)*) --help'\n$`)
	for _, args := range cases {
		t.Run(strings.Join(append([]string{"xconn"}, args...), " "), func(t *testing.T) {
			code, out, errOut := xconn(t, "", args...)
			m := shape.FindStringSubmatch(errOut)
			if code != 2 || out != "" || m == nil || m[1] != m[2] {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout and one line \"xconn CMD: problem; see 'xconn CMD --help'\"", code, out, errOut)
			}
		})
	}
}

// TestUserMistakes: "xconn host" and "xconn check" recognise the user's
// own mistakes (nothing listening, a refused key, a wrong URL) and say so
// in one line, exit 1, before anything else; host shows the connector's
// own message for a refused key.
func TestUserMistakes(t *testing.T) {
	const apiKey = "mistakes-test-api-key-0123456789"
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

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	silent := "http://" + ln.Addr().String()
	ln.Close() // nothing listens here now

	hostData := filepath.Join(dir, "host")
	cases := []struct {
		name string
		args []string
		want string // in the one line
	}{
		{"host nothing listening", []string{"host", silent, "--api-key", apiKey, "--data", hostData}, "nothing answers at " + silent},
		{"host refused key", []string{"host", srv.URL, "--api-key", "WRONG-key-0123456789abcdef", "--data", hostData}, `refused the API key (GET /health answered HTTP 403: "system API key rejected"`},
		{"host missing key", []string{"host", srv.URL, "--data", hostData}, "requires an API key"},
		{"host wrong URL", []string{"host", srv.URL + "/webchat/", "--api-key", apiKey, "--data", hostData}, "is not a connector's Base URL"},
		{"check nothing listening", []string{"check", silent}, "Nothing answers at " + silent},
		{"check refused key", []string{"check", srv.URL, "--api-key", "WRONG-key-0123456789abcdef"}, "refused the API key"},
		{"check wrong URL", []string{"check", srv.URL + "/webchat/", "--api-key", apiKey}, "is not a connector's Base URL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("XCONN_API_KEY", "")
			code, out, errOut := xconn(t, "", c.args...)
			if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "xconn: ") || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 and one line with %q", code, out, errOut, c.want)
			}
			if strings.Contains(errOut, "WRONG-key") {
				t.Fatal("the key is in the message")
			}
		})
	}
}

// TestVersionLine: without VCS stamping or -ldflags, "xconn version" says
// so instead of printing "rev unknown, built 0000000000".
func TestVersionLine(t *testing.T) {
	for _, c := range []struct {
		in   protocol.Build
		want string
	}{
		{protocol.Build{Version: "0.3.0", GitTag: "v0.3.0", GitRev: "76b4ea2c84c9", BuildTime: "2612031406"}, "xconn 0.3.0 (tag v0.3.0, rev 76b4ea2c84c9, built 2612031406)"},
		{protocol.Build{Version: "0.0.0-dev", GitTag: "v0.0.0-dev", GitRev: "unknown", BuildTime: "0000000000"}, "xconn 0.0.0-dev (tag v0.0.0-dev; no revision or build time: built without VCS stamping; set them with -ldflags"},
	} {
		got := versionLine(c.in)
		if !strings.HasPrefix(got, c.want) || strings.Contains(got, "rev unknown") || strings.Contains(got, "0000000000") {
			t.Errorf("versionLine(%+v) = %q, want %q…", c.in, got, c.want)
		}
	}
}
