package feishu

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connectors/feishu/feishutest"
	"github.com/xconn/xconn/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testKey    = "feishu-test-key-3b9e1c7a5d20f4"
	testApp    = "cli_a1b2c3d4e5f6a7b8"
	testSecret = "s3cretAppSecretValue0123456789ab"
	testChat   = "oc_p2p_alice"
	groupChat  = "oc_group_team"
	wait       = 45 * time.Second // generous: CI machines are loaded (a 15 s wait failed once there)
)

var login = map[string]string{"app_id": testApp, "app_secret": testSecret}

func newFake(t *testing.T) (*feishutest.Server, string) {
	t.Helper()
	f := feishutest.New()
	f.AddApp(testApp, testSecret)
	u := f.Start()
	t.Cleanup(f.Close)
	return f, u
}

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type conn struct {
	t      *testing.T
	c      *Connector
	base   string
	logs   *logBuf
	cancel context.CancelFunc
	done   chan error
}

func startConn(t *testing.T, dir, apiURL, addr string, mod func(*Options)) *conn {
	t.Helper()
	logs := &logBuf{}
	opts := Options{
		SDK: connector.Options{DataDir: dir, APIKey: testKey,
			Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))},
		APIURL: apiURL, AccountsURL: apiURL, EditInterval: 20 * time.Millisecond, MaxRetryWait: 3 * time.Second,
		Transport: &http.Transport{DisableKeepAlives: true},
	}
	if mod != nil {
		mod(&opts)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cn := &conn{t: t, c: c, base: "http://" + ln.Addr().String(), logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { cn.done <- c.Server().Serve(ctx, ln) }()
	t.Cleanup(cn.stop)
	return cn
}

func (cn *conn) stop() {
	cn.t.Helper()
	if cn.done == nil {
		return
	}
	cn.cancel()
	select {
	case err := <-cn.done:
		if err != nil {
			cn.t.Errorf("Serve: %v", err)
		}
	case <-time.After(wait):
		cn.t.Errorf("Serve did not return")
	}
	cn.done = nil
	if strings.Contains(cn.logs.String(), testSecret) {
		cn.t.Errorf("the app secret is in the logs")
	}
	if strings.Contains(cn.logs.String(), "t-") && strings.Contains(cn.logs.String(), "tenant_access_token") {
		cn.t.Errorf("a tenant token may be in the logs")
	}
}

func (cn *conn) dial(t *testing.T) *connectortest.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cl, _, err := connectortest.Connect(ctx, cn.base, testKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func signIn(t *testing.T, cl *connectortest.Client, input map[string]string) (string, *protocol.AuthStatePayload) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	open, err := cl.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := cl.SignInForm(ctx, open.ConnectorChannelID, FlowApp, input)
	if err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	return open.ConnectorChannelID, st
}

// nextChat waits for the connector's next chat.message on ch, acks it
// accepted and returns it.
func nextChat(t *testing.T, cl *connectortest.Client, ch string) protocol.ChatMessagePayload {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	env, err := cl.NextMatch(ctx, func(e *protocol.Envelope) bool {
		return e.Type == protocol.TypeChatMessage && e.ConnectorChannelID == ch
	})
	if err != nil {
		t.Fatalf("no chat.message: %v", err)
	}
	var p protocol.ChatMessagePayload
	if err := env.DecodePayload(&p); err != nil {
		t.Fatal(err)
	}
	ack, _ := connectortest.Packet(protocol.TypeChatMessageAck, ch, protocol.ChatAckPayload{MessageID: p.MessageID, Status: protocol.AckAccepted})
	ack.ReplyTo = env.PacketID
	if err := cl.Send(ctx, ack); err != nil {
		t.Fatal(err)
	}
	return p
}

func sendFinal(t *testing.T, cl *connectortest.Client, ch string, p protocol.ChatMessagePayload) protocol.ChatAckPayload {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	env, err := connectortest.Packet(protocol.TypeChatMessage, ch, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Send(ctx, env); err != nil {
		t.Fatal(err)
	}
	ack, err := cl.NextMatch(ctx, func(e *protocol.Envelope) bool {
		return e.Type == protocol.TypeChatMessageAck && e.ReplyTo == env.PacketID
	})
	if err != nil {
		t.Fatalf("no ack for %s: %v", p.MessageID, err)
	}
	var a protocol.ChatAckPayload
	if err := ack.DecodePayload(&a); err != nil {
		t.Fatal(err)
	}
	return a
}

func send(t *testing.T, cl *connectortest.Client, typ, ch string, payload any) {
	t.Helper()
	env, err := connectortest.Packet(typ, ch, payload)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Send(t.Context(), env); err != nil {
		t.Fatal(err)
	}
}

func (cn *conn) upload(t *testing.T, ch, name, mimeType string, data []byte) string {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	h := map[string][]string{"Content-Disposition": {fmt.Sprintf(`form-data; name="file"; filename=%q`, name)}, "Content-Type": {mimeType}}
	part, _ := mw.CreatePart(h)
	part.Write(data)
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, cn.base+"/files/uploads", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("X-XAgent-Connector-Channel-ID", ch)
	hc := &http.Client{Timeout: wait, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out struct {
		FileRef string `json:"file_ref"`
	}
	if res.StatusCode/100 != 2 || json.Unmarshal(raw, &out) != nil || out.FileRef == "" {
		t.Fatalf("upload: HTTP %d %s", res.StatusCode, raw)
	}
	return out.FileRef
}

func (cn *conn) fetch(t *testing.T, u string) []byte {
	t.Helper()
	if strings.HasPrefix(u, "/") {
		u = cn.base + u
	}
	hc := &http.Client{Timeout: wait, Transport: &http.Transport{DisableKeepAlives: true}}
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d", u, res.StatusCode)
	}
	return b
}

func waitSent(t *testing.T, f *feishutest.Server, chat, what string, cond func([]feishutest.Sent) bool) []feishutest.Sent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	got, err := f.WaitSent(ctx, chat, cond)
	if err != nil {
		t.Fatalf("not within %v: %s; sent %+v", wait, what, got)
	}
	return got
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", wait, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// say makes alice write text to the bot directly.
func say(t *testing.T, f *feishutest.Server, text string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	id, err := f.SendText(ctx, testApp, testChat, text)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
