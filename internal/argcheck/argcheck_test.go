package argcheck

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

const sendSchema = `{
  "type": "object",
  "properties": {
    "connector_channel_id": {"type": "string"},
    "text": {"type": "string", "minLength": 1, "maxLength": 20},
    "mode": {"enum": ["fast", "slow"]},
    "count": {"type": "integer", "minimum": 1},
    "code": {"type": "string", "pattern": "^[0-9]+$"},
    "when": {"type": "string", "format": "date-time"},
    "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
    "meta": {"type": "object", "properties": {"2": {"type": "boolean"}}}
  },
  "required": ["connector_channel_id", "text"],
  "additionalProperties": false,
  "$defs": {"item": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}
}`

func mustCompile(t testing.TB, s string) *Validator {
	t.Helper()
	v, err := Compile(json.RawMessage(s))
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return v
}

func TestValidate(t *testing.T) {
	v := mustCompile(t, sendSchema)
	tests := []struct {
		name string
		args string
		want []string // "path: reason" prefixes, in order
	}{
		{"valid", `{"connector_channel_id":"c","text":"hi"}`, nil},
		{"valid full", `{"connector_channel_id":"c","text":"hi","mode":"fast","count":2,"code":"42","when":"2026-01-02T03:04:05Z","items":[{"name":"a"}],"meta":{"2":true}}`, nil},
		{"missing required", `{}`, []string{"connector_channel_id: is required", "text: is required"}},
		{"empty means {}", ``, []string{"connector_channel_id: is required", "text: is required"}},
		{"null means {}", `null`, []string{"connector_channel_id: is required", "text: is required"}},
		{"wrong type", `{"connector_channel_id":1,"text":"x"}`, []string{"connector_channel_id: got number, want string"}},
		{"too long", `{"connector_channel_id":"c","text":"` + strings.Repeat("x", 21) + `"}`, []string{"text: maxLength: got 21, want 20"}},
		{"enum", `{"connector_channel_id":"c","text":"x","mode":"medium"}`, []string{"mode: value must be one of"}},
		{"minimum", `{"connector_channel_id":"c","text":"x","count":0}`, []string{"count: minimum: got 0, want 1"}},
		{"extra property", `{"connector_channel_id":"c","text":"x","other":1}`, []string{"other: is not allowed"}},
		{"nested array", `{"connector_channel_id":"c","text":"x","items":[{"name":"a"},{"name":"b"},{}]}`, []string{"items[2].name: is required"}},
		{"array item type", `{"connector_channel_id":"c","text":"x","items":[{"name":"a"},{"name":3}]}`, []string{"items[1].name: got number, want string"}},
		{"numeric object key", `{"connector_channel_id":"c","text":"x","meta":{"2":"no"}}`, []string{"meta.2: got string, want boolean"}},
		{"not an object", `[1,2]`, []string{": arguments must be a JSON object"}},
		{"malformed", `{"text":`, []string{": arguments are not valid JSON"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := v.Validate(json.RawMessage(tt.args))
			if len(got) != len(tt.want) {
				t.Fatalf("Validate(%s) = %v, want %d violations %v", tt.args, got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				s := got[i].Path + ": " + got[i].Reason
				if !strings.HasPrefix(s, w) {
					t.Errorf("violation %d = %q, want prefix %q", i, s, w)
				}
			}
		})
	}
}

func TestReasonsDoNotQuoteValues(t *testing.T) {
	v := mustCompile(t, sendSchema)
	const secret = "sk-live-abcdef"
	got := v.Validate(json.RawMessage(`{"connector_channel_id":"c","text":"x","code":"` + secret + `","when":"` + secret + `"}`))
	if len(got) != 2 {
		t.Fatalf("got %v, want pattern and format violations", got)
	}
	if strings.Contains(got.Error(), secret) {
		t.Fatalf("violations quote the argument value: %v", got)
	}
	if got[0].Path != "code" || got[1].Path != "when" {
		t.Fatalf("paths = %q, %q", got[0].Path, got[1].Path)
	}
}

func TestViolationsBounded(t *testing.T) {
	v := mustCompile(t, `{"type":"object","additionalProperties":false}`)
	var b strings.Builder
	b.WriteString("{")
	for i := range 80 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%02d":1`, i)
	}
	b.WriteString("}")
	got := v.Validate(json.RawMessage(b.String()))
	if len(got) != MaxViolations+1 || got[MaxViolations].Reason != "and 30 more violations" {
		t.Fatalf("got %d violations, last %v", len(got), got[len(got)-1])
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct{ name, schema, want string }{
		{"empty", ``, "empty schema"},
		{"not JSON", `{`, "not JSON"},
		{"invalid schema", `{"type": 5}`, "compile schema"},
		{"remote ref", `{"$ref": "https://example.com/s.json"}`, "refused"},
		{"file ref", `{"properties":{"a":{"$ref":"file:///etc/passwd"}}}`, "refused"},
		{"relative ref", `{"$ref": "other.json"}`, "refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Compile(json.RawMessage(tt.schema))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Compile = %v, %v; want error containing %q", v, err, tt.want)
			}
		})
	}
}

func TestDraftDeclared(t *testing.T) {
	v := mustCompile(t, `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","prefixItems":[{"type":"string"}]}`)
	if got := v.Validate(json.RawMessage(`{}`)); got != nil {
		t.Fatalf("Validate = %v", got)
	}
}

func TestConcurrentValidate(t *testing.T) {
	v := mustCompile(t, sendSchema)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				got := v.Validate(json.RawMessage(fmt.Sprintf(`{"connector_channel_id":"c","text":"x","count":%d}`, i-4)))
				if (i-4 < 1) != (len(got) == 1) {
					t.Errorf("count %d: %v", i-4, got)
				}
			}
		})
	}
	wg.Wait()
}

func FuzzValidate(f *testing.F) {
	v := mustCompile(f, sendSchema)
	f.Add([]byte(`{"connector_channel_id":"c","text":"hi"}`))
	f.Add([]byte(`{"items":[{"name":1},{}],"meta":{"2":0}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"text":"\u0000","count":1e400}`))
	f.Fuzz(func(t *testing.T, args []byte) {
		got := v.Validate(args)
		if len(got) > MaxViolations+1 {
			t.Fatalf("%d violations exceed the bound", len(got))
		}
		for _, vi := range got {
			if vi.Reason == "" {
				t.Fatalf("violation without reason: %+v", vi)
			}
		}
		var obj map[string]any
		if got == nil && len(args) > 0 && string(args) != "null" && json.Unmarshal(args, &obj) != nil {
			if strings.TrimSpace(string(args)) != "" && strings.TrimSpace(string(args)) != "null" {
				t.Fatalf("Validate accepted non-object arguments %q", args)
			}
		}
	})
}

func ExampleValidator_Validate() {
	v, err := Compile(json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(v.Validate(json.RawMessage(`{"text":"hi"}`)) == nil)
	fmt.Println(v.Validate(json.RawMessage(`{}`)))
	// Output:
	// true
	// text: is required
}
