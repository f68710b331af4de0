package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/mcp"
)

const (
	mcpTestKey  = "mcp-cli-test-api-key-0123456789"
	mcpTestCode = "mcp-room-code-5e1f"
)

// mcpCmd runs "xconn mcp" in process; stop cancels its context and
// returns its exit code.
type mcpCmd struct {
	t      *testing.T
	stderr *syncBuffer
	cancel context.CancelFunc
	done   chan int
}

func startMCP(t *testing.T, stdin io.Reader, stdout io.Writer, args ...string) *mcpCmd {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	m := &mcpCmd{t: t, stderr: &syncBuffer{}, cancel: cancel, done: make(chan int, 1)}
	go func() {
		m.done <- run(ctx, append([]string{"mcp", "--log", "structured"}, args...), stdin, stdout, m.stderr)
	}()
	return m
}

// wait returns the exit code once the command ended by itself or after
// stop.
func (m *mcpCmd) wait() int {
	m.t.Helper()
	select {
	case code := <-m.done:
		return code
	case <-time.After(30 * time.Second):
		m.t.Fatalf("xconn mcp did not stop; stderr:\n%s", m.stderr.String())
		return -1
	}
}

func (m *mcpCmd) stop() int {
	m.cancel()
	return m.wait()
}

// checkNoSecret fails when a secret is in the command's log.
func (m *mcpCmd) checkNoSecret(secrets ...string) {
	m.t.Helper()
	for _, s := range secrets {
		if strings.Contains(m.stderr.String(), s) {
			m.t.Errorf("the log holds the secret %q", s)
		}
	}
}

func mcpCall(t *testing.T, cs *sdk.ClientSession, name string, args any) (*sdk.CallToolResult, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*sdk.TextContent); ok {
			text = tc.Text
		}
	}
	return res, text
}

// waitMCPTool waits until tools/list names tool.
func waitMCPTool(t *testing.T, cs *sdk.ClientSession, tool string) *sdk.Tool {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for tl, err := range cs.Tools(ctx, nil) {
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			if tl.Name == tool {
				cancel()
				return tl
			}
		}
		cancel()
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("tool %s never listed", tool)
	return nil
}

// webchatUserPost posts text into a web chat room as its user.
func webchatUserPost(t *testing.T, base, room, code, text string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	res, err := c.PostForm(base+"/webchat/rooms/"+room, url.Values{"access_code": {code}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	body, _ := json.Marshal(map[string]string{"text": text})
	res, err = c.Post(base+"/webchat/api/messages?room="+room, "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		MessageID string `json:"message_id"`
	}
	_ = json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode != http.StatusAccepted || out.MessageID == "" {
		t.Fatalf("post to room %s: %s", room, res.Status)
	}
	return out.MessageID
}

// readOne calls messages_read until a message comes.
func readOne(t *testing.T, cs *sdk.ClientSession) mcp.Message {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		res, text := mcpCall(t, cs, mcp.ToolMessagesRead, map[string]any{"wait_seconds": 5})
		if res.IsError {
			t.Fatalf("messages_read: %s", text)
		}
		var out struct {
			Messages []mcp.Message `json:"messages"`
		}
		if err := json.Unmarshal([]byte(text), &out); err != nil {
			t.Fatalf("messages_read %s: %v", text, err)
		}
		if len(out.Messages) > 0 {
			return out.Messages[0]
		}
	}
	t.Fatal("no message read")
	return mcp.Message{}
}

// verifyNoLeak checks, after every cleanup of t, that no goroutine
// started during t is left.
func verifyNoLeak(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// TestMCPCommandStdio runs "xconn mcp" on pipes as an MCP client's
// config would start it, signed in at start from flags, with the Go SDK
// client: initialize, the connector's send tool with text only, a posted
// message read with messages_read; the client closing its end stops the
// command with exit 0, and no secret reaches its log.
func TestMCPCommandStdio(t *testing.T) {
	verifyNoLeak(t)
	srv := serveWebchatForTest(t, t.TempDir(), mcpTestKey)
	data := filepath.Join(t.TempDir(), "mcp")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	m := startMCP(t, inR, outW, srv.URL, "--api-key", mcpTestKey, "--data", data,
		"--auth-flow", webchat.FlowRoom, "--auth-input", "room=lobby", "--auth-input", "access_code="+mcpTestCode)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := sdk.NewClient(&sdk.Implementation{Name: "cli-test", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, m.stderr.String())
	}
	if got := cs.InitializeResult().ServerInfo.Name; got != "xconn" {
		t.Fatalf("server name %q", got)
	}
	send := waitMCPTool(t, cs, webchat.ToolSend)
	if a := send.Annotations; a == nil || a.ReadOnlyHint {
		t.Errorf("%s annotations %+v: a send tool is not read-only", webchat.ToolSend, a)
	}
	if res, text := mcpCall(t, cs, webchat.ToolSend, map[string]any{"text": "hello from mcp"}); res.IsError || !strings.Contains(text, "message_id") {
		t.Fatalf("send with text only: %s", text)
	}
	id := webchatUserPost(t, srv.URL, "lobby", mcpTestCode, "hi agent")
	if msg := readOne(t, cs); msg.MessageID != id || msg.Text != "hi agent" {
		t.Fatalf("read %+v, want %s", msg, id)
	}
	cs.Close()
	if code := m.wait(); code != 0 {
		t.Fatalf("exit %d after the client left:\n%s", code, m.stderr.String())
	}
	m.checkNoSecret(mcpTestKey, mcpTestCode)
	if !strings.Contains(m.stderr.String(), "serving MCP on stdin/stdout") {
		t.Errorf("stderr lacks the serving line:\n%s", m.stderr.String())
	}
}

// bearerTransport adds a bearer token to each request.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// TestMCPCommandHTTP serves streamable HTTP with a token from a file:
// a request without it or with another gets 401, the Go SDK client with
// it lists the tools and signs in; Ctrl-C stops with exit 0.
func TestMCPCommandHTTP(t *testing.T) {
	verifyNoLeak(t)
	srv := serveWebchatForTest(t, t.TempDir(), mcpTestKey)
	const token = "http-token-0123456789abcdef"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	m := startMCP(t, strings.NewReader(""), io.Discard, srv.URL, "--api-key", mcpTestKey, "--data", t.TempDir(),
		"--http", addr, "--http-token-file", tokenFile)
	waitFor(t, m.stderr, regexp.MustCompile(`serving MCP over streamable HTTP at http://`+addr), 30*time.Second)

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	for _, auth := range []string{"", "Bearer wrong-token-0123456789", "Basic " + token} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("Authorization %q: %s, want 401", auth, res.Status)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := sdk.NewClient(&sdk.Implementation{Name: "cli-test", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: "http://" + addr + "/",
		HTTPClient: &http.Client{Transport: &bearerTransport{token: token, base: tr}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, m.stderr.String())
	}
	res, text := mcpCall(t, cs, mcp.ToolSignIn, map[string]any{"connector_card_id": webchat.CardID, "flow_id": webchat.FlowRoom,
		"input": map[string]string{"room": "http-room", "access_code": mcpTestCode}})
	if res.IsError || !strings.Contains(text, `"status":"authenticated"`) {
		t.Fatalf("sign-in over HTTP: %s", text)
	}
	waitMCPTool(t, cs, webchat.ToolSend)
	cs.Close()
	if code := m.stop(); code != 0 {
		t.Fatalf("exit %d after Ctrl-C:\n%s", code, m.stderr.String())
	}
	m.checkNoSecret(mcpTestKey, mcpTestCode, token)
}

// TestMCPCommandUsage: usage errors exit 2 with one line naming the
// problem, and never quote a token.
func TestMCPCommandUsage(t *testing.T) {
	short := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(short, []byte("tooshort\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envMCPToken, "")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"mcp"}, "missing BASE_URL"},
		{[]string{"mcp", "http://127.0.0.1:1", "--http", "127.0.0.1:0"}, "--http needs a bearer token"},
		{[]string{"mcp", "http://127.0.0.1:1", "--http", "127.0.0.1:0", "--http-token-file", short}, "is 8 bytes: use at least 16"},
		{[]string{"mcp", "http://127.0.0.1:1", "--http-token-file", short}, "--http-token-file is for --http"},
		{[]string{"mcp", "http://127.0.0.1:1", "http://127.0.0.1:2", "--auth-input", "room=x"}, "give one BASE_URL"},
		{[]string{"mcp", "127.0.0.1:1"}, "has no scheme"},
	} {
		code, _, errOut := xconn(t, "", tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.msg) || strings.Contains(errOut, "tooshort") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.msg)
		}
	}
}
