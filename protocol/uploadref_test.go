package protocol

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestUploadRefArguments: the spec names no keyword for an upload
// reference, so a Card is read in the spellings a third party would use
// (issue 35 item 6): the format file_ref (what xconn writes) and its
// variants, xconn's earlier xagent-upload-ref, and a string property named
// file_ref without a format. A format that is not one of them, a
// non-string property or a nested one is not an upload reference.
func TestUploadRefArguments(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   []string
	}{
		{"xconn's format", `{"properties":{"doc":{"type":"string","format":"file_ref"}}}`, []string{"doc"}},
		{"earlier xconn marker", `{"properties":{"doc":{"type":"string","format":"xagent-upload-ref"}}}`, []string{"doc"}},
		{"spellings", `{"properties":{"a":{"type":"string","format":"FILE-REF"},"b":{"type":"string","format":"upload_ref"},` +
			`"c":{"type":"string","format":"upload-reference"},"d":{"type":"string","format":"xagent_file_ref"}}}`, []string{"a", "b", "c", "d"}},
		{"named file_ref", `{"properties":{"file_ref":{"type":"string"},"text":{"type":"string"}}}`, []string{"file_ref"}},
		{"named file_ref with another format", `{"properties":{"file_ref":{"type":"string","format":"uri"}}}`, nil},
		{"other format", `{"properties":{"when":{"type":"string","format":"date-time"},"u":{"type":"string","format":"uri"}}}`, nil},
		{"not a string", `{"properties":{"doc":{"type":"array","format":"file_ref"},"file_ref":{"type":"integer"}}}`, nil},
		{"nested", `{"properties":{"msg":{"type":"object","properties":{"doc":{"type":"string","format":"file_ref"}}}}}`, nil},
		{"not a schema", `[1,2]`, nil},
	}
	for _, tt := range tests {
		got := UploadRefArguments(json.RawMessage(tt.schema))
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if !IsUploadRefFormat(FormatUploadRef) {
		t.Errorf("IsUploadRefFormat(%q) = false", FormatUploadRef)
	}
}
