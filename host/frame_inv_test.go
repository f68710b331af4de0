package host

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/xconn/xconn/protocol"
)

// TestInvokeFrameEncoding checks that the one-pass encoders of the invoke
// path produce the bytes of the general encoders.
func TestInvokeFrameEncoding(t *testing.T) {
	argsList := []string{``, `{}`, `{"connector_channel_id":"c","text":"hi"}`, ` { "a" : [1, 2] } `,
		`{"t":"<b>&"}`, "{\"t\":\"\u2028\"}", `{"t":"é"}`, `{"t":"\"q\""}`}
	ctxs := []protocol.ToolContext{{}, {SessionID: "s1"}, {ToolCallID: "c1"}, {SessionID: "s", ToolCallID: "c"}, {SessionID: "<x>"}}
	for _, tool := range []string{"echo", "t&t"} {
		for _, a := range argsList {
			for _, c := range ctxs {
				p := protocol.ToolInvokePayload{ToolID: tool, Arguments: json.RawMessage(a), Context: &c}
				want, err := json.Marshal(p)
				if err != nil {
					t.Fatal(err)
				}
				got, err := invokePayload(tool, p.Arguments, c.SessionID, c.ToolCallID)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("invokePayload(%q, %s, %+v) = %s, %v; want %s", tool, a, c, got, err, want)
				}
				env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: "pkt_1", RequestID: "req_1",
					ConnectorChannelID: "ch_1", Type: protocol.TypeToolInvoke, Time: 1764700000000, Payload: got}
				wantF, err := env.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				if gotF, ok := env.AppendTrusted(nil); !ok || !bytes.Equal(gotF, wantF) {
					t.Errorf("AppendTrusted = %s, %v; want %s", gotF, ok, wantF)
				}
			}
		}
	}
	if _, err := invokePayload("x", json.RawMessage(`{bad`), "", ""); protocol.AsError(err) == nil || protocol.AsError(err).Code != protocol.CodeInvalidArguments {
		t.Errorf("invokePayload(bad args) = %v, want invalid_arguments", err)
	}
}

// TestScanInvokeAck checks the ack reader against the general decoder.
func TestScanInvokeAck(t *testing.T) {
	for _, tc := range []struct {
		payload string
		fast    bool
	}{
		{`{"tool_id":"echo","result":{"text":"hi"}}`, true},
		{` {"result":[1,2] , "tool_id":"e\"cho"}`, true},
		{`{"tool_id":"echo","result":null}`, false},
		{`{"tool_id":"echo"}`, false},
		{`{"tool_id":"echo","result":1,"x":2}`, false},
		{`{"tool_id":"echo","result":1,"result":2}`, false},
		{`{"tool_id":1,"result":1}`, false},
	} {
		got, ok := scanInvokeAck([]byte(tc.payload))
		if ok != tc.fast {
			t.Errorf("scanInvokeAck(%s) ok = %v, want %v", tc.payload, ok, tc.fast)
			continue
		}
		if !ok {
			continue
		}
		var ack protocol.ToolInvokeAckPayload
		if err := ack.UnmarshalJSON([]byte(tc.payload)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, ack.Result) {
			t.Errorf("scanInvokeAck(%s) = %s, want %s", tc.payload, got, ack.Result)
		}
	}
}
