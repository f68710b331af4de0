package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xconn/xconn/mcp"
)

// rawSession is a stdio session of the server driven line by line, as a
// buggy client would.
type rawSession struct {
	t    testing.TB
	in   *io.PipeWriter // the server's stdin
	out  *bufio.Reader  // the server's stdout
	outR *io.PipeReader
	done chan error // Run's result
}

func (s *system) rawStdio() *rawSession {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := &rawSession{t: s.t, in: inW, out: bufio.NewReader(outR), outR: outR, done: make(chan error, 1)}
	go func() { r.done <- s.srv.Run(context.Background(), s.srv.StdioTransport(inR, outW)) }()
	s.t.Cleanup(func() {
		inW.Close()
		outR.Close()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			s.t.Error("the stdio session did not end")
		}
	})
	return r
}

func (r *rawSession) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// rpcReply is a JSON-RPC response as it came on the wire.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Method string `json:"method"`
}

// recv returns the next response, skipping notifications.
func (r *rawSession) recv() rpcReply {
	r.t.Helper()
	type result struct {
		line string
		err  error
	}
	for {
		ch := make(chan result, 1)
		go func() {
			line, err := r.out.ReadString('\n')
			ch <- result{line, err}
		}()
		select {
		case res := <-ch:
			if res.err != nil {
				r.t.Fatalf("read: %v", res.err)
			}
			var rep rpcReply
			if err := json.Unmarshal([]byte(res.line), &rep); err != nil {
				r.t.Fatalf("the server wrote a line that is not JSON: %q", res.line)
			}
			if rep.Method != "" {
				continue
			}
			return rep
		case <-time.After(10 * time.Second):
			r.t.Fatal("no response within 10s")
		}
	}
}

func (r *rawSession) initialize() {
	r.t.Helper()
	r.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if rep := r.recv(); rep.Error != nil || string(rep.ID) != `"init"` {
		r.t.Fatalf("initialize: %+v", rep)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// toolText is the first text content of a tools/call result.
func toolText(t *testing.T, rep rpcReply) (bool, string) {
	t.Helper()
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if rep.Error != nil || json.Unmarshal(rep.Result, &res) != nil || len(res.Content) == 0 {
		t.Fatalf("tools/call reply %+v %s", rep.Error, rep.Result)
	}
	return res.IsError, res.Content[0].Text
}

// TestStdioBadInput: each malformed line is answered with a JSON-RPC
// error naming the problem, and the session goes on: a line that is not
// JSON, JSON that is not JSON-RPC, a line beyond MaxMessageBytes, an
// unknown method, an unknown tool, arguments beyond MaxArgumentBytes,
// arguments of the wrong type.
func TestStdioBadInput(t *testing.T) {
	s := newSystem(t)
	r := s.rawStdio()
	huge := strings.Repeat("a", mcp.DefaultMaxMessageBytes+10)
	for _, tc := range []struct {
		name, line string
		id         string
		code       int64
		msg        string
	}{
		{"not JSON", `this is not json`, "null", -32700, "parse error"},
		{"truncated", `{"jsonrpc":"2.0","id":5,"method":"ping"`, "null", -32700, "parse error"},
		{"method not a string", `{"jsonrpc":"2.0","id":6,"method":7}`, "6", -32600, "invalid request"},
		{"empty batch", `[]`, "null", -32600, "batches are not supported"},
		{"a number", `42`, "null", -32600, "invalid request"},
		{"too long", `{"jsonrpc":"2.0","id":8,"method":"ping","params":{"x":"` + huge + `"}}`, "null", -32600, fmt.Sprintf("larger than %d bytes", mcp.DefaultMaxMessageBytes)},
	} {
		r.send(tc.line)
		rep := r.recv()
		if string(rep.ID) != tc.id || rep.Error == nil || rep.Error.Code != tc.code || !strings.Contains(rep.Error.Message, tc.msg) {
			t.Errorf("%s: reply id %s error %+v; want id %s, code %d, %q", tc.name, rep.ID, rep.Error, tc.id, tc.code, tc.msg)
		}
	}
	// The session survived all of it.
	r.initialize()
	r.send(`{"jsonrpc":"2.0","id":10,"method":"bogus/method"}`)
	if rep := r.recv(); rep.Error == nil || rep.Error.Code != -32601 {
		t.Errorf("unknown method: %+v", rep)
	}
	r.send(`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`)
	if rep := r.recv(); rep.Error == nil || !strings.Contains(rep.Error.Message, "no_such_tool") {
		t.Errorf("unknown tool: %+v %s", rep.Error, rep.Result)
	}
	big := strings.Repeat("b", mcp.DefaultMaxArgumentBytes+1)
	r.send(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"messages_read","arguments":{"connector_channel_id":"` + big + `"}}}`)
	if isErr, text := toolText(t, r.recv()); !isErr || !strings.Contains(text, fmt.Sprintf("at most %d are taken", mcp.DefaultMaxArgumentBytes)) || len(text) > 1024 {
		t.Errorf("huge arguments: error %v, %.300s", isErr, text)
	}
	r.send(`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"messages_read","arguments":{"max":"ten"}}}`)
	if isErr, text := toolText(t, r.recv()); !isErr || !strings.Contains(text, "max an integer") {
		t.Errorf("wrong argument type: error %v, %s", isErr, text)
	}
	r.send(`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"connector_channels_list","arguments":{}}}`)
	if isErr, text := toolText(t, r.recv()); isErr || !strings.Contains(text, `"channels"`) {
		t.Errorf("a good call after the bad ones: %s", text)
	}
}

// TestStdioClientNeverReads: a stdio client that sends and never reads
// fills its bounded queue and loses its own session, with a warning; a
// second client of the same server is served all along.
func TestStdioClientNeverReads(t *testing.T) {
	s := newSystem(t, func(o *mcp.Options) { o.MaxQueuedMessages = 8 })
	r := s.rawStdio()
	other := s.connect()
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	sent := 0
	deadline := time.Now().Add(20 * time.Second)
	for ended := false; !ended; {
		select {
		case err := <-r.done:
			ended = true
			r.done <- err // for the cleanup
		default:
			if time.Now().After(deadline) {
				t.Fatalf("the session never ended after %d unread requests", sent)
			}
			sent++
			if _, err := io.WriteString(r.in, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", sent)); err != nil {
				ended = true // the session closed its stdin
			}
		}
		start := time.Now()
		other.mustCall(mcp.ToolChannelsList, nil)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("the other session waited %v behind the one that does not read", d)
		}
	}
	t.Logf("the session ended after %d unread requests", sent)
	if sent > 64 {
		t.Errorf("%d requests were taken before the session ended: the queue is not bounded", sent)
	}
	waitLog(t, s.logs, "the client does not read what the server sends")
}

func waitLog(t *testing.T, logs interface{ String() string }, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the log lacks %q", want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHTTPBadInput: over streamable HTTP a malformed body is a 400 that
// says "malformed payload", a body beyond MaxMessageBytes a 413, an unknown
// tool an error to the SDK client, and the session is still usable.
func TestHTTPBadInput(t *testing.T) {
	s := newSystem(t)
	const token = "bad-input-token-0123456789"
	h, err := s.srv.HTTPHandler(token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.srv.HTTPHandler("short"); err == nil {
		t.Error("a 5-byte token was taken")
	}
	ts := httptest.NewServer(h)
	defer ts.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	post := func(body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		return res.StatusCode, string(b)
	}
	if code, body := post(`{not json`); code != http.StatusBadRequest || !strings.Contains(body, "malformed payload") {
		t.Errorf("malformed body: %d %q", code, body)
	}
	if code, body := post(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("z", mcp.DefaultMaxMessageBytes) + `"}}`); code != http.StatusRequestEntityTooLarge {
		t.Errorf("huge body: %d %q", code, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := sdk.NewClient(&sdk.Implementation{Name: "http-test", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL,
		HTTPClient: &http.Client{Transport: bearer{token: token, base: tr}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "no_such_tool"})
	if err == nil || !strings.Contains(err.Error(), "no_such_tool") {
		t.Errorf("unknown tool: %v", err)
	}
	big := strings.Repeat("b", mcp.DefaultMaxArgumentBytes+1)
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolMessagesRead, Arguments: map[string]any{"connector_channel_id": big}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "at most") {
		t.Errorf("huge arguments: %v %+v", err, res)
	}
	if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolChannelsList}); err != nil || res.IsError {
		t.Errorf("a good call after the bad ones: %v", err)
	}
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}
