package protocol

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Unknown members must survive decode/encode: the official schemas allow
// extensions everywhere.
func TestExtensionsRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   string
		v    any
	}{
		{"card", `{"schema":"xagent.connector/v1","protocol_version":"3.0","build":{"build_time":"1","x_b":1},"connector_card_id":"im.x","connector":{"name":"n","version":"1","x_c":[1,2]},"supports":{"target_types":["im"],"profiles":["xagent.im.v2"],"x_s":true},"tools":[{"tool_id":"t","input_schema":{"type":"object"},"x_t":"y"}],"x_root":{"a":1}}`, &Card{}},
		{"descriptor", `{"schema":"xagent.connection/v2","connection":{"connector_card_id":"im.x","connector_id":"c","connector_channel_id":"ch","target_type":"im","profiles":["xagent.im.v2"],"status":"created","x_conn":1},"target":{"provider":"p","display_name":"","x_t":2},"tools":[{"tool_id":"t","status":"available","x_tool":3}],"x_d":4}`, &Descriptor{}},
		{"envelope", `{"schema":"xagent.connector.packet/v1","packet_id":"p","type":"ping","x_env":"v","error":{"code":"c","x_err":1}}`, &Envelope{}},
		{"chat message", `{"message_id":"m","text":"hi","files":[{"type":"image","file_ref":"f","x_file":1}],"x_msg":{"k":"v"}}`, &ChatMessagePayload{}},
		{"message push", `{"provider":"telegram","profile":"xagent.im.v1","event_kind":"im.message.received","message_id":"1","sender_id":"u","message_type":"text","raw_text":"","provider_extra":{"a":1}}`, &MessagePushPayload{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := json.Unmarshal([]byte(tt.in), tt.v); err != nil {
				t.Fatal(err)
			}
			out, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			var a, b any
			_ = json.Unmarshal([]byte(tt.in), &a)
			_ = json.Unmarshal(out, &b)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("round trip changed the document\n in: %s\nout: %s", tt.in, out)
			}
		})
	}
}

func TestExtensionsNeverOverrideDeclaredFields(t *testing.T) {
	e := Envelope{Schema: PacketSchema, PacketID: "p", Type: TypePing,
		Extensions: Extensions{"type": json.RawMessage(`"evil"`), "x": json.RawMessage(`1`)}}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back Envelope
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Type != TypePing || string(back.Extensions["x"]) != "1" {
		t.Fatalf("got %s", b)
	}
}

func TestNormalizeDescriptorV1(t *testing.T) {
	in := `{"schema":"xagent.connection/v1","connection":{"connector_card_id":"im.x","connector_id":"c","connector_channel_id":"ch","target_type":"im","profile":"xagent.im.v1","status":"connected"},"target":{"provider":"p","display_name":"x"}}`
	d, err := ParseDescriptor([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if d.Schema != DescriptorSchema || len(d.Connection.Profiles) != 1 || d.Connection.Profiles[0] != ProfileIMv1 {
		t.Fatalf("normalised = %+v", d.Connection)
	}
	if _, ok := d.Connection.Extensions["profile"]; ok {
		t.Fatal("singular profile kept after normalisation")
	}
}

func TestEnvelopeHelpers(t *testing.T) {
	req := &Envelope{Schema: PacketSchema, PacketID: "p1", RequestID: "r1", ConnectorChannelID: "ch", Type: TypeToolInvoke}
	if err := req.SetPayload(ToolInvokePayload{ToolID: "t", Arguments: json.RawMessage(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	raw, err := req.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeEnvelope(raw)
	if err != nil {
		t.Fatal(err)
	}
	var p ToolInvokePayload
	if err := got.DecodePayload(&p); err != nil || p.ToolID != "t" || string(p.Arguments) != `{"a":1}` {
		t.Fatalf("payload = %+v, %v", p, err)
	}
	ack := got.Reply(TypeToolInvokeAck)
	if ack.RequestID != "r1" || ack.ReplyTo != "p1" || ack.ConnectorChannelID != "ch" || ack.Schema != PacketSchema {
		t.Fatalf("reply = %+v", ack)
	}
	if _, err := DecodeEnvelope([]byte(`{"schema":`)); CodeOf(err, "") != CodeInvalidPacket {
		t.Fatalf("malformed: %v", err)
	}
	for _, s := range []string{"null", " null\n", "[]", `"x"`} {
		if _, err := DecodeEnvelope([]byte(s)); CodeOf(err, "") != CodeInvalidPacket {
			t.Fatalf("%q is no packet, got %v", s, err)
		}
	}
	var empty EmptyPayload
	if err := (&Envelope{Type: TypePing}).DecodePayload(&empty); err != nil {
		t.Fatalf("absent payload: %v", err)
	}
	if err := (&Envelope{Type: TypeToolInvoke, Payload: json.RawMessage(`[1]`)}).DecodePayload(&p); CodeOf(err, "") != CodeInvalidPacket {
		t.Fatalf("array payload: %v", err)
	}
}

// A member that differs from a declared one only in case must not set the
// declared field, or a round trip would change the decoded value.
func TestCaseVariantMembersStayExtensions(t *testing.T) {
	for _, in := range []string{`{"CODE":"y","code":"x"}`, `{"code":"x","CODE":"y"}`} {
		var e ErrorBody
		if err := json.Unmarshal([]byte(in), &e); err != nil {
			t.Fatal(err)
		}
		if e.Code != "x" || string(e.Extensions["CODE"]) != `"y"` {
			t.Fatalf("%s decoded to %+v", in, e)
		}
		out, _ := json.Marshal(e)
		var again ErrorBody
		if err := json.Unmarshal(out, &again); err != nil || again.Code != "x" {
			t.Fatalf("round trip of %s: %s -> %+v", in, out, again)
		}
	}
}

// TestChatFileSourceURL: an IM v1 file may spell its address url (IM v1
// section 9); SourceURL reads download_url first, then url.
func TestChatFileSourceURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"file_ref":"f","download_url":"/files/refs/f"}`, "/files/refs/f"},
		{`{"file_ref":"f","url":"https://cdn.example/f?sig=1"}`, "https://cdn.example/f?sig=1"},
		{`{"file_ref":"f","download_url":"/files/refs/f","url":"https://cdn.example/f"}`, "/files/refs/f"},
		{`{"file_ref":"f"}`, ""},
	} {
		var f ChatFile
		if err := json.Unmarshal([]byte(tt.in), &f); err != nil {
			t.Fatal(err)
		}
		if got := f.SourceURL(); got != tt.want {
			t.Errorf("%s: SourceURL() = %q, want %q", tt.in, got, tt.want)
		}
		if _, ok := f.Extensions["url"]; ok {
			t.Errorf("%s: url left in Extensions", tt.in)
		}
		out, err := json.Marshal(f)
		if err != nil || !jsonEqual(out, []byte(tt.in)) {
			t.Errorf("%s: re-encoded as %s (%v)", tt.in, out, err)
		}
	}
}

// jsonEqual reports whether a and b hold the same JSON value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
