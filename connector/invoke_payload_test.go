package connector_test

import (
	"encoding/json"
	"testing"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// TestToolInvokePayloadRules checks that a tool.invoke payload is parsed
// once on the common path and that every payload the fast check does not
// clear still gets the full payload rules (or, when valid, an answer).
func TestToolInvokePayloadRules(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	c, _ := f.Connect(t, "")
	ctx := testCtx(t)
	ch := openSigned(t, c)
	args := `{"connector_channel_id":"` + ch + `"}`
	tool := `"tool_id":"` + sdkfixture.ToolWhoAmI + `"`
	cases := []struct {
		name    string
		payload string
		ok      bool
	}{
		{"plain", `{` + tool + `,"arguments":` + args + `}`, true},
		{"spaced", ` { ` + tool + ` , "arguments" : ` + args + ` } `, true},
		{"extension member", `{` + tool + `,"arguments":` + args + `,"x_note":"hi"}`, true},
		{"case variant of a field", `{` + tool + `,"arguments":` + args + `,"Tool_ID":"x"}`, false},
		{"no tool_id", `{"arguments":` + args + `}`, false},
		{"empty tool_id", `{"tool_id":"","arguments":` + args + `}`, false},
		{"no arguments", `{` + tool + `}`, false},
		{"null arguments", `{` + tool + `,"arguments":null}`, false},
		{"array arguments", `{` + tool + `,"arguments":[]}`, false},
		{"tool_id not a string", `{"tool_id":1,"arguments":` + args + `}`, false},
		{"payload not an object", `[]`, false},
	}
	for _, tc := range cases {
		e, err := connectortest.Packet(protocol.TypeToolInvoke, ch, json.RawMessage(tc.payload))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		e.RequestID = e.PacketID
		env, err := c.RoundTrip(ctx, e)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.ok {
			wantOK(t, env, protocol.TypeToolInvokeAck)
			var ack protocol.ToolInvokeAckPayload
			if err := env.DecodePayload(&ack); err != nil || ack.ToolID != sdkfixture.ToolWhoAmI {
				t.Fatalf("%s: ack payload %s (%v)", tc.name, env.Payload, err)
			}
			continue
		}
		wantCode(t, env, protocol.TypeError, protocol.CodeInvalidPacket)
	}
}
