package connector_test

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// writeGate sits under the connector's side of one socket: it holds the
// first write that carries a given string until the test kills the socket.
type writeGate struct {
	match []byte
	held  chan struct{} // closed when that write is held
	kill  chan struct{} // closed by the test: the held write fails

	mu   sync.Mutex
	used bool
}

func newWriteGate(match string) *writeGate {
	return &writeGate{match: []byte(match), held: make(chan struct{}), kill: make(chan struct{})}
}

type gateConn struct {
	net.Conn
	g *writeGate
}

func (c *gateConn) Write(p []byte) (int, error) {
	c.g.mu.Lock()
	hold := !c.g.used && bytes.Contains(p, c.g.match)
	if hold {
		c.g.used = true
	}
	c.g.mu.Unlock()
	if !hold {
		return c.Conn.Write(p)
	}
	close(c.g.held)
	<-c.g.kill
	_ = c.Conn.Close() // the socket dies with the frame unwritten
	return 0, net.ErrClosed
}

type gateWriter struct {
	http.ResponseWriter
	g *writeGate
}

func (w *gateWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	return &gateConn{Conn: nc, g: w.g}, brw, nil
}

func (w *gateWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestPushDeliveredOnlyWhenWritten: an IM v1 message.push (no ack) counts
// as delivered only once its frame is written to the socket (IM v1 section
// 7.1), not when it is queued for the socket's writer. Here the write never
// happens - the socket dies with the frame queued - so the message stays in
// the outbox and is the first one pushed after the channel is reopened.
func TestPushDeliveredOnlyWhenWritten(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Profiles: []protocol.Profile{protocol.ProfileIMv1}})
	ctx := testCtx(t)
	gate := newWriteGate(`"type":"message.push"`)
	gs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.Server.ServeHTTP(&gateWriter{ResponseWriter: w, g: gate}, r)
	}))
	t.Cleanup(gs.Close)
	a, err := connectortest.Dial(ctx, gs.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	hello, err := a.Hello(ctx, protocol.HelloPayload{ConnectorCardID: sdkfixture.FixtureCardID, ProtocolVersion: protocol.ProtocolVersion,
		SupportedProfiles: []protocol.Profile{protocol.ProfileIMv1}})
	if err != nil {
		t.Fatal(err)
	}
	ch := openSigned(t, a)
	h, err := f.Server.Channel(ch)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.PushMessage(ctx, protocol.MessagePushPayload{MessageID: "unwritten", SenderID: "u1", RawText: "first", Text: "User message: first"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gate.held: // the writer has the frame: the outbox attempted it
	case <-ctx.Done():
		t.Fatal("message.push never reached the socket's writer")
	}
	close(gate.kill)
	<-a.Done()

	// The same instance reconnects and reopens the channel; a second
	// message is pushed. Per-channel order: the unwritten one comes first.
	b, again := f.Connect(t, hello.ConnectorID)
	if again != hello.ConnectorID {
		t.Fatalf("connector_id %s not restored", hello.ConnectorID)
	}
	if _, err := b.Open(ctx, ch); err != nil {
		t.Fatal(err)
	}
	if err := h.PushMessage(ctx, protocol.MessagePushPayload{MessageID: "second", SenderID: "u1", RawText: "second", Text: "User message: second"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"unwritten", "second"} {
		push, err := b.NextOfType(ctx, protocol.TypeMessagePush)
		if err != nil {
			t.Fatalf("waiting for %s: %v", want, err)
		}
		if p := decode[protocol.MessagePushPayload](t, push); p.MessageID != want {
			t.Fatalf("message.push %q, want %q (a push whose socket died before the write was counted as delivered)", p.MessageID, want)
		}
	}
	checkWire(t, b)
}
