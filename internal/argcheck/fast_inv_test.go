package argcheck

import (
	"encoding/json"
	"testing"
)

// fastSchemas are schemas the fast path handles, and one it must refuse.
var fastSchemas = []string{
	benchSchema,
	`{"additionalProperties":false,"properties":{"b":{"type":"boolean"},"connector_channel_id":{"description":"x","type":"string"},"f":{"type":"number"},"mode":{"type":"string","enum":["plain","markdown"]},"n":{"type":"integer"},"text":{"type":"string","description":"Message text"}},"required":["connector_channel_id","text","n","f","b"],"type":"object"}`,
	`{"type":"object","properties":{"s":{"type":"string","minLength":2,"maxLength":3},"any":{}}}`,
	`{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"x":{"type":"integer"}},"required":["x"]}`,
}

// general returns v without its fast path.
func general(v *Validator) *Validator { return &Validator{schema: v.schema} }

// TestFastPathUsed checks that the common schemas get a fast path and that
// it accepts typical valid arguments (and only schemas it understands).
func TestFastPathUsed(t *testing.T) {
	for _, s := range fastSchemas {
		v, err := Compile(json.RawMessage(s))
		if err != nil {
			t.Fatalf("Compile(%s): %v", s, err)
		}
		if v.fast == nil {
			t.Errorf("Compile(%s): no fast path", s)
		}
	}
	for _, s := range []string{
		`{"type":"object","properties":{"s":{"type":"string","format":"email"}}}`,
		`{"type":"object","properties":{"s":{"type":"string"}},"required":["t"]}`,
		`{"type":"object","properties":{"o":{"type":"object"}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"x":{"type":"integer"}}}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"type":"object","properties":{"n":{"type":"integer","minLength":1}}}`,
	} {
		v, err := Compile(json.RawMessage(s))
		if err != nil {
			t.Fatalf("Compile(%s): %v", s, err)
		}
		if v.fast != nil {
			t.Errorf("Compile(%s): fast path for a schema it does not handle", s)
		}
	}
	v, err := Compile(json.RawMessage(benchSchema))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{
		`{"connector_channel_id":"ch_1","text":"hi"}`,
		` { "connector_channel_id" : "ch_1" , "text" : "héllo", "mode":"plain" } `,
	} {
		if !v.fast.accepts([]byte(a)) {
			t.Errorf("fast path refuses valid %s", a)
		}
	}
}

// TestFastPathAgrees checks, over valid, invalid and unusual arguments, that
// the fast path never accepts what the general validator rejects, and that
// Validate's answer is the general validator's.
func TestFastPathAgrees(t *testing.T) {
	args := []string{
		`{}`, `null`, ``, `[]`, `"x"`, `{"connector_channel_id":"c","text":"hi"}`,
		`{"connector_channel_id":"c","text":""}`, `{"connector_channel_id":"c","text":"x","mode":"html"}`,
		`{"connector_channel_id":"c","text":"x","extra":1}`, `{"connector_channel_id":"c","text":"x","text":""}`,
		`{"connector_channel_id":"c","text":"a\"b"}`, `{"connector_channel_id":"c","text":"\u00e9"}`,
		`{"connector_channel_id":1,"text":"x"}`, `{"connector_channel_id":null,"text":"x"}`,
		`{"connector_channel_id":"c","text":"x",}`, `{"connector_channel_id":"c" "text":"x"}`,
		`{"connector_channel_id":"c","text":"x"} x`, `{"connector_channel_id":"c","text":"x"`,
		`{"connector_channel_id":"c","text":"x","n":1,"f":1.5e3,"b":true}`,
		`{"connector_channel_id":"c","text":"x","n":1.0,"f":-0,"b":false}`,
		`{"connector_channel_id":"c","text":"x","n":01,"f":1,"b":true}`,
		`{"connector_channel_id":"c","text":"x","n":-,"f":1,"b":true}`,
		`{"connector_channel_id":"c","text":"x","n":1,"f":1.,"b":true}`,
		`{"connector_channel_id":"c","text":"x","n":1,"f":"1","b":"true"}`,
		`{"connector_channel_id":"c","text":"x","n":1,"f":1,"b":tru}`,
		`{"s":"ab","any":null}`, `{"s":"a"}`, `{"s":"abcd"}`, `{"s":"éé"}`, `{"s":"ééé"}`, `{"s":"\xff\xfe"}`,
		`{"s":"ab","any":{"k":1}}`, `{"s":"ab","any":[1]}`, `{"x":5}`, `{"x":"5"}`, `{"x":5e0}`,
	}
	for _, s := range fastSchemas {
		v, err := Compile(json.RawMessage(s))
		if err != nil {
			t.Fatal(err)
		}
		g := general(v)
		for _, a := range args {
			want := g.Validate(json.RawMessage(a))
			if v.fast.accepts([]byte(a)) && len(want) > 0 {
				t.Errorf("schema %s: fast path accepts %s, general validator: %v", s, a, want)
			}
			if got := v.Validate(json.RawMessage(a)); got.Error() != want.Error() {
				t.Errorf("schema %s: Validate(%s) = %v, want %v", s, a, got, want)
			}
		}
	}
}

// FuzzFastPath checks that the fast path accepts only what the general
// validator accepts.
func FuzzFastPath(f *testing.F) {
	f.Add(`{"connector_channel_id":"c","text":"hi","n":1,"f":2.5,"b":true,"mode":"plain"}`)
	f.Add(`{"s":"ab","any":null,"x":-1}`)
	var vs []*Validator
	for _, s := range fastSchemas {
		v, err := Compile(json.RawMessage(s))
		if err != nil {
			f.Fatal(err)
		}
		vs = append(vs, v)
	}
	f.Fuzz(func(t *testing.T, a string) {
		for _, v := range vs {
			if v.fast.accepts([]byte(a)) {
				if got := general(v).Validate(json.RawMessage(a)); len(got) > 0 {
					t.Errorf("fast path accepts %q, general validator: %v", a, got)
				}
			}
		}
	})
}
