package argcheck

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var instanceCases = []string{
	`{}`,
	`{"a":1,"b":-2.5e3,"c":"x","d":true,"e":false,"f":null,"g":[],"h":[1,"2",{"i":[null]}]}`,
	` { "k" : [ 1 , 2 ] , "k" : "last" } `,
	`{"esc":"a\"b\\c\u00e9\n","uni":"é☃𝄞","\u006bey":1}`,
	"{\"bad\":\"\xff\xfe\"}",
	`[1,2.0,3e-7,-0,12345678901234567890123]`,
	`"s"`,
	`123`,
	`null`,
	`{"a":}`,
	`{"a":1}x`,
	`{"a":"unterminated}`,
	``,
}

// TestDecodeInstanceMatchesLibrary checks that decodeInstance makes exactly
// what jsonschema.UnmarshalJSON makes, and fails where it fails.
func TestDecodeInstanceMatchesLibrary(t *testing.T) {
	for _, c := range instanceCases {
		want, wantErr := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(c)))
		got, gotErr := decodeInstance([]byte(c))
		if (gotErr != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("decodeInstance(%s) = %#v, %v; jsonschema.UnmarshalJSON = %#v, %v", c, got, gotErr, want, wantErr)
		}
	}
}

func FuzzDecodeInstance(f *testing.F) {
	for _, c := range instanceCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			return
		}
		want, wantErr := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		got, gotErr := decodeInstance(b)
		if (gotErr != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeInstance(%q) = %#v, %v; jsonschema.UnmarshalJSON = %#v, %v", b, got, gotErr, want, wantErr)
		}
	})
}
