package protocol

import (
	"bytes"
	"encoding/json"
	"maps"
	"testing"

	"github.com/xconn/xconn/internal/jsonbytes"
)

// payloadObjectReference is payloadObject as encoding/json alone computes
// it: the definition the one-pass walk must agree with.
func payloadObjectReference(raw []byte) (map[string]json.RawMessage, bool) {
	if len(jsonbytes.TrimSpace(raw)) == 0 {
		return nil, true
	}
	if !isJSONObject(raw) {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return m, true
}

func rawEqual(a, b json.RawMessage) bool { return bytes.Equal(a, b) }

func TestPayloadObject(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		ok   bool
		want map[string]json.RawMessage
	}{
		{raw: "", ok: true},
		{raw: " \n", ok: true},
		{raw: "{}", ok: true},
		{raw: " { } ", ok: true},
		{raw: `{"a":1,"b":{"c":[1,2]}}`, ok: true, want: map[string]json.RawMessage{"a": json.RawMessage("1"), "b": json.RawMessage(`{"c":[1,2]}`)}},
		{raw: `{"a":1,"a":"x"}`, ok: true, want: map[string]json.RawMessage{"a": json.RawMessage(`"x"`)}},
		{raw: `{"\u0061rguments":{}}`, ok: true, want: map[string]json.RawMessage{"arguments": json.RawMessage(`{}`)}},
		{raw: `[]`},
		{raw: `null`},
		{raw: `{"a":}`},
		{raw: `{"a":1`},
	} {
		got, ok := payloadObject(json.RawMessage(tc.raw))
		if ok != tc.ok || !maps.EqualFunc(got, tc.want, rawEqual) {
			t.Errorf("payloadObject(%q) = %q, %v; want %q, %v", tc.raw, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzPayloadObject(f *testing.F) {
	for _, s := range []string{"", "{}", `{"a":1}`, `{"a":{"b":[1,"x"]},"c":null}`, `{"\u0061":1}`, "{\"\xff\":1}", `{"a":1,"a":2}`, `[1]`, `{"a"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := payloadObject(raw)
		want, wantOK := payloadObjectReference(raw)
		if ok != wantOK || !maps.EqualFunc(got, want, rawEqual) {
			t.Fatalf("payloadObject(%q) = %q, %v; encoding/json: %q, %v", raw, got, ok, want, wantOK)
		}
	})
}
