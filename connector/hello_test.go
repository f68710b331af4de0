package connector_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

func TestHelloRejections(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	v2 := []protocol.Profile{protocol.ProfileIMv2}
	cases := []struct {
		name  string
		hello protocol.HelloPayload
		code  protocol.Code
	}{
		{"missing version", protocol.HelloPayload{ConnectorCardID: sdkfixture.FixtureCardID, SupportedProfiles: v2}, protocol.CodeUnsupportedProtocolVersion},
		{"version 2.0", protocol.HelloPayload{ConnectorCardID: sdkfixture.FixtureCardID, ProtocolVersion: "2.0", SupportedProfiles: v2}, protocol.CodeUnsupportedProtocolVersion},
		{"garbage version", protocol.HelloPayload{ConnectorCardID: sdkfixture.FixtureCardID, ProtocolVersion: "three", SupportedProfiles: v2}, protocol.CodeUnsupportedProtocolVersion},
		{"wrong card", protocol.HelloPayload{ConnectorCardID: "im.other", ProtocolVersion: "3.0", SupportedProfiles: v2}, protocol.CodeConnectorCardIDMismatch},
		{"no profiles", protocol.HelloPayload{ConnectorCardID: sdkfixture.FixtureCardID, ProtocolVersion: "3.0"}, protocol.CodeInvalidPacket},
		{"no common profile", protocol.HelloPayload{ConnectorCardID: sdkfixture.FixtureCardID, ProtocolVersion: "3.0", SupportedProfiles: []protocol.Profile{protocol.ProfileDeviceV1}}, protocol.CodeInvalidPacket},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			c, err := connectortest.Dial(ctx, f.URL, "")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			env, err := c.Request(ctx, protocol.TypeHello, "", tc.hello)
			if err != nil {
				t.Fatal(err)
			}
			wantCode(t, env, protocol.TypeError, tc.code)
			if env.ReplyTo == "" || env.RequestID == "" {
				t.Errorf("error packet lacks request_id/reply_to: %+v", env)
			}
			if st := c.CloseStatus(); st != websocket.StatusPolicyViolation {
				t.Errorf("close status = %v, want 1008", st)
			}
		})
	}
}

func TestHelloRequiredAndProtocolErrors(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	ctx := testCtx(t)
	c, err := connectortest.Dial(ctx, f.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, typ := range []string{protocol.TypeChannelOpen, protocol.TypePing} {
		env, err := c.Request(ctx, typ, "", protocol.EmptyPayload{})
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, env, protocol.TypeError, protocol.CodeHelloRequired)
	}
	// Malformed JSON and binary frames are invalid_packet, not a close.
	if err := c.SendRaw(ctx, []byte(`{"schema":`)); err != nil {
		t.Fatal(err)
	}
	env, err := c.NextOfType(ctx, protocol.TypeError)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, env, protocol.TypeError, protocol.CodeInvalidPacket)
	// An envelope without packet_id is invalid.
	if err := c.SendRaw(ctx, []byte(`{"schema":"xagent.connector.packet/v1","type":"ping","request_id":"r1"}`)); err != nil {
		t.Fatal(err)
	}
	env, err = c.NextOfType(ctx, protocol.TypeError)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, env, protocol.TypeError, protocol.CodeInvalidPacket)
	if _, err := c.Hello(ctx, protocol.HelloPayload{ConnectorCardID: sdkfixture.FixtureCardID, ProtocolVersion: "3.0",
		SupportedProfiles: []protocol.Profile{protocol.ProfileIMv2}}); err != nil {
		t.Fatalf("hello after errors: %v", err)
	}
	env, err = c.Request(ctx, protocol.TypePing, "", protocol.EmptyPayload{})
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, env, protocol.TypePong)
	env, err = c.Request(ctx, "no.such.packet", "", protocol.EmptyPayload{})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, env, protocol.TypeError, protocol.CodeUnsupportedPacket)
	env, err = c.Request(ctx, protocol.TypeHelloAck, "", protocol.HelloAckPayload{})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, env, protocol.TypeError, protocol.CodeUnsupportedPacket)
	// A second hello naming another connector_id on the same socket.
	env, err = c.Request(ctx, protocol.TypeHello, "", protocol.HelloPayload{ConnectorCardID: sdkfixture.FixtureCardID,
		ConnectorID: "conn_someone_else", ProtocolVersion: "3.0", SupportedProfiles: []protocol.Profile{protocol.ProfileIMv2}})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, env, protocol.TypeError, protocol.CodeConnectorIDMismatch)
	// An error packet from xAgent is never answered: the next answer is the pong.
	e, _ := connectortest.Packet(protocol.TypeError, "", nil)
	e.Error = &protocol.ErrorBody{Code: "whatever"}
	if err := c.Send(ctx, e); err != nil {
		t.Fatal(err)
	}
	env, err = c.Request(ctx, protocol.TypePing, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, env, protocol.TypePong)
}

func TestConnectorIDIssuedPersistedRestored(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	c1, id := f.Connect(t, "")
	if !strings.HasPrefix(id, "conn_") || len(id) < 20 {
		t.Fatalf("connector_id %q is not an unguessable conn_ id", id)
	}
	if _, err := f.Store.GetInstance(context.Background(), sdkfixture.FixtureCardID, id); err != nil {
		t.Fatalf("instance not persisted: %v", err)
	}
	c1.Close()
	_, again := f.Connect(t, id)
	if again != id {
		t.Fatalf("known connector_id not restored: %s != %s", again, id)
	}
	_, fresh := f.Connect(t, "conn_unknown_to_this_server")
	if fresh == "conn_unknown_to_this_server" || fresh == id {
		t.Fatalf("unknown connector_id must get a new one, got %s", fresh)
	}
}

func TestSubprotocolRequired(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	ctx := testCtx(t)
	ws, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(f.URL, "http")+"/ws", nil)
	if err == nil {
		ws.CloseNow()
		t.Fatal("dial without the subprotocol succeeded")
	}
	if resp != nil && resp.StatusCode == http.StatusSwitchingProtocols {
		t.Fatalf("server switched protocols without the subprotocol")
	}
}

func TestFrameLimitAndChannelBusy(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Adjust: func(o *connector.Options) {
		o.MaxFrameBytes = 4096
		o.ChannelQueue = 1
	}})
	c, _ := f.Connect(t, "")
	ch := openSigned(t, c)
	ctx := testCtx(t)
	// Flood one channel with slow tool calls: beyond its queue, channel_busy.
	var envs []*protocol.Envelope
	for range 6 {
		e, _ := connectortest.Packet(protocol.TypeToolInvoke, ch, protocol.ToolInvokePayload{ToolID: sdkfixture.ToolSlow,
			Arguments: []byte(`{"connector_channel_id":"` + ch + `"}`)})
		e.RequestID = e.PacketID
		envs = append(envs, e)
	}
	for _, e := range envs {
		if err := c.Send(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	busy := false
	for range envs {
		e, err := c.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if e.Error != nil && e.Error.Code == string(protocol.CodeChannelBusy) {
			busy = true
		}
	}
	if !busy {
		t.Fatal("no channel_busy for a full channel queue")
	}
	// A frame over the limit closes the socket with 1009.
	big := `{"schema":"xagent.connector.packet/v1","packet_id":"p","type":"ping","pad":"` + strings.Repeat("x", 8192) + `"}`
	if err := c.SendRaw(ctx, []byte(big)); err != nil {
		t.Fatal(err)
	}
	if st := c.CloseStatus(); st != websocket.StatusMessageTooBig {
		t.Fatalf("close status %v, want 1009", st)
	}
}
