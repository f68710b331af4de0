package connector_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// The hostile-input suite: each case sends what a hostile or broken peer
// would and checks the answer the protocol specifies (an error packet with
// its code, an HTTP status, a close code). Throughout, a well-behaved xAgent
// on another connection keeps being served, and the heap stays within a
// bound far below what the inputs add up to.

// hostileFixture starts the fixture with small limits and a watching
// xAgent whose channel is signed in; watch checks that it is still served.
func hostileFixture(t *testing.T) (f *sdkfixture.Fixture, watch func(step string)) {
	t.Helper()
	f = sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Adjust: func(o *connector.Options) {
		o.MaxFrameBytes = 256 << 10
		o.MaxUploadBytes = 64 << 10
		o.SendQueueBytes = 2 << 20
		o.InboundQueueBytes = 2 << 20
	}})
	c, _ := f.Connect(t, "")
	ch := openSigned(t, c)
	n := 0
	return f, func(step string) {
		t.Helper()
		n++
		text := fmt.Sprintf("after %s (%d)", step, n)
		out, err := connectortest.Invoke[sdkfixture.EchoOut](testCtx(t), c, ch, sdkfixture.ToolEcho, sdkfixture.EchoIn{Text: text})
		if err != nil || out.Echo != text {
			t.Fatalf("the watching xAgent was not served %s: %+v, %v", step, out, err)
		}
	}
}

// expectError reads packets from ws until an error (envelope or packet)
// arrives and checks its code.
func expectError(t *testing.T, ws *websocket.Conn, code protocol.Code) *protocol.Envelope {
	t.Helper()
	ctx := testCtx(t)
	for {
		env := readEnv(t, ctx, ws)
		if env.Error != nil {
			if env.Error.Code != string(code) {
				t.Fatalf("%s error %s (%s), want %s", env.Type, env.Error.Code, env.Error.Message, code)
			}
			return env
		}
	}
}

func TestHostileInput(t *testing.T) {
	f, watch := hostileFixture(t)
	base := heapNow()
	peaks := samplePeaks(f.Server)
	defer func() {
		peaks.end()
		grow := peaks.heap.Load() - min(base, peaks.heap.Load())
		t.Logf("heap peak %d KiB over a base of %d KiB", grow>>10, base>>10)
		if grow > 64<<20 {
			t.Errorf("heap grew by %d MiB during the hostile input, want under 64 MiB", grow>>20)
		}
	}()
	ctx := testCtx(t)
	write := func(ws *websocket.Conn, typ websocket.MessageType, b []byte) {
		t.Helper()
		if err := ws.Write(ctx, typ, b); err != nil {
			t.Fatalf("write: %v", err)
		}
	}

	frames := []struct {
		name string
		typ  websocket.MessageType
		body string
		code protocol.Code
	}{
		{"invalid JSON", websocket.MessageText, `{"schema":"xagent.connector.packet/v1","packet_id":`, protocol.CodeInvalidPacket},
		{"not an object", websocket.MessageText, `[1,2,3]`, protocol.CodeInvalidPacket},
		{"packet_id of the wrong type", websocket.MessageText, `{"schema":"xagent.connector.packet/v1","packet_id":7,"type":"ping"}`, protocol.CodeInvalidPacket},
		{"payload of the wrong type", websocket.MessageText, `{"schema":"xagent.connector.packet/v1","packet_id":"p1","type":"connector.hello","payload":"x"}`, protocol.CodeInvalidPacket},
		{"missing schema", websocket.MessageText, `{"packet_id":"p2","type":"ping"}`, protocol.CodeInvalidPacket},
		{"deep nesting", websocket.MessageText, `{"schema":"xagent.connector.packet/v1","packet_id":"p3","type":"ping","payload":` +
			strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`, protocol.CodeInvalidPacket},
		{"binary frame", websocket.MessageBinary, `{"schema":"xagent.connector.packet/v1","packet_id":"p4","type":"ping"}`, protocol.CodeInvalidPacket},
		{"user packet before hello", websocket.MessageText, string(frame(t, "p5", "r5", "cch_x", protocol.TypeToolInvoke, protocol.ToolInvokePayload{ToolID: sdkfixture.ToolEcho})), protocol.CodeHelloRequired},
		{"unknown packet type before hello", websocket.MessageText, `{"schema":"xagent.connector.packet/v1","packet_id":"p6","type":"x.y"}`, protocol.CodeHelloRequired},
	}
	for _, tc := range frames {
		t.Run(tc.name, func(t *testing.T) {
			ws := rawWS(t, f.URL, "")
			write(ws, tc.typ, []byte(tc.body))
			expectError(t, ws, tc.code)
			watch(tc.name)
		})
	}

	t.Run("frame over MaxFrameBytes closes 1009", func(t *testing.T) {
		ws := rawWS(t, f.URL, "")
		_ = ws.Write(ctx, websocket.MessageText, bytes.Repeat([]byte("x"), 512<<10))
		_, _, err := ws.Read(ctx)
		if got := websocket.CloseStatus(err); got != websocket.StatusMessageTooBig {
			t.Fatalf("read after an oversized frame: %v (status %d), want 1009", err, got)
		}
		watch("an oversized frame")
	})

	t.Run("10,000 packets before hello", func(t *testing.T) {
		ws := rawWS(t, f.URL, "")
		const n = 10000
		got := make(chan map[protocol.Code]int, 1)
		go func() {
			codes := map[protocol.Code]int{}
			for i := 0; i < n; i++ {
				_, b, err := ws.Read(ctx)
				if err != nil {
					break
				}
				var env protocol.Envelope
				if json.Unmarshal(b, &env) != nil || env.Error == nil {
					codes["(no error)"]++
					continue
				}
				codes[protocol.Code(env.Error.Code)]++
			}
			got <- codes
		}()
		for i := range n {
			write(ws, websocket.MessageText, frame(t, fmt.Sprintf("pre-%d", i), fmt.Sprintf("req-%d", i), "cch_x", protocol.TypeChannelOpen, struct{}{}))
		}
		codes := <-got
		if total := codes[protocol.CodeHelloRequired] + codes[protocol.CodeChannelBusy]; total != n {
			t.Fatalf("answers %v, want %d hello_required or channel_busy", codes, n)
		}
		watch("10,000 packets before hello")
	})

	// A second instance with its own signed-in channel, still connected.
	other, _ := f.Connect(t, "")
	otherCh := openSigned(t, other)

	t.Run("another instance's channel id", func(t *testing.T) {
		ws := rawWS(t, f.URL, "")
		rawHello(t, ws, f, "")
		args, _ := json.Marshal(map[string]string{"connector_channel_id": otherCh, "text": "steal"})
		write(ws, websocket.MessageText, frame(t, "s1", "rs1", otherCh, protocol.TypeToolInvoke,
			protocol.ToolInvokePayload{ToolID: sdkfixture.ToolEcho, Arguments: args}))
		expectError(t, ws, protocol.CodeConnectorChannelConnectorMismatch)
		write(ws, websocket.MessageText, frame(t, "s2", "rs2", otherCh, protocol.TypeChannelOpen, struct{}{}))
		expectError(t, ws, protocol.CodeConnectorChannelConnectorMismatch)
		watch("another instance's channel id")
	})

	t.Run("replayed packet_id and tool_call_id", func(t *testing.T) {
		ctx := testCtx(t)
		_, _, _, before := f.Target.Snapshot()
		var results []string
		for range 3 {
			args, _ := json.Marshal(map[string]string{"connector_channel_id": otherCh, "text": "once"})
			env, err := other.RoundTrip(ctx, &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: "replayed-packet",
				RequestID: "replayed-request", ConnectorChannelID: otherCh, Type: protocol.TypeToolInvoke,
				Payload: mustJSON(t, protocol.ToolInvokePayload{ToolID: sdkfixture.ToolSend, Arguments: args,
					Context: &protocol.ToolContext{ToolCallID: "call-replayed"}})})
			if err != nil {
				t.Fatal(err)
			}
			wantOK(t, env, protocol.TypeToolInvokeAck)
			results = append(results, string(decode[protocol.ToolInvokeAckPayload](t, env).Result))
		}
		if _, _, _, after := f.Target.Snapshot(); after != before+1 {
			t.Fatalf("side effect ran %d times for one tool_call_id replayed 3 times", after-before)
		}
		if results[0] != results[1] || results[1] != results[2] {
			t.Fatalf("replays answered differently: %v", results)
		}
		watch("replayed packets")
	})

	t.Run("oversized upload", func(t *testing.T) {
		resp := postUpload(t, f.URL, otherCh, "", "big.bin", bytes.Repeat([]byte("x"), 1<<20))
		if got := status(t, resp); got != http.StatusRequestEntityTooLarge {
			t.Fatalf("upload of 1 MiB over a 64 KiB limit: %d, want 413", got)
		}
		watch("an oversized upload")
	})
}

// TestSlowlorisIsCutAtReadHeaderTimeout: a connection that sends its
// request headers a byte at a time is closed after ServeReadHeaderTimeout,
// and /health answers while it lasts.
func TestSlowlorisIsCutAtReadHeaderTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for ServeReadHeaderTimeout (10 s)")
	}
	card := sdkfixture.FixtureCard(protocol.ProfileIMv1)
	card.AuthFlows = nil
	srv, err := connector.New(connector.Options{Card: card, Store: connectortest.NewStore(t), DataDir: t.TempDir()})
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
	base := "http://" + ln.Addr().String()
	client := &http.Client{Timeout: 10 * time.Second}
	get := func() int {
		resp, err := client.Get(base + protocol.PathHealth)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	eventually(t, "Serve answering", func() bool { return get() == http.StatusOK })

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_, _ = c.Read(make([]byte, 1)) // returns when the server closes
	}()
	start := time.Now()
	req := "GET " + protocol.PathHealth + " HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 1000)
	for i := 0; ; i++ {
		if _, err := c.Write([]byte{req[i%len(req)]}); err != nil {
			break
		}
		select {
		case <-closed:
		case <-time.After(100 * time.Millisecond):
			if code := get(); code != http.StatusOK && i%10 == 0 {
				t.Fatalf("/health = %d during the slow request", code)
			}
			if time.Since(start) > time.Minute {
				t.Fatal("the slow request was never cut")
			}
			continue
		}
		break
	}
	<-closed
	t.Logf("slow request cut after %v (ServeReadHeaderTimeout %v)", time.Since(start).Round(time.Second), connector.ServeReadHeaderTimeout)
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
