package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xconn/xconn/connectors/telegram"
	"github.com/xconn/xconn/connectors/telegram/telegramtest"
)

// buildXconn builds this command into a temporary directory and returns
// the directory, for tests that start "xconn" as an MCP client would.
func buildXconn(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the xconn binary")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build xconn")
	}
	dir := t.TempDir()
	out, err := exec.Command(goBin, "build", "-o", filepath.Join(dir, "xconn"), ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// mcpServerEntry is one entry of an MCP client's "mcpServers" config.
type mcpServerEntry struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// readmeMCPConfigs returns the entries of the ```json blocks of
// mcp/README.md, in order.
func readmeMCPConfigs(t *testing.T) []mcpServerEntry {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "mcp", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []mcpServerEntry
	for _, m := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		var cfg struct {
			MCPServers map[string]mcpServerEntry `json:"mcpServers"`
		}
		if err := json.Unmarshal([]byte(m[1]), &cfg); err != nil {
			t.Fatalf("a json block of mcp/README.md does not parse: %v\n%s", err, m[1])
		}
		if len(cfg.MCPServers) != 1 {
			t.Fatalf("a json block with %d mcpServers entries", len(cfg.MCPServers))
		}
		for _, e := range cfg.MCPServers {
			out = append(out, e)
		}
	}
	return out
}

// TestReadmeMCPConfigs starts what the Claude Desktop and Cursor entries
// of mcp/README.md describe, verbatim but for the connector's address and
// the home directory: "xconn mcp" against "xconn serve telegram" (on the
// fake Bot API), signed in from the README's bot file. The Go SDK client
// finds telegram_message_send, sends with text only (the bot posts it in
// the chat) and reads what a person wrote there with messages_read.
func TestReadmeMCPConfigs(t *testing.T) {
	bin := buildXconn(t)
	entries := readmeMCPConfigs(t)
	if len(entries) != 2 {
		t.Fatalf("mcp/README.md has %d config snippets, want the Claude Desktop and the Cursor one", len(entries))
	}
	const (
		botToken = "987654:readme-bot-token-ABCDEF"
		chatID   = int64(123456789)
		apiKey   = "readme-api-key-0123456789abcdef"
	)
	fake := telegramtest.New()
	fake.AddBot(botToken, telegramtest.Bot{ID: 987654, Username: "readme_bot", FirstName: "Readme"})
	fake.AddChat(telegramtest.Chat{ID: chatID, FirstName: "Alice"})
	api := fake.Start()
	defer fake.Close()

	home := t.TempDir()
	xdir := filepath.Join(home, "xconn")
	if err := os.MkdirAll(xdir, 0o700); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(xdir, "api-key.txt")
	for name, content := range map[string]string{"api-key.txt": apiKey + "\n",
		"telegram-bot.txt": fmt.Sprintf("bot_token=%s\nchat_id=%d\n", botToken, chatID)} {
		if err := os.WriteFile(filepath.Join(xdir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := freeAddr(t)
	ctx, stopServe := context.WithCancel(context.Background())
	out, serveErr := &syncBuffer{}, &syncBuffer{}
	served := make(chan int, 1)
	go func() {
		served <- run(ctx, []string{"serve", "telegram", "--listen", addr, "--api-key-file", keyFile,
			"--data", filepath.Join(xdir, "telegram"), "--telegram-api-url", api, "--log", "structured"}, strings.NewReader(""), out, serveErr)
	}()
	defer func() {
		stopServe()
		if code := <-served; code != 0 {
			t.Errorf("serve telegram: exit %d\n%s", code, serveErr.String())
		}
	}()
	waitFor(t, out, regexp.MustCompile(`Bot API: `), 30*time.Second)

	// "xconn" on the PATH, as the snippets name it.
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("XCONN_API_KEY", "")
	place := strings.NewReplacer("http://127.0.0.1:8080", "http://"+addr, "/home/you", home)
	for i, e := range entries {
		cmd := exec.Command(e.Command, func() []string {
			var args []string
			for _, a := range e.Args {
				args = append(args, place.Replace(a))
			}
			return args
		}()...)
		cmd.Env = os.Environ()
		for k, v := range e.Env {
			if strings.HasPrefix(v, "the key in ") { // the README's placeholder for the key itself
				v = apiKey
			}
			cmd.Env = append(cmd.Env, k+"="+place.Replace(v))
		}
		var stderr syncBuffer
		cmd.Stderr = &stderr
		cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "readme", Version: "1"}, nil).Connect(cctx, &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			cancel()
			t.Fatalf("snippet %d: connect: %v\n%s", i, err, stderr.String())
		}
		waitMCPTool(t, cs, telegram.ToolSend)
		text := fmt.Sprintf("hello from snippet %d", i)
		if res, body := mcpCall(t, cs, telegram.ToolSend, map[string]any{"text": text}); res.IsError {
			t.Fatalf("snippet %d: send: %s", i, body)
		}
		if _, err := fake.WaitSent(cctx, chatID, func(s []telegramtest.Sent) bool {
			return len(s) > 0 && s[len(s)-1].Text == text
		}); err != nil {
			t.Fatalf("snippet %d: the bot never posted %q: %v", i, text, err)
		}
		person := fmt.Sprintf("a person writes %d", i)
		fake.SendText(botToken, chatID, person)
		if msg := readOne(t, cs); msg.Text != person {
			t.Fatalf("snippet %d: read %+v, want %q", i, msg, person)
		}
		if err := cs.Close(); err != nil {
			t.Errorf("snippet %d: close: %v", i, err)
		}
		cancel()
		for _, secret := range []string{apiKey, botToken} {
			if strings.Contains(stderr.String(), secret) {
				t.Errorf("snippet %d: the log holds a secret", i)
			}
		}
		if !strings.Contains(stderr.String(), "serving MCP on stdin/stdout") {
			t.Errorf("snippet %d: stderr:\n%s", i, stderr.String())
		}
	}
}
