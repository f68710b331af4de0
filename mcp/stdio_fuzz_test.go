package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a bytes.Buffer safe for the writer goroutine and the
// test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// FuzzStdioLines: whatever a client writes, the stdio transport never
// fails: every non-blank line is either handed on as a message or
// answered with exactly one JSON-RPC error, and everything it writes is a
// JSON-RPC 2.0 error line.
func FuzzStdioLines(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		"not json\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
		`{"jsonrpc":"2.0","id":"x","method":7}`,
		"[]\n42\n\"s\"\nnull",
		`{"jsonrpc":"2.0","id":{"a":1},"method":"x"}`,
		strings.Repeat("a", 300),
		"\r\n\n  \n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := &lockedBuffer{}
		tr := &stdioTransport{r: strings.NewReader(in), w: out, maxLine: 256, log: slog.New(slog.DiscardHandler),
			maxQueued: 1 << 16, maxBytes: 1 << 26}
		conn, err := tr.Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		passed := 0
		for {
			_, err := conn.Read(context.Background())
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			passed++
		}
		conn.Close()
		replies := 0
		for _, line := range strings.Split(strings.TrimSuffix(out.b.String(), "\n"), "\n") {
			if line == "" {
				continue
			}
			var r struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   *struct {
					Code int64 `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil || r.JSONRPC != "2.0" || r.Error == nil || len(r.ID) == 0 {
				t.Fatalf("the transport wrote %q", line)
			}
			replies++
		}
		lines := 0
		for _, l := range strings.Split(in, "\n") {
			if strings.TrimSpace(l) != "" || len(l) > 256 {
				lines++
			}
		}
		if passed+replies != lines {
			t.Fatalf("%d lines in, %d passed and %d answered", lines, passed, replies)
		}
	})
}
