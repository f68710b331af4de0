package wechat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connectors/wechat"
	"github.com/xconn/xconn/connectors/wechat/wechattest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	apiKey = "wechat-test-api-key-0123456789"
	wait   = 15 * time.Second
)

// syncBuf is a log sink safe for concurrent writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// rig is a fake iLink server and the connector pointed at it.
type rig struct {
	t    *testing.T
	fake *wechattest.Server
	db   *store.DB
	logs *syncBuf
	opts wechat.Options
	conn *wechat.Connector
	http *httptest.Server
	base string
}

func newRig(t *testing.T, fo wechattest.Options, mod func(*wechat.Options)) *rig {
	t.Helper()
	if fo.LongPoll == 0 {
		fo.LongPoll = 500 * time.Millisecond
	}
	fake, err := wechattest.Start(fo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	r := &rig{t: t, fake: fake, db: connectortest.NewStore(t), logs: &syncBuf{}}
	r.opts = wechat.Options{APIURL: fake.URL, CDNURL: fake.CDNURL, QRPollInterval: 50 * time.Millisecond,
		RetryDelay: 50 * time.Millisecond, RetryBackoff: 200 * time.Millisecond, TypingInterval: 100 * time.Millisecond,
		HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	if mod != nil {
		mod(&r.opts)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("connector log:\n%s", r.logs.String())
		}
	})
	r.start()
	return r
}

// start runs the connector on the rig's store (again after stop).
func (r *rig) start() {
	t := r.t
	t.Helper()
	o := r.opts
	o.SDK = connector.Options{Store: r.db, APIKey: apiKey, DataDir: t.TempDir(), SigningKey: bytes.Repeat([]byte{7}, 32),
		Logger:     slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		AckTimeout: 2 * time.Second}
	conn, err := wechat.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Server().Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.conn = conn
	r.http = httptest.NewServer(conn.Server())
	r.base = r.http.URL
	t.Cleanup(r.stop)
}

// stop closes the connector and its HTTP server.
func (r *rig) stop() {
	if r.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := r.conn.Server().Close(ctx); err != nil {
		r.t.Errorf("close: %v", err)
	}
	r.http.CloseClientConnections()
	r.http.Close()
	r.conn = nil
}

// client connects a data-plane client and closes it with the test.
func (r *rig) client() *connectortest.Client {
	r.t.Helper()
	c, _, err := connectortest.Connect(r.t.Context(), r.base, apiKey)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Close() })
	return c
}

// open opens a new channel on c.
func (r *rig) open(c *connectortest.Client) string {
	r.t.Helper()
	ack, err := c.Open(r.t.Context(), "")
	if err != nil {
		r.t.Fatal(err)
	}
	return ack.ConnectorChannelID
}

// openURL plays the user's phone: it opens the QR code's URL.
func openURL(ctx context.Context, qr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, qr, nil)
	if err != nil {
		return err
	}
	res, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("QR URL: HTTP %d", res.StatusCode)
	}
	return nil
}

// signIn signs a new channel in by opening the QR URL.
func (r *rig) signIn(c *connectortest.Client) (string, *protocol.AuthStatePayload) {
	r.t.Helper()
	ch := r.open(c)
	ctx, cancel := context.WithTimeout(r.t.Context(), wait)
	defer cancel()
	st, err := c.SignInQR(ctx, ch, wechat.FlowQR, openURL)
	if err != nil {
		r.t.Fatalf("sign-in: %v", err)
	}
	return ch, st
}

// fetch downloads a published file's download_url.
func (r *rig) fetch(u string) []byte {
	r.t.Helper()
	if strings.HasPrefix(u, "/") {
		u = r.base + u
	}
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Authorization", "Bearer "+apiKey)
	res, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		r.t.Fatalf("GET download_url: HTTP %d", res.StatusCode)
	}
	return b
}

// upload puts a file on the channel's transfer plane as xAgent does and
// returns its file_ref.
func (r *rig) upload(channel, name, mimeType string, data []byte) string {
	r.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	h := make(map[string][]string)
	h["Content-Disposition"] = []string{fmt.Sprintf(`form-data; name="file"; filename=%q`, name)}
	h["Content-Type"] = []string{mimeType}
	w, _ := mw.CreatePart(h)
	w.Write(data)
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, r.base+protocol.PathFileUploads, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set(protocol.HeaderChannelID, channel)
	req.Header.Set("Authorization", "Bearer "+apiKey)
	res, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	var ur protocol.UploadResponse
	if err := json.NewDecoder(res.Body).Decode(&ur); err != nil || ur.FileRef == "" {
		r.t.Fatalf("upload: HTTP %d, %v", res.StatusCode, err)
	}
	return ur.FileRef
}

// say sends an assistant final to the connector and returns its ack.
func say(t *testing.T, c *connectortest.Client, ch, id, text string, files ...protocol.ChatFile) protocol.ChatAckPayload {
	t.Helper()
	env, err := connectortest.Packet(protocol.TypeChatMessage, ch, protocol.ChatMessagePayload{MessageID: id, Text: text, Files: files})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	ack, err := c.RoundTrip(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	var p protocol.ChatAckPayload
	if err := ack.DecodePayload(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

// eventually polls cond until it holds or wait passes.
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

// noViolations requires that the fake saw only well-formed requests.
func (r *rig) noViolations() {
	r.t.Helper()
	if v := r.fake.Violations(); len(v) > 0 {
		r.t.Fatalf("the fake saw requests that break the fact sheet:\n%s", strings.Join(v, "\n"))
	}
}
