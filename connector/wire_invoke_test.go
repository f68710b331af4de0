package connector

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/xconn/xconn/protocol"
)

func TestScanInvoke(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		want    *protocol.ToolInvokePayload // nil: left to the full decode
	}{
		{"plain", `{"tool_id":"t","arguments":{"a":1}}`,
			&protocol.ToolInvokePayload{ToolID: "t", Arguments: json.RawMessage(`{"a":1}`)}},
		{"context and spaces", ` { "tool_id" : "t" , "arguments" : { "s" : "x}\"{" } , "context" : {"session_id":"s1","tool_call_id":"c1"} } `,
			&protocol.ToolInvokePayload{ToolID: "t", Arguments: json.RawMessage(`{ "s" : "x}\"{" }`),
				Context: &protocol.ToolContext{SessionID: "s1", ToolCallID: "c1"}}},
		{"empty context", `{"context":{},"arguments":{},"tool_id":"t"}`,
			&protocol.ToolInvokePayload{ToolID: "t", Arguments: json.RawMessage(`{}`), Context: &protocol.ToolContext{}}},
		{"nested arguments", `{"tool_id":"t","arguments":{"a":[1,{"b":[]}],"c":null}}`,
			&protocol.ToolInvokePayload{ToolID: "t", Arguments: json.RawMessage(`{"a":[1,{"b":[]}],"c":null}`)}},
		{"no arguments", `{"tool_id":"t"}`, nil},
		{"arguments array", `{"tool_id":"t","arguments":[]}`, nil},
		{"arguments null", `{"tool_id":"t","arguments":null}`, nil},
		{"empty tool", `{"tool_id":"","arguments":{}}`, nil},
		{"tool not string", `{"tool_id":1,"arguments":{}}`, nil},
		{"escaped tool", `{"tool_id":"t\u0031","arguments":{}}`, nil},
		{"invalid utf-8 tool", "{\"tool_id\":\"t\xff\",\"arguments\":{}}", nil},
		{"escaped name", `{"tool\u005fid":"t","arguments":{}}`, nil},
		{"case variant", `{"tool_id":"t","Tool_ID":"u","arguments":{}}`, nil},
		{"extension", `{"tool_id":"t","arguments":{},"x_ext":1}`, nil},
		{"duplicate", `{"tool_id":"t","tool_id":"u","arguments":{}}`, nil},
		{"context extension", `{"tool_id":"t","arguments":{},"context":{"x":"y"}}`, nil},
		{"context null", `{"tool_id":"t","arguments":{},"context":null}`, nil},
		{"context value null", `{"tool_id":"t","arguments":{},"context":{"session_id":null}}`, nil},
		{"not an object", `[1]`, nil},
		{"null", `null`, nil},
		{"empty", ``, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := scanInvoke([]byte(tt.payload))
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("scanInvoke(%s) = %+v, want %+v", tt.payload, got, tt.want)
			}
			if got == nil {
				return
			}
			// The fast result equals what the full decode makes.
			var full protocol.ToolInvokePayload
			if err := json.Unmarshal([]byte(tt.payload), &full); err != nil {
				t.Fatal(err)
			}
			if got.ToolID != full.ToolID || string(got.Arguments) != string(full.Arguments) ||
				!reflect.DeepEqual(got.Context, full.Context) || len(full.Extensions) > 0 {
				t.Fatalf("scanInvoke = %+v, full decode = %+v", got, full)
			}
		})
	}
}

func TestStripChannelMember(t *testing.T) {
	tests := []struct {
		args, want string
		ok         bool
	}{
		{`{"text":"hi"}`, `{"text":"hi"}`, true},
		{`{"connector_channel_id":"c","text":"hi"}`, `{"text":"hi"}`, true},
		{`{"text":"hi","connector_channel_id":"c"}`, `{"text":"hi"}`, true},
		{`{"a":1,"connector_channel_id":"c","b":{"connector_channel_id":"nested"}}`, `{"a":1,"b":{"connector_channel_id":"nested"}}`, true},
		{`{"connector_channel_id":"c"}`, `{}`, true},
		{` { "connector_channel_id" : "c" , "t" : [ 1 , 2 ] } `, `{"t" : [ 1 , 2 ]}`, true},
		{`{"connector_channel_id":"a","x":"}","connector_channel_id":"b"}`, `{"x":"}"}`, true},
		{`{}`, `{}`, true},
		{`{"connector\u005fchannel_id":"c"}`, ``, false},
		{`[]`, ``, false},
		{`null`, ``, false},
	}
	for _, tt := range tests {
		got, ok := stripChannelMember([]byte(tt.args))
		if ok != tt.ok || (ok && string(got) != tt.want) {
			t.Errorf("stripChannelMember(%s) = %s, %v; want %s, %v", tt.args, got, ok, tt.want, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		// Same members as the map-based strip.
		_, wantFields, err := stripChannelArg(json.RawMessage(tt.args))
		if err != nil {
			t.Fatal(err)
		}
		var gotFields map[string]json.RawMessage
		if err := json.Unmarshal(got, &gotFields); err != nil {
			t.Fatalf("stripChannelMember(%s) = %s: not JSON: %v", tt.args, got, err)
		}
		if len(gotFields) != len(wantFields) {
			t.Errorf("stripChannelMember(%s) members %v, want %v", tt.args, gotFields, wantFields)
		}
	}
}

// BenchmarkToolInvokeDecode compares the one-pass read of a tool.invoke
// payload and of the channel argument strip with the full decode.
func BenchmarkToolInvokeDecode(b *testing.B) {
	payload := []byte(`{"tool_id":"bench_echo","arguments":{"connector_channel_id":"cch_0123456789abcdefghijklmnop","text":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},"context":{"session_id":"s0","tool_call_id":"call_0123456789"}}`)
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p := scanInvoke(payload)
			if p == nil {
				b.Fatal("not scanned")
			}
			if _, ok := stripChannelMember(p.Arguments); !ok {
				b.Fatal("not stripped")
			}
		}
	})
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		env := &protocol.Envelope{Type: protocol.TypeToolInvoke, Payload: payload}
		for b.Loop() {
			var p protocol.ToolInvokePayload
			if err := env.DecodePayload(&p); err != nil {
				b.Fatal(err)
			}
			if _, _, err := stripChannelArg(p.Arguments); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestInvokeAckPayloadMatchesMarshal(t *testing.T) {
	tests := []struct {
		tool, result string
	}{
		{"t", `{"ok":true}`},
		{"t", ``},
		{"t", ` { "a" : [ 1 , 2 ] , "b" : "x y" } `},
		{"t", `"<b>&amp;</b>"`},
		{"t", `{"s":"line\u2028sep ` + "\u2028\u2029" + `"}`},
		{"t", `{"u":"é☃"}`},
		{"tool<&>", `null`},
		{"tool\"\\\n", `1`},
		{"ünï", `[]`},
	}
	for _, tt := range tests {
		want, err := json.Marshal(protocol.ToolInvokeAckPayload{ToolID: tt.tool, Result: json.RawMessage(tt.result)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := invokeAckPayload(tt.tool, json.RawMessage(tt.result), false)
		if err != nil || string(got) != string(want) {
			t.Errorf("invokeAckPayload(%q, %s) = %s, %v; want %s", tt.tool, tt.result, got, err, want)
		}
	}
	if _, err := invokeAckPayload("t", json.RawMessage(`{bad`), false); err == nil {
		t.Error("invokeAckPayload accepted invalid JSON")
	}
}
