package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/store"
)

// serveWebchatStarted is serveWebchatForTest with the handler in place
// before the server accepts: a client in another process (whose requests
// the race detector cannot order) may connect at once.
func serveWebchatStarted(t *testing.T, dir, apiKey string) *httptest.Server {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "c.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := webchat.New(webchat.Options{SDK: connector.Options{Store: db, APIKey: apiKey, DataDir: filepath.Join(dir, "files")},
		PublicURL: "http://" + ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Server().Start(ctx); err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: conn.Server()}}
	srv.Start()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		_ = conn.Server().Close(ctx)
	})
	return srv
}

// nodeSDKDir returns a directory holding client.mjs and the pinned
// @modelcontextprotocol/sdk of testdata/mcp-node installed with "npm ci",
// cached per package-lock.json in the user's cache directory. It skips the
// test, saying why, when node or npm is absent or the registry cannot be
// reached.
func nodeSDKDir(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the Node.js MCP client test needs node and npm", tool)
		}
	}
	src := filepath.Join("testdata", "mcp-node")
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "xconn-test", "mcp-node-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			t.Fatal(err)
		}
		tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		for _, f := range []string{"package.json", "package-lock.json"} {
			copyFile(t, filepath.Join(src, f), filepath.Join(tmp, f))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
		cmd.Dir = tmp
		out, err := cmd.CombinedOutput()
		if err != nil {
			if regexp.MustCompile(`ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNREFUSED|ECONNRESET|network|proxy`).Match(out) || ctx.Err() != nil {
				t.Skipf("the npm registry is unreachable, so the Node.js MCP client cannot be installed: %v\n%s", err, lastLines(out, 5))
			}
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
		if err := os.Rename(tmp, dir); err != nil && !os.IsExist(err) {
			if _, statErr := os.Stat(dir); statErr != nil { // not a concurrent install
				t.Fatalf("cache the install: %v", err)
			}
		}
	}
	copyFile(t, filepath.Join(src, "client.mjs"), filepath.Join(dir, "client.mjs"))
	return dir
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// nodeResult is what testdata/mcp-node/client.mjs prints.
type nodeResult struct {
	Server               string   `json:"server"`
	Tools                []string `json:"tools"`
	ChannelsListReadOnly bool     `json:"channels_list_read_only"`
	SendIsError          bool     `json:"send_is_error"`
	SendText             string   `json:"send_text"`
	ChannelsText         string   `json:"channels_text"`
}

// runNodeClient runs client.mjs with task and decodes its summary.
func runNodeClient(t *testing.T, dir string, task map[string]any) nodeResult {
	t.Helper()
	b, _ := json.Marshal(task)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "client.mjs"))
	cmd.Env = append(os.Environ(), "XCONN_NODE_TEST="+string(b))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client (%s): %v\nstderr:\n%s", task["mode"], err, stderr.String())
	}
	var res nodeResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("node client printed %q: %v\nstderr:\n%s", stdout.String(), err, stderr.String())
	}
	return res
}

func checkNodeResult(t *testing.T, mode string, res nodeResult) {
	t.Helper()
	tools := strings.Join(res.Tools, " ")
	if res.Server != "xconn" || !strings.Contains(" "+tools+" ", " "+webchat.ToolSend+" ") || !strings.Contains(tools, "messages_read") {
		t.Errorf("%s: server %q, tools %v", mode, res.Server, res.Tools)
	}
	if !res.ChannelsListReadOnly {
		t.Errorf("%s: connector_channels_list is not read-only to the Node client", mode)
	}
	if res.SendIsError || !strings.Contains(res.SendText, "message_id") {
		t.Errorf("%s: send with text only: %s", mode, res.SendText)
	}
	if !strings.Contains(res.ChannelsText, `"authenticated":true`) {
		t.Errorf("%s: channels %s", mode, res.ChannelsText)
	}
}

// TestNodeClient runs the official TypeScript SDK's client
// (@modelcontextprotocol/sdk, pinned in testdata/mcp-node) against the
// built "xconn mcp": over stdio, started by the client as a config file
// would, and over streamable HTTP with a bearer token. Each initializes,
// lists the tools, calls the web chat's send tool with text only and
// connector_channels_list. It skips when node or npm is absent or the npm
// registry is unreachable.
func TestNodeClient(t *testing.T) {
	dir := nodeSDKDir(t)
	bin := filepath.Join(buildXconn(t), "xconn")
	srv := serveWebchatStarted(t, t.TempDir(), mcpTestKey)

	res := runNodeClient(t, dir, map[string]any{"mode": "stdio", "command": bin, "send_tool": webchat.ToolSend, "text": "hello from node over stdio",
		"args": []string{"mcp", srv.URL, "--api-key", mcpTestKey, "--data", t.TempDir(), "--log", "structured",
			"--auth-flow", webchat.FlowRoom, "--auth-input", "room=node", "--auth-input", "access_code=" + mcpTestCode}})
	checkNodeResult(t, "stdio", res)

	const token = "node-http-token-0123456789"
	t.Setenv(envMCPToken, token)
	addr := freeAddr(t)
	m := startMCP(t, strings.NewReader(""), io.Discard, srv.URL, "--api-key", mcpTestKey, "--data", t.TempDir(), "--http", addr,
		"--auth-flow", webchat.FlowRoom, "--auth-input", "room=node-http", "--auth-input", "access_code="+mcpTestCode)
	waitFor(t, m.stderr, regexp.MustCompile(`serving MCP over streamable HTTP`), 30*time.Second)
	res = runNodeClient(t, dir, map[string]any{"mode": "http", "url": "http://" + addr + "/", "token": token,
		"send_tool": webchat.ToolSend, "text": "hello from node over http"})
	checkNodeResult(t, "http", res)
	if code := m.stop(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, m.stderr.String())
	}
	m.checkNoSecret(mcpTestKey, mcpTestCode, token)
}
