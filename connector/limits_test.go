package connector_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// rawWS dials the fixture's data plane with a plain WebSocket client, so
// that a test decides what it sends and whether it reads at all.
func rawWS(t *testing.T, url, apiKey string) *websocket.Conn {
	t.Helper()
	ws, err := dialRaw(testCtx(t), url, apiKey)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = ws.CloseNow() })
	return ws
}

func dialRaw(ctx context.Context, url, apiKey string) (*websocket.Conn, error) {
	h := http.Header{}
	if apiKey != "" {
		h.Set("Authorization", "Bearer "+apiKey)
	}
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+protocol.PathWS,
		&websocket.DialOptions{Subprotocols: []string{protocol.Subprotocol}, HTTPHeader: h})
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(64 << 20)
	return ws, nil
}

// frame encodes a packet of type typ with payload (nil: none).
func frame(t testing.TB, packetID, requestID, channel, typ string, payload any) []byte {
	t.Helper()
	env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: packetID, RequestID: requestID,
		ConnectorChannelID: channel, Type: typ}
	if payload != nil {
		b, err := json.Marshal(payload)
		if err != nil {
			t.Fatal(err)
		}
		env.Payload = b
	}
	b, err := env.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func helloPayload(f *sdkfixture.Fixture) protocol.HelloPayload {
	return protocol.HelloPayload{ConnectorCardID: f.Server.Card().ConnectorCardID, ProtocolVersion: protocol.ProtocolVersion,
		SupportedProfiles: []protocol.Profile{protocol.ProfileIMv2}}
}

// rawHello completes hello on ws and returns the connector_id.
func rawHello(t *testing.T, ws *websocket.Conn, f *sdkfixture.Fixture, connectorID string) string {
	t.Helper()
	p := helloPayload(f)
	p.ConnectorID = connectorID
	ctx := testCtx(t)
	if err := ws.Write(ctx, websocket.MessageText, frame(t, "hello-1", "req-hello", "", protocol.TypeHello, p)); err != nil {
		t.Fatal(err)
	}
	for {
		env := readEnv(t, ctx, ws)
		if env.Type == protocol.TypeHelloAck {
			return decode[protocol.HelloAckPayload](t, env).ConnectorID
		}
		if env.Type == protocol.TypeError {
			t.Fatalf("hello refused: %+v", env.Error)
		}
	}
}

func readEnv(t *testing.T, ctx context.Context, ws *websocket.Conn) *protocol.Envelope {
	t.Helper()
	_, b, err := ws.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var env protocol.Envelope
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return &env
}

// servesAnother checks that a well-behaved xAgent is served: hello, open,
// a tool call.
func servesAnother(t *testing.T, f *sdkfixture.Fixture) {
	t.Helper()
	c, _ := f.Connect(t, "")
	ctx := testCtx(t)
	ack, err := c.Open(ctx, "")
	if err != nil {
		t.Fatalf("open on another connection: %v", err)
	}
	if _, err := sdkfixture.SignIn(ctx, c, ack.ConnectorChannelID, "Ann"); err != nil {
		t.Fatalf("sign-in on another connection: %v", err)
	}
	out, err := connectortest.Invoke[sdkfixture.EchoOut](ctx, c, ack.ConnectorChannelID, sdkfixture.ToolEcho, sdkfixture.EchoIn{Text: "still here"})
	if err != nil || out.Echo != "still here" {
		t.Fatalf("echo on another connection = %+v, %v", out, err)
	}
	_ = c.Close()
}

// peakSampler records the peak of the queued bytes of the server's
// sockets and of the Go heap while it runs.
type peakSampler struct {
	stop          chan struct{}
	done          chan struct{}
	in, out, heap atomic.Uint64
}

func samplePeaks(srv *connector.Server) *peakSampler {
	p := &peakSampler{stop: make(chan struct{}), done: make(chan struct{})}
	setMax := func(a *atomic.Uint64, v uint64) {
		for {
			cur := a.Load()
			if v <= cur || a.CompareAndSwap(cur, v) {
				return
			}
		}
	}
	go func() {
		defer close(p.done)
		var ms runtime.MemStats
		for {
			in, out := srv.QueuedBytes()
			setMax(&p.in, uint64(in))
			setMax(&p.out, uint64(out))
			runtime.ReadMemStats(&ms)
			setMax(&p.heap, ms.HeapAlloc)
			select {
			case <-p.stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return p
}

func (p *peakSampler) end() { close(p.stop); <-p.done }

func heapNow() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestSilentPeerFloodIsBoundedByBytes is review item 1: one socket sends
// frames whose packet_id (echoed as reply_to in every answer) is 256 KiB
// and never reads. Before the byte bounds the control queue kept up to
// 1,024 such frames and the writer queue 256 answers (the review saw 40 MB
// grow to 1.79 GB); now the inbound and outbound queued bytes stay within
// InboundQueueBytes and SendQueueBytes, the heap within a few MiB of them,
// the socket is closed as "send queue full", and another xAgent is served.
func TestSilentPeerFloodIsBoundedByBytes(t *testing.T) {
	const (
		big   = 256 << 10
		bound = 1 << 20
	)
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Adjust: func(o *connector.Options) {
		o.MaxFrameBytes = big + 4096
		o.SendQueueBytes = bound
		o.InboundQueueBytes = bound
	}})
	base := heapNow()
	ws := rawWS(t, f.URL, "")
	flood := frame(t, strings.Repeat("p", big), "", "", protocol.TypeChannelOpen, struct{}{})
	peaks := samplePeaks(f.Server)
	ctx := testCtx(t)
	sent := 0
	for range 400 { // 100 MiB
		if ws.Write(ctx, websocket.MessageText, flood) != nil {
			break
		}
		sent++
	}
	eventually(t, "the flooding socket closed for its full send queue", func() bool {
		return strings.Contains(f.Logs.String(), "send queue full")
	})
	servesAnother(t, f)
	peaks.end()
	t.Logf("sent %d frames of %d KiB; peak queued in %d B, out %d B; heap peak %d KiB over a base of %d KiB",
		sent, big>>10, peaks.in.Load(), peaks.out.Load(), (peaks.heap.Load()-min(base, peaks.heap.Load()))>>10, base>>10)
	if in := peaks.in.Load(); in > bound+big+4096 {
		t.Errorf("peak inbound queued bytes %d, over InboundQueueBytes %d plus one frame", in, bound)
	}
	if out := peaks.out.Load(); out > bound+2*big+4096 {
		t.Errorf("peak outbound queued bytes %d, over SendQueueBytes %d plus one answer", out, bound)
	}
	if grow := peaks.heap.Load() - min(base, peaks.heap.Load()); grow > 48<<20 {
		t.Errorf("heap grew by %d MiB during the flood, want well under 48 MiB", grow>>20)
	}
}

// TestBurstOfOpensEveryRequestAnswered is review item 6: a burst of
// channel.open on one socket gets an answer for every request (an ack, or
// channel_busy when a queue is full), never silence, and the busy answers
// leave at most a few warning lines.
func TestBurstOfOpensEveryRequestAnswered(t *testing.T) {
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Adjust: func(o *connector.Options) {
		o.InboundQueueBytes = 16 << 10 // a small budget, so that the burst meets it
	}})
	ws := rawWS(t, f.URL, "")
	rawHello(t, ws, f, "")
	const n = 3000
	ctx := testCtx(t)
	answers := map[string]string{}
	readDone := make(chan error, 1)
	go func() {
		for len(answers) < n {
			_, b, err := ws.Read(ctx)
			if err != nil {
				readDone <- err
				return
			}
			var env protocol.Envelope
			if err := json.Unmarshal(b, &env); err != nil {
				readDone <- err
				return
			}
			code := "ok"
			if env.Error != nil {
				code = env.Error.Code
			}
			answers[env.RequestID] = code
		}
		readDone <- nil
	}()
	for i := range n {
		id := fmt.Sprintf("req-%d", i)
		if err := ws.Write(ctx, websocket.MessageText, frame(t, "pkt-"+id, id, "", protocol.TypeChannelOpen, struct{}{})); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if err := <-readDone; err != nil {
		t.Fatalf("after %d answers of %d: %v", len(answers), n, err)
	}
	busy := 0
	for id, code := range answers {
		switch code {
		case "ok":
		case string(protocol.CodeChannelBusy):
			busy++
		default:
			t.Errorf("%s answered %s, want an ack or channel_busy", id, code)
		}
	}
	lines := strings.Count(f.Logs.String(), "answered channel_busy")
	t.Logf("%d opens: %d acks, %d channel_busy, %d warning lines", n, n-busy, busy, lines)
	if lines > 3 {
		t.Errorf("%d warning lines for %d busy answers, want them rate-limited", lines, busy)
	}
}

// TestHelloTimeoutFreesSlots is review item 3: sockets that never say
// hello are closed after HelloTimeout (1008) and free their slots, so a
// real xAgent gets in.
func TestHelloTimeoutFreesSlots(t *testing.T) {
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Adjust: func(o *connector.Options) {
		o.MaxSockets = 2
		o.HelloTimeout = 300 * time.Millisecond
	}})
	silent := []*websocket.Conn{rawWS(t, f.URL, ""), rawWS(t, f.URL, "")}
	for _, ws := range silent {
		ctx := testCtx(t)
		_, _, err := ws.Read(ctx)
		if got := websocket.CloseStatus(err); got != websocket.StatusPolicyViolation {
			t.Fatalf("a socket without hello ended with %v (status %d), want 1008", err, got)
		}
	}
	eventually(t, "the slots freed", func() bool { return f.Server.Sockets() == 0 })
	servesAnother(t, f)
}

// TestSocketSlotsAreReservedAtomically: concurrent dials never hold more
// than MaxSockets slots (the check and the registration were apart, so
// one more could get in).
func TestSocketSlotsAreReservedAtomically(t *testing.T) {
	const max = 3
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Adjust: func(o *connector.Options) { o.MaxSockets = max }})
	var (
		mu    sync.Mutex
		conns []*websocket.Conn
		wg    sync.WaitGroup
	)
	for range 24 {
		wg.Go(func() {
			ws, err := dialRaw(testCtx(t), f.URL, "")
			if err != nil {
				return // 503: no slot
			}
			mu.Lock()
			conns = append(conns, ws)
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, ws := range conns {
		_ = ws.CloseNow()
	}
	if len(conns) > max {
		t.Fatalf("%d sockets accepted at once, want at most MaxSockets %d", len(conns), max)
	}
}

// openInstanceTable opens a store whose instance table holds max rows.
func openInstanceTable(t *testing.T, max int) *store.DB {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(context.Background(), "sqlite:"+filepath.Join(dir, "x.db"), store.Options{DataDir: dir, MaxInstances: max})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// helloRefusal sends a hello for a new connector_id on a fresh socket and
// returns the error packet that answers it and the close status, failing
// the test when the hello is admitted.
func helloRefusal(t *testing.T, f *sdkfixture.Fixture) (*protocol.ErrorBody, websocket.StatusCode) {
	t.Helper()
	ws := rawWS(t, f.URL, "")
	ctx := testCtx(t)
	if err := ws.Write(ctx, websocket.MessageText, frame(t, "hello-1", "req-hello", "", protocol.TypeHello, helloPayload(f))); err != nil {
		t.Fatal(err)
	}
	env := readEnv(t, ctx, ws)
	if env.Type != protocol.TypeError || env.Error == nil || env.RequestID != "req-hello" {
		t.Fatalf("hello for a new connector_id with a full table answered %s %+v, want an error packet", env.Type, env.Error)
	}
	_, _, err := ws.Read(ctx)
	return env.Error, websocket.CloseStatus(err)
}

// TestFullInstanceTableRefusesNewInstances is issue 35 item 4: with the
// store's instance table full of connector_ids within their one-hour grace,
// a hello for a new connector_id is refused with capacity_exceeded (close
// 1013, try again later) and every connector_id in its grace comes back
// as itself (section 8.2: a reconnect during the grace cancels the
// expiry). The SDK used to evict one of them early instead, so that id's
// reconnect got a new connector_id and its channels were gone.
func TestFullInstanceTableRefusesNewInstances(t *testing.T) {
	t.Parallel()
	db := openInstanceTable(t, 3)
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Store: db})

	real, realID := f.Connect(t, "")
	ch := openSigned(t, real)
	_ = real.Close()
	var idle []string
	for range 2 {
		ws := rawWS(t, f.URL, "")
		idle = append(idle, rawHello(t, ws, f, ""))
		_ = ws.Close(websocket.StatusNormalClosure, "")
	}
	eventually(t, "the sockets released", func() bool { return f.Server.Sockets() == 0 })

	for range 3 { // hello/close floods are refused, each time
		e, status := helloRefusal(t, f)
		if e.Code != string(protocol.CodeCapacityExceeded) || status != websocket.StatusTryAgainLater {
			t.Fatalf("refusal %+v, close %d: want capacity_exceeded and close %d", e, status, websocket.StatusTryAgainLater)
		}
	}
	for _, id := range idle {
		ws := rawWS(t, f.URL, "")
		if got := rawHello(t, ws, f, id); got != id {
			t.Fatalf("connector_id %s within its grace came back as %s: it was evicted", id, got)
		}
		_ = ws.Close(websocket.StatusNormalClosure, "")
	}
	again, id := f.Connect(t, realID)
	if id != realID {
		t.Fatalf("the signed-in instance came back as %s, want %s", id, realID)
	}
	if _, err := again.Open(testCtx(t), ch); err != nil {
		t.Fatalf("reopen the signed-in channel: %v", err)
	}
	if got := metricValue(t, f, "xconn_connector_instances_refused_total"); got != 3 {
		t.Fatalf("instances_refused_total = %v, want 3", got)
	}
}

// TestFullInstanceTableAdmitsAfterGrace: once the grace of the instances
// filling the table has passed, a new hello is admitted: the expired
// connector_ids are unregistered first (by the janitor, or by the hello
// itself when the janitor has not run yet).
func TestFullInstanceTableAdmitsAfterGrace(t *testing.T) {
	t.Parallel()
	db := openInstanceTable(t, 2)
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Store: db,
		Adjust: func(o *connector.Options) { o.LeaseGrace = 300 * time.Millisecond }})
	var ids []string
	for range 2 {
		ws := rawWS(t, f.URL, "")
		ids = append(ids, rawHello(t, ws, f, ""))
		_ = ws.Close(websocket.StatusNormalClosure, "")
	}
	var admitted *connectortest.Client
	eventually(t, "a new instance admitted after the grace", func() bool {
		c, err := connectortest.Dial(testCtx(t), f.URL, "")
		if err != nil {
			return false
		}
		if _, err := c.Hello(testCtx(t), helloPayload(f)); err != nil {
			_ = c.Close()
			return false
		}
		admitted = c
		return true
	})
	t.Cleanup(func() { _ = admitted.Close() })
	openSigned(t, admitted)
}

// TestSecretFormValueRefusedBeforeRedaction is review item 2: an auth.start
// whose secret value is over MaxAuthValueBytes is refused
// invalid_auth_input, one the flow refuses fails, and neither grows the
// redaction set (each value used to be registered before any check); a
// value the flow accepts is registered.
func TestSecretFormValueRefusedBeforeRedaction(t *testing.T) {
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	c, _ := f.Connect(t, "")
	ctx := testCtx(t)
	ack, err := c.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	n0, b0 := f.Server.SecretsHeld()
	for i := range 20 {
		_, err := c.SignInForm(ctx, ack.ConnectorChannelID, sdkfixture.FlowTokenForm,
			map[string]string{"token": fmt.Sprintf("%06d", i) + strings.Repeat("s", 512<<10), "name": "Ann"})
		if !isCode(err, protocol.CodeInvalidAuthInput) {
			t.Fatalf("auth.start with a 512 KiB secret: %v, want invalid_auth_input", err)
		}
	}
	// Within the SDK's bound but refused by the flow (whose error quotes
	// it): not registered either, and scrubbed from the answer anyway.
	st, err := c.SignInForm(ctx, ack.ConnectorChannelID, sdkfixture.FlowTokenForm,
		map[string]string{"token": sdkfixture.BadToken, "name": "Ann"})
	if err == nil || (st != nil && st.Status == protocol.AuthAuthenticated) {
		t.Fatalf("the flow accepted the bad token: %+v", st)
	}
	if strings.Contains(err.Error(), sdkfixture.BadToken) {
		t.Fatalf("the refusal quotes the refused secret: %v", err)
	}
	if n, b := f.Server.SecretsHeld(); n != n0 || b != b0 {
		t.Fatalf("redaction set grew from %d values (%d B) to %d (%d B) for refused input", n0, b0, n, b)
	}
	if _, err := sdkfixture.SignIn(ctx, c, ack.ConnectorChannelID, "Ann"); err != nil {
		t.Fatalf("a valid sign-in after the refusals: %v", err)
	}
	if n, _ := f.Server.SecretsHeld(); n <= n0 {
		t.Fatalf("redaction set holds %d values after a valid sign-in, want the secret added to %d", n, n0)
	}
}

// TestIdleConnectionsBoundedSoHealthAnswers is review item 5: idle
// keep-alive connections beyond MaxConns are closed (before, they stayed
// open for IdleTimeout until the descriptor limit), and /health answers.
func TestIdleConnectionsBoundedSoHealthAnswers(t *testing.T) {
	const max = 8
	card := sdkfixture.FixtureCard(protocol.ProfileIMv1)
	card.AuthFlows = nil
	srv, err := connector.New(connector.Options{Card: card, Store: connectortest.NewStore(t), DataDir: t.TempDir(), MaxConns: max})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	addr := ln.Addr().String()
	health := func() (int, error) {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", protocol.PathHealth); err != nil {
			return 0, err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	eventually(t, "Serve answering", func() bool { code, err := health(); return err == nil && code == 200 })

	const idle = 40
	var conns []net.Conn
	for range idle {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", protocol.PathHealth); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close() // keep-alive: the connection stays idle
		conns = append(conns, c)
	}
	var closed atomic.Int32
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
			if _, err := c.Read(make([]byte, 1)); err != nil && !isTimeout(err) {
				closed.Add(1)
			}
		})
	}
	wg.Wait()
	if closed := int(closed.Load()); closed < idle-max {
		t.Fatalf("%d of %d idle keep-alive connections closed, want at least %d (MaxConns %d)", closed, idle, idle-max, max)
	}
	if code, err := health(); err != nil || code != 200 {
		t.Fatalf("/health = %d, %v", code, err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestFullChannelTableAnsweredAndLoggedOnce: when the store's channel
// table is full, every channel.open is answered
// connector_channel_unavailable and the refusals share one warning line
// (before, each wrote an error line).
func TestFullChannelTableAnsweredAndLoggedOnce(t *testing.T) {
	dir := t.TempDir()
	db, err := store.Open(context.Background(), "sqlite:"+filepath.Join(dir, "x.db"), store.Options{DataDir: dir, MaxChannels: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Store: db})
	c, _ := f.Connect(t, "")
	ctx := testCtx(t)
	refused := 0
	for range 50 {
		if _, err := c.Open(ctx, ""); err != nil {
			if !isCode(err, protocol.CodeConnectorChannelUnavailable) {
				t.Fatalf("open on a full table: %v, want connector_channel_unavailable", err)
			}
			refused++
		}
	}
	if refused != 47 {
		t.Fatalf("%d opens refused, want 47 of 50 with room for 3", refused)
	}
	logs := f.Logs.String()
	if n := strings.Count(logs, "channel table is full"); n != 1 {
		t.Fatalf("%d warning lines for 47 refusals, want 1", n)
	}
	if strings.Contains(logs, "connector: persist channel") {
		t.Fatal("a refusal for the full table was logged as an error")
	}
}
