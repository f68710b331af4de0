package wsconn

import (
	"encoding/json"
	"strings"
	"testing"
)

var validCases = []string{
	``, ` `, `{}`, `[]`, `{"a":1}`, `{"a":[1,2,{"b":null}],"c":"x"}`, ` {"a" : true , "b":false} `,
	`{"a":1,}`, `[1,]`, `[,1]`, `{"a"}`, `{"a":}`, `{:1}`, `{1:2}`, `[1 2]`, `{"a":1 "b":2}`,
	`"\u00e9\n\"\\\/\b\f\r\t"`, `"\u00g0"`, `"\x"`, "\"a\x01\"", "\"\xff\xfe\"", `"abc`, `"\u12"`,
	`0`, `-0`, `01`, `-`, `1.`, `1.5`, `1e5`, `1E+5`, `1e-`, `.5`, `-1.5e-10`, `1e`, `+1`,
	`true`, `tru`, `truex`, `nul`, `null`, `false `, `[true,false,null]`, `{"a":{}} {}`, `]`, `}`,
	`[[[[]]]]`, `[[[[]]]`, `{"a":[}`, `[{]}`, `{]`, `[}`,
	strings.Repeat("[", 100) + strings.Repeat("]", 100), strings.Repeat("[", 100) + strings.Repeat("]", 99),
	strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70),
}

// TestValidJSON checks validJSON against json.Valid.
func TestValidJSON(t *testing.T) {
	for _, c := range validCases {
		if got, want := validJSON([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid says %v", c, got, want)
		}
	}
}

// FuzzValidJSON checks validJSON against json.Valid on any input.
func FuzzValidJSON(f *testing.F) {
	for _, c := range validCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, c string) {
		valid := json.Valid([]byte(c))
		if got := validJSON([]byte(c)); got != valid {
			t.Errorf("validJSON(%q) = %v, json.Valid says %v", c, got, valid)
		}
		members := eachValidMember([]byte(c), func(_, v []byte) bool { return json.Valid(v) })
		object := valid && strings.HasPrefix(strings.TrimLeft(c, " \t\r\n"), "{") && !strings.Contains(c, `\`)
		if members != object {
			t.Errorf("eachValidMember(%q) = %v, want %v", c, members, object)
		}
	})
}

// TestEachValidMember checks the member walk: json.Valid's verdict on
// objects, the members in order, and no names with escapes.
func TestEachValidMember(t *testing.T) {
	cases := append([]string{`{"a":1,"b":[1,{"c":"}"}]," c" : "x" }`, `{"a\"":1}`, `{"a":1}x`, `{}`, ` { } `},
		validCases...)
	for _, c := range cases {
		var keys []string
		var vals []string
		got := eachValidMember([]byte(c), func(k, v []byte) bool {
			keys, vals = append(keys, string(k)), append(vals, string(v))
			return true
		})
		var m map[string]json.RawMessage
		want := json.Unmarshal([]byte(c), &m) == nil && m != nil && !strings.Contains(c, `\"`)
		if got != want {
			t.Errorf("eachValidMember(%q) = %v, want %v", c, got, want)
			continue
		}
		for i, k := range keys {
			if got && !json.Valid([]byte(vals[i])) {
				t.Errorf("eachValidMember(%q): member %q has value %q", c, k, vals[i])
			}
		}
	}
}
