package protocol

import (
	"bytes"
	"encoding/json"
	"testing"
)

// AppendTrusted writes the bytes of MarshalJSON, and leaves to it what it
// does not handle.
func TestEnvelopeAppendTrusted(t *testing.T) {
	req := &Envelope{Schema: PacketSchema, PacketID: "pkt_1", RequestID: "req_1",
		ConnectorChannelID: "ch_1", Type: TypeToolInvoke, Time: 1}
	for _, payload := range []string{``, `{}`, `{"tool_id":"t","result":{"a":1}}`} {
		for _, env := range []*Envelope{req.Reply(TypeToolInvokeAck),
			{Schema: PacketSchema, PacketID: "p", Type: TypePing},
			{Schema: PacketSchema, PacketID: "p", RequestID: "r", ConnectorChannelID: "c", Type: TypeToolInvoke, Time: 1764700000000}} {
			env.Payload = json.RawMessage(payload)
			want, err := env.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := env.AppendTrusted(nil); !ok || !bytes.Equal(got, want) {
				t.Errorf("AppendTrusted = %s, %v; want %s", got, ok, want)
			}
			if got, ok := env.AppendTrusted([]byte("x")); !ok || !bytes.Equal(got, append([]byte("x"), want...)) {
				t.Errorf("AppendTrusted after a prefix = %s, %v", got, ok)
			}
		}
	}
	for _, env := range []*Envelope{
		{Schema: PacketSchema, PacketID: "p<1>", Type: "t"},
		{Schema: PacketSchema, PacketID: "p\"", Type: "t"},
		{Schema: PacketSchema, PacketID: "p", Type: "t", Error: &ErrorBody{Code: "x"}},
		{Schema: PacketSchema, PacketID: "p", Type: "t", Extensions: map[string]json.RawMessage{"x_a": json.RawMessage(`1`)}},
	} {
		if got, ok := env.AppendTrusted(nil); ok || len(got) != 0 {
			t.Errorf("AppendTrusted(%+v) = %s, %v; want it left to MarshalJSON", env, got, ok)
		}
	}
}
