package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// refEnvelope mirrors Envelope without custom methods: encoding/json's own
// decoding is the reference the fast codec must agree with.
type refEnvelope struct {
	Schema             string          `json:"schema"`
	PacketID           string          `json:"packet_id"`
	RequestID          string          `json:"request_id,omitempty"`
	ReplyTo            string          `json:"reply_to,omitempty"`
	ConnectorChannelID string          `json:"connector_channel_id,omitempty"`
	Type               string          `json:"type"`
	Time               int64           `json:"time,omitempty"`
	Payload            json.RawMessage `json:"payload,omitempty"`
	Error              *struct {
		Code    string `json:"code"`
		Message string `json:"message,omitempty"`
	} `json:"error,omitempty"`
}

func checkEnvelopeAgainstReference(t *testing.T, data []byte) {
	t.Helper()
	var got Envelope
	gotErr := json.Unmarshal(data, &got)
	var ref refEnvelope
	refErr := json.Unmarshal(data, &ref)
	if refErr != nil {
		if gotErr == nil && json.Valid(data) {
			// encoding/json matches member names case-insensitively; the
			// fast codec keeps such members as extensions instead. Only a
			// disagreement on a well-formed, exactly-named document counts.
			if !hasCaseVariantKey(data) {
				t.Fatalf("reference rejects %q (%v) but fast codec accepts it", data, refErr)
			}
		}
		return
	}
	if hasCaseVariantKey(data) {
		return
	}
	if gotErr != nil {
		t.Fatalf("fast codec rejects %q: %v", data, gotErr)
	}
	if got.Schema != ref.Schema || got.PacketID != ref.PacketID || got.RequestID != ref.RequestID ||
		got.ReplyTo != ref.ReplyTo || got.ConnectorChannelID != ref.ConnectorChannelID ||
		got.Type != ref.Type || got.Time != ref.Time {
		t.Fatalf("fields differ for %q:\nfast %+v\n ref %+v", data, got, ref)
	}
	var gp, rp any
	_ = json.Unmarshal(got.Payload, &gp)
	_ = json.Unmarshal(ref.Payload, &rp)
	if !reflect.DeepEqual(gp, rp) {
		t.Fatalf("payload differs for %q", data)
	}
	if (got.Error == nil) != (ref.Error == nil) || (got.Error != nil && (got.Error.Code != ref.Error.Code || got.Error.Message != ref.Error.Message)) {
		t.Fatalf("error differs for %q", data)
	}
	// Encoding then decoding gives the same envelope back.
	enc, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("encode %+v: %v", got, err)
	}
	var again Envelope
	if err := json.Unmarshal(enc, &again); err != nil {
		t.Fatalf("decode own encoding %s: %v", enc, err)
	}
	if !sameEnvelope(again, got) {
		t.Fatalf("round trip differs:\n%+v\n%+v", again, got)
	}
}

// sameEnvelope compares two envelopes with raw JSON members compared by
// meaning (encoding/json escapes <, > and & in Marshaler output).
func sameEnvelope(a, b Envelope) bool {
	same := func(x, y json.RawMessage) bool {
		if len(x) == 0 || len(y) == 0 {
			return len(x) == len(y)
		}
		if bytes.Equal(x, y) {
			return true // also for numbers no float64 holds, such as 1e700 (a fuzz crasher)
		}
		var vx, vy any
		return json.Unmarshal(x, &vx) == nil && json.Unmarshal(y, &vy) == nil && reflect.DeepEqual(vx, vy)
	}
	if !same(a.Payload, b.Payload) || len(a.Extensions) != len(b.Extensions) {
		return false
	}
	for k, v := range a.Extensions {
		if !same(v, b.Extensions[k]) {
			return false
		}
	}
	ea, _ := json.Marshal(a.Error)
	eb, _ := json.Marshal(b.Error)
	if !same(ea, eb) {
		return false
	}
	a.Payload, b.Payload, a.Extensions, b.Extensions, a.Error, b.Error = nil, nil, nil, nil, nil, nil
	return reflect.DeepEqual(a, b)
}

func hasCaseVariantKey(data []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return false
	}
	// The error object's members follow the same rule (see
	// TestCaseVariantMembersStayExtensions).
	var eb map[string]json.RawMessage
	if raw, ok := m["error"]; ok && json.Unmarshal(raw, &eb) == nil {
		for k := range eb {
			if k != "code" && k != "message" && (strings.EqualFold(k, "code") || strings.EqualFold(k, "message")) {
				return true
			}
		}
	}
	known := jsonFieldNames(reflect.TypeOf(refEnvelope{}))
	for k := range m {
		if _, ok := known[k]; ok {
			continue
		}
		for n := range known {
			if bytes.EqualFold([]byte(k), []byte(n)) {
				return true
			}
		}
	}
	return false
}

var envelopeCodecSeeds = []string{
	`{"schema":"xagent.connector.packet/v1","packet_id":"p1","type":"ping"}`,
	`{"schema":"xagent.connector.packet/v1","packet_id":"p\u00e9\n","request_id":"r","reply_to":"x","connector_channel_id":"c","type":"tool.invoke","time":1790000000000,"payload":{"tool_id":"t","arguments":{"a":[1,{"b":"}"}]}},"x":[1,2]}`,
	`{"schema":null,"packet_id":"p","type":"error","error":{"code":"invalid_packet","message":"m <&>","extra":true}}`,
	` { "type" : "a" , "payload" : null , "error" : null , "time" : null } `,
	`{"type":1}`,
	`{"time":1.5}`,
	`{"time":-3}`,
	`{"payload":[1]}`,
	`[]`,
	`"str"`,
	`{"schema":"\ud800"}`,
	`{"schema":"a\u2028b","packet_id":"\u0001"}`,
	`{"Type":"x","type":"y"}`,
	`{"type":"a","type":"b"}`,
	`{"\u0074ype":"escaped key"}`,
	`{`,
	"null ", // a fuzz crasher: encoding/json takes null as "no value"
}

func TestEnvelopeCodecMatchesEncodingJSON(t *testing.T) {
	for _, s := range envelopeCodecSeeds {
		checkEnvelopeAgainstReference(t, []byte(s))
	}
}

func FuzzEnvelopeCodec(f *testing.F) {
	for _, s := range envelopeCodecSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkEnvelopeAgainstReference(t, data)
	})
}

func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\", "<a&b>", "\x00\x1f\t\n\r", "é漢字", "\u2028\u2029", "bad\xffutf8", "\xed\xa0\x80"} {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
}
