package connector_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// TestEncodeOpenAckMatchesJSON checks that the channel.open.ack payload
// encoder gives exactly the bytes encoding/json gives for
// protocol.ChannelOpenAckPayload, for Descriptors of every kind.
func TestEncodeOpenAckMatchesJSON(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	c, _ := f.Connect(t, "")
	ctx := testCtx(t)
	created, err := c.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	signedID := openSigned(t, c)
	h, _ := f.Server.Channel(signedID)
	if err := h.SetToolAvailability(ctx, sdkfixture.ToolEcho, connector.ToolAvailability{
		Status: protocol.ToolUnavailable, Reason: `quota <exceeded> & "retry" later ✓`}); err != nil {
		t.Fatal(err)
	}
	signed, err := h.Descriptor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	withExt := *signed
	withExt.Extensions = protocol.Extensions{"x_note": json.RawMessage(`{ "a" : 1 }`)}
	withExt.Target.Extensions = protocol.Extensions{"x_t": json.RawMessage(`"<b>"`)}
	odd := &protocol.Descriptor{
		Schema: protocol.DescriptorSchema,
		Connection: protocol.Connection{ConnectorCardID: "im.x", ConnectorID: "conn_\u2028", ConnectorChannelID: "cch_\x01\t",
			Profiles: []protocol.Profile{}, Status: "created"},
		Target: protocol.DescriptorTarget{Provider: "p\"q\\", DisplayName: "bad \xff utf-8 \u2029", AccountHint: "über"},
		Tools:  []protocol.ToolState{{ToolID: "t1", Status: protocol.ToolAvailable}, {ToolID: "t2", Status: protocol.ToolUnavailable, TargetPermissionState: protocol.PermissionGranted}},
	}
	bare := &protocol.Descriptor{Connection: protocol.Connection{}, Target: protocol.DescriptorTarget{}}
	tests := []struct {
		name string
		id   string
		d    *protocol.Descriptor
	}{
		{name: "created", id: created.ConnectorChannelID, d: created.ConnectionDescriptor},
		{name: "signed in, tool override", id: signedID, d: signed},
		{name: "extension members", id: signedID, d: &withExt},
		{name: "id needing escapes", id: `cch_<&>"`, d: created.ConnectionDescriptor},
		{name: "escapes, invalid UTF-8, empty profiles", id: "cch_1", d: odd},
		{name: "zero values, nil profiles, no tools", id: "", d: bare},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := connector.EncodeOpenAck(tc.id, tc.d)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(protocol.ChannelOpenAckPayload{ConnectorChannelID: tc.id, ConnectionDescriptor: tc.d})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("encoded\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestEncodeOpenAckKnowsEveryField fails when a protocol type of the
// Descriptor gains or loses a JSON member: the hand-written encoder
// (open_encode.go) must then be updated with it.
func TestEncodeOpenAckKnowsEveryField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typ  reflect.Type
		want []string
	}{
		{reflect.TypeFor[protocol.ChannelOpenAckPayload](), []string{"connector_channel_id", "connection_descriptor", "-"}},
		{reflect.TypeFor[protocol.Descriptor](), []string{"schema", "connection", "target", "tools,omitempty", "-"}},
		{reflect.TypeFor[protocol.Connection](), []string{"connector_card_id", "connector_id", "connector_channel_id", "target_type", "profiles", "status", "-"}},
		{reflect.TypeFor[protocol.DescriptorTarget](), []string{"provider", "label,omitempty", "display_name", "account_hint,omitempty", "-"}},
		{reflect.TypeFor[protocol.ToolState](), []string{"tool_id", "status", "target_permission_state,omitempty", "reason,omitempty", "-"}},
	}
	for _, tc := range tests {
		var got []string
		for f := range tc.typ.Fields() {
			got = append(got, f.Tag.Get("json"))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s members %q, the encoder knows %q: update open_encode.go", tc.typ, got, tc.want)
		}
	}
}

// TestEncodeOpenAckFrameMatchesEnvelope checks that the channel.open.ack
// frame encoder gives exactly the bytes of protocol.Envelope.MarshalJSON
// for the reply envelope with the encodeOpenAck payload.
func TestEncodeOpenAckFrameMatchesEnvelope(t *testing.T) {
	t.Parallel()
	d := &protocol.Descriptor{
		Schema: protocol.DescriptorSchema,
		Connection: protocol.Connection{ConnectorCardID: "im.x", ConnectorID: "conn_1", ConnectorChannelID: "cch_1",
			TargetType: "im", Profiles: []protocol.Profile{protocol.ProfileIMv2}, Status: protocol.StatusCreated},
		Target: protocol.DescriptorTarget{Provider: "p", Label: "L", DisplayName: "L not bound"},
		Tools:  []protocol.ToolState{{ToolID: "t1", Status: protocol.ToolUnavailable, Reason: "sign-in required"}},
	}
	tests := []struct {
		name     string
		req      *protocol.Envelope
		packetID string
		time     int64
		id       string
		escapes  bool // ids that need escaping: left to MarshalJSON
	}{
		{name: "usual", req: &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: "pkt_1", RequestID: "req_1",
			ConnectorChannelID: "cch_1", Type: protocol.TypeChannelOpen, Time: 5}, packetID: "pkt_a", time: 1700000000000, id: "cch_1"},
		{name: "first open", req: &protocol.Envelope{PacketID: "pkt_2", RequestID: "req_2", Type: protocol.TypeChannelOpen},
			packetID: "pkt_b", time: -3, id: "cch_new"},
		{name: "no request_id, no time", req: &protocol.Envelope{PacketID: "pkt_3"}, packetID: "pkt_c", id: "cch_1"},
		{name: "strings needing escapes", req: &protocol.Envelope{PacketID: "pkt_<\u2028>", RequestID: "req_\"\\\x01\xff"},
			packetID: "pkt_&", time: 1, id: "cch_é", escapes: true},
		{name: "empty ids", req: &protocol.Envelope{}, packetID: "", id: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			payload, err := connector.EncodeOpenAck(tc.id, d)
			if err != nil {
				t.Fatal(err)
			}
			env := tc.req.Reply(protocol.TypeChannelOpenAck)
			env.ConnectorChannelID, env.PacketID, env.Time, env.Payload = tc.id, tc.packetID, tc.time, payload
			want, err := env.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			got, ok := connector.EncodeOpenAckFrame(tc.req, tc.packetID, tc.time, tc.id, d)
			if !ok {
				if !tc.escapes {
					t.Fatal("frame left to MarshalJSON")
				}
				return
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("encoded\n%s\nwant\n%s", got, want)
			}
		})
	}
}
