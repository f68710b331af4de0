package jsonbytes

import (
	"encoding/json"
	"testing"
)

// Plain must hold only for strings encoding/json writes unescaped, and
// for the usual ids.
func TestPlainMatchesEncodingJSON(t *testing.T) {
	for _, id := range []string{"", "pkt_1", "xagent.connector.packet/v3", "a b~"} {
		if !Plain(id) {
			t.Errorf("Plain(%q) = false", id)
		}
	}
	for _, s := range []string{"", "pkt_1", "a b", "<", ">", "&", `"`, `\`, "\x1f", "\x7f", "é", "\u2028", "~"} {
		enc, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		unescaped := string(enc) == `"`+s+`"`
		if Plain(s) && !unescaped {
			t.Errorf("Plain(%q), but encoding/json writes %s", s, enc)
		}
		if !Plain(s) && s != "\x7f" && len(s) == 1 && unescaped {
			t.Errorf("Plain(%q) = false for a printable ASCII string encoding/json leaves as it is", s)
		}
		if Plain(s) {
			if got := string(AppendMember(nil, `{"k":`, s)) + "}"; got != `{"k":`+string(enc)+"}" {
				t.Errorf("AppendMember(%q) = %s", s, got)
			}
		}
	}
}

func FuzzPlain(f *testing.F) {
	f.Add("pkt_1")
	f.Add("<&>")
	f.Fuzz(func(t *testing.T, s string) {
		enc, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if Plain(s) && string(enc) != `"`+s+`"` {
			t.Fatalf("Plain(%q) but encoding/json writes %s", s, enc)
		}
	})
}
