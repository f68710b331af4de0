package connector

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// fuzzForm covers every kind a form field may have.
type fuzzForm struct {
	S string  `json:"s" secret:"true"`
	I int8    `json:"i,omitempty"`
	U uint16  `json:"u,omitempty"`
	F float32 `json:"f,omitempty"`
	B bool    `json:"b,omitempty"`
}

// FuzzFormDecode feeds arbitrary text to a typed form: it never panics, a
// value it accepts is the one strconv parses, and a refusal names the field
// without quoting the value.
func FuzzFormDecode(f *testing.F) {
	for _, s := range []string{"", "1", "-129", "70000", "3.5", "true", " 42 ", "NaN", "0x10", "１"} {
		f.Add("secret-value", s)
	}
	_, decode, err := formOf[fuzzForm]()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, sv, num string) {
		in, vs := decode(map[string]string{"s": sv, "i": num, "u": num, "f": num, "b": num})
		if sv != "" && in.S != sv {
			t.Fatalf("string field = %q, want %q", in.S, sv)
		}
		failed := map[string]bool{}
		for _, v := range vs {
			failed[v.Path] = true
			if len(num) >= 4 && strings.Contains(v.Reason, num) {
				t.Fatalf("reason quotes the value: %q", v.Reason)
			}
		}
		tn := strings.TrimSpace(num)
		if n, err := strconv.ParseInt(tn, 10, 8); num != "" && err == nil && (failed["input.i"] || int64(in.I) != n) {
			t.Fatalf("int8 %q decoded as %d (failed %v)", num, in.I, failed["input.i"])
		}
		if _, err := strconv.ParseInt(tn, 10, 8); num != "" && err != nil && !failed["input.i"] {
			t.Fatalf("int8 %q accepted", num)
		}
		if _, err := strconv.ParseBool(tn); num != "" && err != nil && !failed["input.b"] {
			t.Fatalf("bool %q accepted", num)
		}
	})
}

// FuzzContainsToken checks the API key search against a plain scan.
func FuzzContainsToken(f *testing.F) {
	f.Add([]byte("the key is Zq3-kd82-Lm0x-Pq7."), []byte("Zq3-kd82-Lm0x-Pq7"))
	f.Add([]byte("prefixKEYsuffix KEY"), []byte("KEY"))
	f.Add([]byte("aaaa"), []byte("aa"))
	f.Fuzz(func(t *testing.T, text, key []byte) {
		if len(key) == 0 || len(text) > 4096 {
			return
		}
		want := false
		for i := 0; i+len(key) <= len(text); i++ {
			if !bytes.Equal(text[i:i+len(key)], key) {
				continue
			}
			end := i + len(key)
			if (i == 0 || !isTokenByte(text[i-1])) && (end == len(text) || !isTokenByte(text[end])) {
				want = true
				break
			}
		}
		if got := containsToken(text, key); got != want {
			t.Fatalf("containsToken(%q, %q) = %v, want %v", text, key, got, want)
		}
	})
}
