package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

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
	// The same shape, and what the line must say (issue 34: one URL and
	// key helper and one flag set for host and check, flag typos, no
	// repeated words).
	openKey := writeSecretFile(t, "open-key-0123456789abcdef\n")
	if err := os.Chmod(openKey, 0o644); err != nil {
		t.Fatal(err)
	}
	said := []struct {
		args      []string
		want, not string
	}{
		{[]string{"check", "127.0.0.1:8080"}, `BASE_URL "127.0.0.1:8080" has no scheme: did you mean http://127.0.0.1:8080?`, "parse"},
		{[]string{"host", "localhost:8080", "--data", filepath.Join(dir, "h")}, "did you mean http://localhost:8080?", "parse"},
		{[]string{"check"}, "xconn check: missing BASE_URL;", "check needs"},
		{[]string{"check", "a", "b"}, `unexpected argument "b"`, "check needs"},
		{[]string{"host", "--apikey", "k", "http://127.0.0.1:1"}, "unknown flag: --apikey (did you mean --api-key?)", ""},
		{[]string{"serve", "webchat", "--lisen", "x"}, "(did you mean --listen?)", ""},
		{[]string{"check", "--api-key-flie", "k", "http://127.0.0.1:1"}, "(did you mean --api-key-file?)", ""},
		{[]string{"demo", "--sigin"}, "(did you mean --signin?)", ""},
		{[]string{"serve", "telegram", "--nope"}, "unknown flag: --nope;", "did you mean"},
		{[]string{"check", "http://127.0.0.1:1", "--api-key-file", openKey}, "has mode 0644, open to other users: run chmod 600", "open-key"},
		{[]string{"host", "http://127.0.0.1:1", "--api-key-file", openKey}, "has mode 0644", "open-key"},
		{[]string{"serve", "webchat", "--api-key-file", openKey}, "has mode 0644", "open-key"},
		{[]string{"demo", "--log-level", "loud", "--data", filepath.Join(dir, "d")}, `--log-level "loud": want debug, info, warn or error`, ""},
		{[]string{"serve", "adb", "--log", "fancy"}, `--log "fancy"`, ""},
		{[]string{"check", "http://127.0.0.1:1", "--auth-input", "s3cret-without-key-0123456789abcdef"}, "want key=value", "s3cret"},
	}
	for _, c := range said {
		t.Run(strings.Join(append([]string{"xconn"}, c.args...), " "), func(t *testing.T) {
			code, out, errOut := xconn(t, "", c.args...)
			m := shape.FindStringSubmatch(errOut)
			if code != 2 || out != "" || m == nil || m[1] != m[2] || !strings.Contains(errOut, c.want) || (c.not != "" && strings.Contains(errOut, c.not)) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and one line with %q (and not %q)", code, out, errOut, c.want, c.not)
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
	wrongKeyFile := writeSecretFile(t, "WRONG-key-0123456789abcdef\n")
	cases := []struct {
		name string
		args []string
		want string // in the one line
		env  string // XCONN_API_KEY
		code int    // default 1
	}{
		{"host nothing listening", []string{"host", silent, "--api-key", apiKey, "--data", hostData}, "nothing answers at " + silent, "", 0},
		{"host refused key", []string{"host", srv.URL, "--api-key", "WRONG-key-0123456789abcdef", "--data", hostData}, `refused the API key (GET /health answered HTTP 403: "system API key rejected"`, "", 0},
		{"host missing key", []string{"host", srv.URL, "--data", hostData}, "requires an API key", "", 0},
		{"host wrong URL", []string{"host", srv.URL + "/webchat/", "--api-key", apiKey, "--data", hostData}, "is not a connector's Base URL", "", 0},
		{"check nothing listening", []string{"check", silent}, "nothing answers at " + silent, "", 0},
		{"check refused key", []string{"check", srv.URL, "--api-key", "WRONG-key-0123456789abcdef"}, "refused the API key", "", 0},
		{"check wrong URL", []string{"check", srv.URL + "/webchat/", "--api-key", apiKey}, "is not a connector's Base URL", "", 0},
		// check takes the key as host does, and says so without the
		// library's Options.APIKey (issue 34, item 5).
		{"check refused key file", []string{"check", srv.URL, "--api-key-file", wrongKeyFile}, "refused the API key (GET /health answered HTTP 403: \"system API key rejected\"", "", 0},
		{"check refused key env", []string{"check", srv.URL}, "refused the API key", "WRONG-key-0123456789abcdef", 0},
		{"check missing key", []string{"check", srv.URL}, "requires an API key (GET /health answered HTTP 401", "", 0},
		// An unknown --auth-flow lists the flows of the Card (item 9).
		{"host unknown flow", []string{"host", srv.URL, "--api-key", apiKey, "--data", hostData, "--auth-flow", "webchat_rom"}, `unknown --auth-flow "webchat_rom": the Card of im.webchat offers webchat_qr_login, webchat_room`, "", 2},
		{"check unknown flow", []string{"check", srv.URL, "--api-key", apiKey, "--auth-flow", "nope"}, `unknown --auth-flow "nope": the Card of im.webchat offers webchat_qr_login, webchat_room`, "", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("XCONN_API_KEY", c.env)
			code, out, errOut := xconn(t, "", c.args...)
			want := max(c.code, 1)
			prefix := "xconn: "
			if want == 2 {
				prefix = "xconn " // a usage error: "xconn CMD: ..."
			}
			if code != want || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, prefix) || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d and one line with %q", code, out, errOut, want, c.want)
			}
			if strings.Contains(errOut, "WRONG-key") {
				t.Fatal("the key is in the message")
			}
			if strings.Contains(errOut, "Options.") {
				t.Fatalf("stderr %q names a Go option", errOut)
			}
		})
	}
	// A failed sign-in is said once, not "sign-in: host: sign-in:" (the
	// packet log goes to stdout in the pretty view).
	t.Run("host sign-in fails", func(t *testing.T) {
		code, _, errOut := xconn(t, "", "host", srv.URL, "--log", "pretty", "--api-key", apiKey, "--data", hostData,
			"--auth-flow", "webchat_room", "--auth-input", "room=lobby")
		if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "access_code") || strings.Count(errOut, "sign-in") > 1 {
			t.Fatalf("exit %d, stderr %q; want exit 1 and one line naming access_code, saying sign-in once", code, errOut)
		}
	})
}

// TestDataDirMistakes: every command follows one data directory rule
// (issue 34, item 6): --data is one connector's (or the host's), the lock
// is on --data itself, and a second command on it, or another connector
// later, is refused in one line that names the path as typed, before any
// banner is printed.
func TestDataDirMistakes(t *testing.T) {
	t.Chdir(t.TempDir())
	const data = "./shared-data"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "webchat", "--data", data, "--listen", "127.0.0.1:0"}, strings.NewReader(""), out, errOut)
	}()
	addr := waitFor(t, out, regexp.MustCompile(`Base URL:\s+http://(\S+)`), 30*time.Second)
	busy := regexp.MustCompile(`^xconn: data directory \./shared-data is in use by process \d+ listening on ` + regexp.QuoteMeta(addr) + `; stop it or choose another --data\n$`)
	others := [][]string{
		{"serve", "webchat", "--listen", "127.0.0.1:0"},
		{"serve", "wechat", "--listen", "127.0.0.1:0"},
		{"serve", "telegram", "--listen", "127.0.0.1:0"},
		{"serve", "feishu", "--listen", "127.0.0.1:0"},
		{"serve", "adb", "--listen", "127.0.0.1:0"},
		{"demo", "--listen", "127.0.0.1:0"},
		{"host", "http://" + addr},
	}
	for _, args := range others {
		t.Run("in use: "+strings.Join(args[:2], " "), func(t *testing.T) {
			code, o, e := xconn(t, "", append(args, "--data", data)...)
			if code != 1 || o != "" || !busy.MatchString(e) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1, no banner and one line matching %s", code, o, e, busy)
			}
		})
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve webchat: exit %d: %s", code, errOut.String())
	}
	for _, c := range []struct {
		args  []string
		owner string
	}{
		{[]string{"serve", "wechat", "--listen", "127.0.0.1:0"}, "im.wechat"},
		{[]string{"serve", "telegram", "--listen", "127.0.0.1:0"}, "im.telegram"},
		{[]string{"serve", "feishu", "--listen", "127.0.0.1:0"}, "im.feishu"},
		{[]string{"serve", "adb", "--listen", "127.0.0.1:0"}, "device.adb"},
		{[]string{"host", "http://" + addr}, "xconn host"},
	} {
		t.Run("owned: "+strings.Join(c.args[:2], " "), func(t *testing.T) {
			want := "xconn: data directory ./shared-data belongs to im.webchat, not " + c.owner + ": give each its own --data\n"
			if c.args[0] == "host" { // the host looks for a connector first: give it a Card
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					t.Skip("the address was taken again")
				}
				srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					io.WriteString(w, `{"connector_card_id":"im.x"}`)
				}))
				srv.Listener.Close()
				srv.Listener = ln
				srv.Start()
				defer srv.Close()
				want = "xconn: data directory ./shared-data belongs to im.webchat, not xconn host: give each its own --data\n"
			}
			code, o, e := xconn(t, "", append(c.args, "--data", data)...)
			if code != 1 || o != "" || e != want {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1, no banner and %q", code, o, e, want)
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

// TestHelpTexts: every command's help speaks of the program, not of the
// issues that asked for it, and the --log-level help states the default
// the commands use (pflag's own "(default ...)" would contradict it).
func TestHelpTexts(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		args := append(strings.Fields(c.CommandPath())[1:], "--help")
		code, out, _ := xconn(t, "", args...)
		if code != 0 {
			t.Errorf("%s: exit %d", c.CommandPath(), code)
		}
		if regexp.MustCompile(`(?i)\bissues?\b`).MatchString(out) {
			t.Errorf("%s --help speaks of issues:\n%s", c.CommandPath(), out)
		}
		for _, line := range strings.Split(out, "\n") {
			want := "(default: warn in the pretty view, info in the structured style)"
			if strings.HasPrefix(c.CommandPath(), "xconn serve ") {
				want = "(default: info)"
			}
			if strings.Contains(line, "--log-level") && (strings.Contains(line, `(default "`) || !strings.Contains(line, want)) {
				t.Errorf("%s: %q", c.CommandPath(), line)
			}
		}
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				walk(sub)
			}
		}
	}
	walk(newRootCmd())
}

// TestInterruptBeforeRun: Ctrl-C while host or check waits for a
// connector that takes the connection but does not answer stops at once,
// not as a usage error ("context canceled; see --help", exit 2).
func TestInterruptBeforeRun(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // accepted by the kernel, never answered
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	base := "http://" + ln.Addr().String()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"host", base, "--data", filepath.Join(t.TempDir(), "h")}, 0, ""},
		{[]string{"check", base}, 1, "xconn: check interrupted: no report\n"},
	} {
		t.Run(c.args[0], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			var out, errOut strings.Builder
			if code := run(ctx, c.args, strings.NewReader(""), &out, &errOut); code != c.code || errOut.String() != c.want {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, errOut.String(), c.code, c.want)
			}
		})
	}
}
