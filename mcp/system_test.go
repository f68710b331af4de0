package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/mcp"
	"github.com/xconn/xconn/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	testAPIKey     = "mcp-test-api-key-9f3e2a"
	testAccessCode = "secret-room-code-71d0"
)

// system is a web chat connector on loopback, a host whose Agent is an
// mcp.Inbox, and an mcp.Server in front of it. Everything the host, the
// connector and the SDK log goes to logs.
type system struct {
	t        testing.TB
	dir      string
	baseURL  string
	hdb      *store.DB
	host     *host.Host
	inbox    *mcp.Inbox
	srv      *mcp.Server
	logs     *syncBuffer
	stopHost func()
	mods     []func(*mcp.Options)
	cardID   string
	// secrets must never be in the logs nor in what the server sends.
	secrets []string
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newSystem starts a system; mods adjust the mcp.Options of its server.
func newSystem(t testing.TB, mods ...func(*mcp.Options)) *system {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := &system{t: t, dir: t.TempDir(), logs: &syncBuffer{}, mods: mods}
	log := slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	cdb, err := store.Open(ctx, "sqlite:"+filepath.Join(s.dir, "webchat.db"), store.Options{DataDir: s.dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cdb.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.baseURL = "http://" + ln.Addr().String()
	conn, err := webchat.New(webchat.Options{SDK: connector.Options{Store: cdb, APIKey: testAPIKey,
		DataDir: filepath.Join(s.dir, "files"), Logger: log}, PublicURL: s.baseURL})
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Server().Start(ctx); err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- conn.Server().Serve(sctx, ln) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("connector: %v", err)
		}
	})
	s.admit(ctx, log, webchat.CardID)
	return s
}

// admit starts the host and the MCP server and admits the connector at
// s.baseURL (of Card cardID) with testAPIKey; at the end of the test the
// host's and server's logs must hold none of s.secrets.
func (s *system) admit(ctx context.Context, log *slog.Logger, cardID string) {
	t := s.t
	var err error
	s.cardID = cardID
	s.secrets = append(s.secrets, testAPIKey, testAccessCode)
	s.hdb, err = store.Open(ctx, "sqlite:"+filepath.Join(s.dir, "host.db"), store.Options{DataDir: s.dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.hdb.Close() })
	s.startHost(ctx, log)
	if _, err := s.host.Admit(ctx, s.baseURL, testAPIKey); err != nil {
		t.Fatalf("admit: %v", err)
	}
	s.waitOnline(ctx)
	s.srv.Changed()
	t.Cleanup(func() {
		for _, secret := range s.secrets {
			if strings.Contains(s.logs.String(), secret) {
				t.Errorf("the secret %q is in the logs", secret)
			}
		}
	})
}

// startHost starts a host and an MCP server on the system's host store
// (again after stopHost: a restart).
func (s *system) startHost(ctx context.Context, log *slog.Logger) {
	t := s.t
	s.inbox = mcp.NewInbox(mcp.InboxOptions{})
	var srv *mcp.Server
	var mu sync.Mutex
	h, err := host.New(host.Options{Store: s.hdb, Delivery: s.hdb, Agent: s.inbox, Logger: log,
		FilesDir: filepath.Join(s.dir, "host-files"), ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond,
		OnEvent: func(host.Event) {
			mu.Lock()
			defer mu.Unlock()
			if srv != nil {
				srv.Changed()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	mo := mcp.Options{Host: h, Inbox: s.inbox, UserID: "ann", Logger: log}
	for _, mod := range s.mods {
		mod(&mo)
	}
	m, err := mcp.New(ctx, mo)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	srv = m
	mu.Unlock()
	s.host, s.srv = h, m
	var once sync.Once
	s.stopHost = func() {
		once.Do(func() {
			m.Close()
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := h.Close(cctx); err != nil {
				t.Errorf("host close: %v", err)
			}
		})
	}
	t.Cleanup(s.stopHost)
}

func (s *system) waitOnline(ctx context.Context) {
	for {
		if c, ok := s.host.Connector(s.cardID); ok && c.Link == host.LinkOnline {
			return
		}
		if ctx.Err() != nil {
			s.t.Fatal("the data plane did not come online")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// client is an MCP client session of the official Go SDK on an in-memory
// transport; it records every JSON-RPC message both ways and the
// resources/updated notifications.
type client struct {
	t            testing.TB
	cs           *sdk.ClientSession
	wire         *syncBuffer
	updated      chan string
	toolsChanged chan struct{}
	progress     chan *sdk.ProgressNotificationParams
}

func (s *system) connect() *client {
	t := s.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := &client{t: t, wire: &syncBuffer{}, updated: make(chan string, 64), toolsChanged: make(chan struct{}, 64),
		progress: make(chan *sdk.ProgressNotificationParams, 64)}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := s.srv.SDK().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cl := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			select {
			case c.updated <- r.Params.URI:
			default:
			}
		},
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			select {
			case c.progress <- r.Params:
			default:
			}
		},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case c.toolsChanged <- struct{}{}:
			default:
			}
		},
	})
	c.cs, err = cl.Connect(ctx, &sdk.LoggingTransport{Transport: ct, Writer: c.wire}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.cs.Close()
		ss.Wait()
		if !strings.Contains(c.wire.String(), "read: ") {
			t.Error("no message of the server was recorded: the secrets scan saw nothing")
		}
		// What the server sent (the client's "read:" lines) never holds
		// a secret; the client itself sends the access code to sign in.
		for _, line := range strings.Split(c.wire.String(), "\n") {
			if !strings.HasPrefix(line, "read: ") {
				continue
			}
			for _, secret := range s.secrets {
				if strings.Contains(line, secret) {
					t.Errorf("an MCP message from the server holds the secret %q: %.200s", secret, line)
				}
			}
		}
	})
	return c
}

// call runs a tool and returns its result and its first text content.
func (c *client) call(name string, args any) (*sdk.CallToolResult, string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		c.t.Fatalf("call %s: %v", name, err)
	}
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*sdk.TextContent); ok {
			text = tc.Text
		}
	}
	return res, text
}

// mustCall is call that fails the test on a tool error.
func (c *client) mustCall(name string, args any) (*sdk.CallToolResult, string) {
	c.t.Helper()
	res, text := c.call(name, args)
	if res.IsError {
		c.t.Fatalf("%s: tool error %s", name, text)
	}
	return res, text
}

func (c *client) toolNames() map[string]*sdk.Tool {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[string]*sdk.Tool{}
	for tool, err := range c.cs.Tools(ctx, nil) {
		if err != nil {
			c.t.Fatal(err)
		}
		out[tool.Name] = tool
	}
	return out
}

// waitTool waits until tools/list has name.
func (c *client) waitTool(name string) *sdk.Tool {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if tool := c.toolNames()[name]; tool != nil {
			return tool
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("tool %s never listed", name)
	return nil
}

// browser is a web chat page in a room.
type browser struct {
	t      testing.TB
	c      *http.Client
	base   string
	room   string
	events chan sseEvent
}

type sseEvent struct{ Type, Data string }

func (s *system) browser(room, code string) *browser {
	t := s.t
	t.Helper()
	jar, _ := cookiejar.New(nil)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	b := &browser{t: t, c: &http.Client{Jar: jar, Transport: tr, Timeout: 30 * time.Second}, base: s.baseURL, room: room}
	res, err := b.c.PostForm(s.baseURL+"/webchat/rooms/"+room, url.Values{"access_code": {code}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("enter room: %s", res.Status)
	}
	sc := *b.c
	sc.Timeout = 0
	res, err = sc.Get(s.baseURL + "/webchat/api/events?room=" + room)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		t.Fatalf("events: %s", res.Status)
	}
	b.events = make(chan sseEvent, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		br := bufio.NewReader(res.Body)
		var ev sseEvent
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "":
				if ev.Type != "" {
					select {
					case b.events <- ev:
					default:
					}
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.Type = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.Data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	t.Cleanup(func() { res.Body.Close(); <-done })
	return b
}

func (b *browser) post(text string) string {
	b.t.Helper()
	body, _ := json.Marshal(map[string]string{"text": text})
	res, err := b.c.Post(b.base+"/webchat/api/messages?room="+b.room, "application/json", bytes.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		MessageID string `json:"message_id"`
	}
	json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode != http.StatusAccepted {
		b.t.Fatalf("post: %s", res.Status)
	}
	return out.MessageID
}

// assistantTexts reads the page's events until n assistant messages came.
func (b *browser) assistantTexts(n int) []string {
	b.t.Helper()
	var out []string
	timeout := time.After(15 * time.Second)
	for len(out) < n {
		select {
		case ev := <-b.events:
			if ev.Type != webchat.EventMessage {
				continue
			}
			var m webchat.MessageEvent
			json.Unmarshal([]byte(ev.Data), &m)
			if m.From == "assistant" {
				out = append(out, m.Text)
			}
		case <-timeout:
			b.t.Fatalf("timed out with %d of %d assistant messages: %q", len(out), n, out)
		}
	}
	return out
}

// signInRoom signs ann in to a room through channel_sign_in and returns
// the connector_channel_id.
func (c *client) signInRoom(room string) string {
	c.t.Helper()
	_, text := c.mustCall(mcp.ToolSignIn, map[string]any{"connector_card_id": webchat.CardID, "flow_id": webchat.FlowRoom,
		"input": map[string]string{"room": room, "access_code": testAccessCode}})
	var v struct {
		Status  string `json:"status"`
		Channel *struct {
			ChannelID string `json:"connector_channel_id"`
		} `json:"channel"`
	}
	if err := json.Unmarshal([]byte(text), &v); err != nil || v.Status != "authenticated" || v.Channel == nil {
		c.t.Fatalf("sign-in result %s", text)
	}
	return v.Channel.ChannelID
}
