package connector_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
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

// TestPushMessageValidated is issue 35 item 7: PushMessage holds a
// message.push to IM v1 section 5 (sender_id; text or content; at most one
// target Session reference) and section 9 (a file needs file_ref and
// download_url or url) before it stores anything; a refusal is
// invalid_packet naming the field. It used to store and send any payload.
func TestPushMessageValidated(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Profiles: []protocol.Profile{protocol.ProfileIMv1}})
	ctx := testCtx(t)
	c, _ := f.Connect(t, "")
	ch := openSigned(t, c)
	h, err := f.Server.Channel(ch)
	if err != nil {
		t.Fatal(err)
	}
	ok := protocol.MessagePushPayload{SenderID: "u1", RawText: "hi", Text: "User message: hi"}
	tests := []struct {
		name  string
		edit  func(*protocol.MessagePushPayload)
		field string // "" for a valid message
	}{
		{"valid", func(*protocol.MessagePushPayload) {}, ""},
		{"content instead of text", func(m *protocol.MessagePushPayload) { m.Text, m.Content = "", "User message: hi" }, ""},
		{"empty raw_text", func(m *protocol.MessagePushPayload) { m.RawText = "" }, ""},
		{"file with url", func(m *protocol.MessagePushPayload) {
			m.Files = []protocol.ChatFile{{Type: protocol.FileFile, FileRef: "f1", URL: "https://cdn.example/f1?sig=x"}}
		}, ""},
		{"no sender_id", func(m *protocol.MessagePushPayload) { m.SenderID = "" }, "payload.sender_id"},
		{"no text or content", func(m *protocol.MessagePushPayload) { m.Text = "" }, "payload.text"},
		{"message only", func(m *protocol.MessagePushPayload) { m.Text, m.Message = "", "User message: hi" }, "payload.text"},
		{"two session references", func(m *protocol.MessagePushPayload) { m.SessionRef, m.TargetSessionID = "a", "b" }, "at most one"},
		{"file without file_ref", func(m *protocol.MessagePushPayload) {
			m.Files = []protocol.ChatFile{{Type: protocol.FileFile, DownloadURL: "/files/refs/x"}}
		}, "payload.files[0].file_ref"},
		{"file without an address", func(m *protocol.MessagePushPayload) {
			m.Files = []protocol.ChatFile{{Type: protocol.FileFile, FileRef: "f1"}}
		}, "payload.files[0].download_url"},
		{"file with a bad url", func(m *protocol.MessagePushPayload) {
			m.Files = []protocol.ChatFile{{Type: protocol.FileFile, FileRef: "f1", URL: "file:///etc/passwd"}}
		}, "payload.files[0].url"},
	}
	for i, tt := range tests {
		m := ok
		m.MessageID = fmt.Sprintf("push-%d", i)
		tt.edit(&m)
		err := h.PushMessage(ctx, m)
		if tt.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		if pe := protocol.AsError(err); pe == nil || pe.Code != protocol.CodeInvalidPacket || !strings.Contains(pe.Message, tt.field) {
			t.Errorf("%s: %v, want invalid_packet naming %s", tt.name, err, tt.field)
		}
	}
	// A last valid message: the channel's pushes keep their order, so
	// every stored one comes before it.
	last := ok
	last.MessageID = "push-last"
	if err := h.PushMessage(ctx, last); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) == 0 || got[len(got)-1] != "push-last" {
		push, err := c.NextOfType(ctx, protocol.TypeMessagePush)
		if err != nil {
			t.Fatal(err)
		}
		if vs := protocol.ValidatePayload(push, protocol.ToHost); len(vs) > 0 {
			t.Errorf("a pushed message is invalid: %v", vs)
		}
		got = append(got, decode[protocol.MessagePushPayload](t, push).MessageID)
	}
	if want := []string{"push-0", "push-1", "push-2", "push-3", "push-last"}; !slices.Equal(got, want) {
		t.Fatalf("pushed %v, want only the valid ones %v", got, want)
	}
}
