package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
	"github.com/xconn/xconn/connectors/telegram/telegramtest"
	"github.com/xconn/xconn/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testKey   = "telegram-test-key-8c1d5e0b7a93f2"
	testToken = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
	testChat  = int64(424242)
	otherChat = int64(515151)
	wait      = 15 * time.Second
)

var login = map[string]string{"bot_token": testToken, "chat_id": fmt.Sprint(testChat)}

// newFake starts a fake Bot API with the test bot and two chats.
func newFake(t *testing.T) (*telegramtest.Server, string) {
	t.Helper()
	f := telegramtest.New()
	f.AddBot(testToken, telegramtest.Bot{ID: 123456789, Username: "xconn_test_bot", FirstName: "Test Bot"})
	f.AddChat(telegramtest.Chat{ID: testChat, FirstName: "Alice"})
	f.AddChat(telegramtest.Chat{ID: otherChat, FirstName: "Bob"})
	url := f.Start()
	t.Cleanup(f.Close)
	return f, url
}

// logBuf collects the connector's log lines.
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

// conn is the connector under test, served on a loopback listener.
type conn struct {
	t      *testing.T
	c      *Connector
	base   string
	logs   *logBuf
	cancel context.CancelFunc
	done   chan error
}

// startConn runs the connector with data dir dir against the Bot API at
// apiURL on addr ("127.0.0.1:0" picks a port); mod may adjust Options.
func startConn(t *testing.T, dir, apiURL, addr string, mod func(*Options)) *conn {
	t.Helper()
	logs := &logBuf{}
	opts := Options{
		SDK: connector.Options{DataDir: dir, APIKey: testKey,
			Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))},
		APIURL: apiURL, PollTimeout: 2 * time.Second, EditInterval: 50 * time.Millisecond, MaxRetryWait: 3 * time.Second,
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

// stop ends Serve and requires it to return nil.
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
	if strings.Contains(cn.logs.String(), testToken) {
		cn.t.Errorf("the bot token is in the logs:\n%s", cn.logs.String())
	}
}

// dial connects a host-side test client.
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

// signIn opens a channel and signs it in with input.
func signIn(t *testing.T, cl *connectortest.Client, input map[string]string) (string, *protocol.AuthStatePayload) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	open, err := cl.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := cl.SignInForm(ctx, open.ConnectorChannelID, FlowBot, input)
	if err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	return open.ConnectorChannelID, st
}

// sendFinal sends an assistant chat.message and returns its ack.
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

// send writes a packet without waiting for an answer.
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

// upload posts a file to the connector's /files/uploads for channel ch,
// as xAgent does before a final message, and returns the file_ref.
func (cn *conn) upload(t *testing.T, ch, name, mimeType string, data []byte) string {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	h := make(map[string][]string)
	h["Content-Disposition"] = []string{fmt.Sprintf(`form-data; name="file"; filename=%q`, name)}
	h["Content-Type"] = []string{mimeType}
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
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusCreated || json.Unmarshal(raw, &out) != nil || out.FileRef == "" {
		t.Fatalf("upload: HTTP %d %s", res.StatusCode, raw)
	}
	return out.FileRef
}

// fetch GETs a download_url of the connector (relative or absolute).
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

// waitSent waits until cond holds for what the bot posted in chat.
func waitSent(t *testing.T, f *telegramtest.Server, chat int64, what string, cond func([]telegramtest.Sent) bool) []telegramtest.Sent {
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

func telegramtestBot(id int64, username string) telegramtest.Bot {
	return telegramtest.Bot{ID: id, Username: username, FirstName: username}
}

// connectorOptions are SDK options for a connector that is built but not
// served.
func connectorOptions(t *testing.T) connector.Options {
	return connector.Options{DataDir: t.TempDir(), APIKey: testKey}
}

// signInMessage is the message of a failed sign-in.
func signInMessage(err error) string {
	var se *connectortest.SignInError
	if errors.As(err, &se) {
		return se.State.Message
	}
	return ""
}
