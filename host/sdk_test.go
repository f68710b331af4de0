package host

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// These tests run the host against the connector SDK over real sockets.

const sdkKey = "sdk-system-api-key-0123456789"

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

func sdkSignin(t *testing.T, th *testHost, user string) (string, *Signin) {
	t.Helper()
	s, err := th.Connect(ctxT(t), user, sdkfixture.FixtureCardID, sdkfixture.FlowTokenForm,
		map[string]string{"token": "good-token-value", "name": "Ann"})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	uc, err := s.Wait(ctxT(t))
	if err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	return uc.ID, s
}

func TestSDKEndToEnd(t *testing.T) {
	t.Parallel()
	fx := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{APIKey: sdkKey})
	logs := &syncBuf{}
	agent := &countingAgent{}
	var packets syncBuf
	th := newTestHost(t, "", func(o *Options) {
		o.OnPacket = func(dir protocol.Direction, _ string, env *protocol.Envelope) {
			b, _ := env.Encode()
			packets.Write(b)
			packets.Write([]byte("\n"))
		}
		o.Agent = agent
		o.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	c, err := th.Admit(ctxT(t), fx.URL, sdkKey)
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	if c.CardID != sdkfixture.FixtureCardID || len(c.Skill) == 0 {
		t.Fatalf("connector = %+v", c)
	}
	eventually(t, "online", func() bool { s, _ := th.Connector(c.CardID); return s.Link == LinkOnline })

	ucID, _ := sdkSignin(t, th, "ann")
	uc, _ := th.db.GetUserChannel(ctxT(t), ucID)
	ctx := ctxT(t)

	// Tools and invocation.
	defs, err := th.Tools(ctx, "ann", "")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, d := range defs {
		names[d.Name] = true
	}
	if !names[sdkfixture.ToolEcho] || !names[sdkfixture.ToolSum] {
		t.Fatalf("projected tools: %v", names)
	}
	res, err := th.Invoke(ctx, "ann", "", sdkfixture.ToolEcho,
		json.RawMessage(`{"connector_channel_id":"cch_not_this_one","text":"hi"}`), "call-1")
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	var echo sdkfixture.EchoOut
	_ = json.Unmarshal(res.Output, &echo)
	if echo.Echo != "hi" || echo.Channel != uc.ChannelID {
		t.Fatalf("echo = %+v (channel %s)", echo, uc.ChannelID)
	}
	if _, err := th.Invoke(ctx, "ann", "", sdkfixture.ToolSum, json.RawMessage(`{"connector_channel_id":"x","a":"no"}`), "call-2"); code(err) != protocol.CodeInvalidArguments {
		t.Fatalf("bad arguments: %v", err)
	}
	var progress atomic.Int32
	if _, err := th.Invoke(ctx, "ann", "", sdkfixture.ToolProgress, json.RawMessage(`{"connector_channel_id":"x"}`), "call-3",
		WithProgress(func(*protocol.ToolProgressPayload) { progress.Add(1) })); err != nil {
		t.Fatalf("progress tool: %v", err)
	}
	if progress.Load() != 2 {
		t.Fatalf("progress events = %d, want 2", progress.Load())
	}

	// Inbound text and file -> Echo agent -> deltas and a final with the file.
	ch, err := fx.Server.Channel(uc.ChannelID)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ch.Publish(ctx, connector.UserMessage{MessageID: "tg-1", Text: "hello there",
		Files: []connector.OutgoingFile{{Name: "note.txt", MimeType: "text/plain", Content: strings.NewReader("file content")}}})
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	var final connector.AssistantMessage
	defer func() {
		if t.Failed() {
			t.Logf("packets:\n%s", packets.String())
			t.Logf("connector logs:\n%s", fx.Logs.String())
		}
	}()
	eventually(t, "assistant final at the target", func() bool {
		msgs, _, _, _ := fx.Target.Snapshot()
		if len(msgs) == 1 {
			final = msgs[0]
		}
		return len(msgs) == 1
	})
	if final.Text != "You said: hello there" || len(final.Files) != 1 || string(fx.Target.FileBytes(final.Files[0].Ref)) != "file content" {
		t.Fatalf("final = %+v", final)
	}
	_, deltas, _, _ := fx.Target.Snapshot()
	if len(deltas) == 0 || deltas[len(deltas)-1].Assembled != final.Text {
		t.Fatalf("deltas %+v", deltas)
	}
	// The answer names the user message it answers (x-in-reply-to).
	if final.InReplyTo != "tg-1" || deltas[0].InReplyTo != "tg-1" {
		t.Fatalf("in reply to %q (final), %q (delta); want tg-1", final.InReplyTo, deltas[0].InReplyTo)
	}
	eventually(t, "thinking then idle at the target", func() bool {
		_, _, acts, _ := fx.Target.Snapshot()
		return len(acts) == 2 && acts[0].Status == protocol.ActivityThinking && acts[1].Status == protocol.ActivityIdle
	})
	eventually(t, "final outcome delivered", func() bool {
		o, ok, _ := th.FinalOutcome(ctx, ucID, final.MessageID)
		return ok && o.Kind == "delivered"
	})
	// The same target message again is a duplicate for the host.
	if _, err := ch.Publish(ctx, connector.UserMessage{MessageID: "tg-1", Text: "hello there",
		Files: []connector.OutgoingFile{{Name: "note.txt", MimeType: "text/plain", Content: strings.NewReader("file content")}}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if agent.n.Load() != 1 {
		t.Fatalf("agent saw %d messages", agent.n.Load())
	}

	// Logout keeps the record.
	if err := th.Logout(ctx, ucID); err != nil {
		t.Fatalf("Logout: %v", err)
	}
	got, _ := th.db.GetUserChannel(ctx, ucID)
	if got.Authenticated {
		t.Fatal("still authenticated after logout")
	}
	if defs, _ := th.Tools(ctx, "ann", ""); len(defs) != 0 {
		t.Fatalf("tools after logout: %v", defs)
	}

	// Secrets never reach the host's logs or packets in clear: the API key
	// and the target token (the fixture's canary) in particular.
	for _, secret := range []string{sdkKey, fx.Opts.Canary, "good-token-value"} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("host logs contain %q", secret)
		}
	}
	if strings.Contains(packets.String(), fx.Opts.Canary) {
		t.Fatal("a packet carried the target token")
	}
}

func TestSDKQRSignin(t *testing.T) {
	t.Parallel()
	fx := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{APIKey: sdkKey})
	th := newTestHost(t, "", nil)
	if _, err := th.Admit(ctxT(t), fx.URL, sdkKey); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	s, err := th.Connect(ctx, "bo", sdkfixture.FixtureCardID, sdkfixture.FlowQR, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := s.State()
	u, err := url.Parse(st.QRCodeText)
	if err != nil || u.Query().Get("t") == "" {
		t.Fatalf("QR text = %q", st.QRCodeText)
	}
	token := u.Query().Get("t")
	if err := fx.Server.AuthScanned(ctx, token); err != nil {
		t.Fatal(err)
	}
	eventually(t, "scanned", func() bool { return s.State().Status == protocol.AuthScanned })
	if ucs, _ := th.Channels(ctx, "bo", ""); len(ucs) != 0 {
		t.Fatal("persisted before authentication")
	}
	if err := fx.Server.AuthComplete(ctx, token, connector.Binding{Data: []byte("qr-binding-token-xyz"), DisplayName: "Bo"}); err != nil {
		t.Fatal(err)
	}
	uc, err := s.Wait(ctx)
	if err != nil || !uc.Authenticated {
		t.Fatalf("QR sign-in: %+v %v", uc, err)
	}
}

func TestSDKRestartsDeliverPendingOnce(t *testing.T) {
	t.Parallel()
	st := connectortest.NewStore(t)
	dataDir := t.TempDir()
	fx1 := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{APIKey: sdkKey, Store: st, DataDir: dataDir})
	var current atomic.Pointer[sdkfixture.Fixture]
	current.Store(fx1)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		current.Load().Server.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)

	hostDir := t.TempDir()
	agent := &countingAgent{}
	th := newTestHost(t, hostDir, func(o *Options) { o.Agent = agent })
	if _, err := th.Admit(ctxT(t), proxy.URL, sdkKey); err != nil {
		t.Fatal(err)
	}
	ucID, _ := sdkSignin(t, th, "cy")
	uc, _ := th.db.GetUserChannel(ctxT(t), ucID)
	th.stop(t) // the host goes away

	// A user message arrives while no host is connected.
	ch, err := fx1.Server.Channel(uc.ChannelID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Publish(ctxT(t), connector.UserMessage{MessageID: "while-away", Text: "are you there"}); err != nil {
		t.Fatal(err)
	}
	// The connector restarts: a new server instance on the same store
	// (and data directory, which one server holds at a time).
	fx1.Close()
	fx2 := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{APIKey: sdkKey, Store: st, DataDir: dataDir})
	current.Store(fx2)

	th2 := newTestHost(t, hostDir, func(o *Options) { o.Agent = agent })
	eventually(t, "message delivered after both restarts", func() bool { return agent.n.Load() >= 1 })
	eventually(t, "echo at the new instance's target", func() bool {
		msgs, _, _, _ := fx2.Target.Snapshot()
		return len(msgs) == 1 && msgs[0].Text == "You said: are you there"
	})
	time.Sleep(100 * time.Millisecond)
	if agent.n.Load() != 1 {
		t.Fatalf("agent got the message %d times", agent.n.Load())
	}
	got, _ := th2.db.GetUserChannel(ctxT(t), ucID)
	if got.ChannelID != uc.ChannelID || !got.Authenticated {
		t.Fatalf("channel after restarts: %+v", got)
	}
	c, _ := th2.Connector(sdkfixture.FixtureCardID)
	if c.ConnectorID == "" {
		t.Fatal("no connector id")
	}
}

func TestSDKNewConnectorIDReplacesClient(t *testing.T) {
	t.Parallel()
	fx1 := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{APIKey: sdkKey})
	var current atomic.Pointer[sdkfixture.Fixture]
	current.Store(fx1)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		current.Load().Server.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	th := newTestHost(t, "", nil)
	if _, err := th.Admit(ctxT(t), proxy.URL, sdkKey); err != nil {
		t.Fatal(err)
	}
	ucID, _ := sdkSignin(t, th, "di")
	before, _ := th.Connector(sdkfixture.FixtureCardID)
	eventually(t, "connector id", func() bool { c, _ := th.Connector(sdkfixture.FixtureCardID); before = c; return c.ConnectorID != "" })

	fx2 := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{APIKey: sdkKey}) // fresh state
	current.Store(fx2)
	fx1.Close()
	eventually(t, "new connector id", func() bool {
		c, _ := th.Connector(sdkfixture.FixtureCardID)
		return c.ConnectorID != before.ConnectorID && c.Link == LinkOnline
	})
	all, _ := th.db.ListCatalog(ctxT(t))
	if len(all) != 1 {
		t.Fatalf("%d catalog records", len(all))
	}
	// The forgotten channel was reopened under a new id, unauthenticated.
	eventually(t, "channel re-identified", func() bool {
		got, _ := th.db.GetUserChannel(ctxT(t), ucID)
		return !got.Authenticated
	})
	if _, err := th.Invoke(ctxT(t), "di", "", sdkfixture.ToolEcho, json.RawMessage(`{"text":"x"}`), "c"); err == nil {
		t.Fatal("a tool ran on a channel the new instance does not know")
	}
}
