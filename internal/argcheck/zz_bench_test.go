package argcheck

import (
	"encoding/json"
	"testing"
)

// benchSchema is a typical tool input_schema: the channel id, a bounded
// text and an optional enum, as schemagen makes them for a tool struct.
const benchSchema = `{"type":"object","properties":{
  "connector_channel_id":{"type":"string"},
  "text":{"type":"string","minLength":1,"maxLength":4000},
  "mode":{"enum":["plain","markdown"]}},
 "required":["connector_channel_id","text"],"additionalProperties":false}`

// BenchmarkValidate measures argument validation on the tool.invoke hot
// path, for valid and for invalid arguments.
func BenchmarkValidate(b *testing.B) {
	v, err := Compile(json.RawMessage(benchSchema))
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name string
		args string
		ok   bool
	}{
		{"valid", `{"connector_channel_id":"ch_0123456789abcdef","text":"hello there","mode":"plain"}`, true},
		{"invalid", `{"text":"","mode":"html","extra":1}`, false},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			args := json.RawMessage(tc.args)
			b.ReportAllocs()
			for b.Loop() {
				if vs := v.Validate(args); (len(vs) == 0) != tc.ok {
					b.Fatalf("violations = %v", vs)
				}
			}
		})
	}
}
