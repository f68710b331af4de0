package protocol

import (
	"encoding/json"
	"strings"
)

// Upload references (sections 8.19 and 10).
//
// What the spec fixes: a Card tool may declare an internal upload-reference
// argument; xAgent projects it to the model as a unified file_ref, and
// before tool.invoke opens that file, uploads it with POST /files/uploads
// for the channel and puts the file_ref that upload returned (section 5.1)
// in the argument; the Connector handler consumes only that reference,
// never bytes, base64 or a target-system URL. What it leaves open: how the
// Card spells the declaration (neither the text nor the official schemas
// name a keyword).
//
// xconn's choice, in two halves. It emits the spec's own word: a string
// property whose JSON Schema format is "file_ref" ([FormatUploadRef]), the
// name the spec gives both to what /files/uploads returns and to what the
// model passes. It accepts, when it reads a Card, the spellings a third
// party is likely to use (see [IsUploadRefFormat] and
// [UploadRefArguments]): the format in any of file_ref, upload_ref,
// upload_reference, xagent_upload_ref (xconn's earlier marker) and
// xagent_file_ref, in any case and with '-' or '_', and a string property
// named file_ref that declares no format.

// FormatUploadRef is the JSON Schema "format" xconn writes to mark a tool
// argument as an upload reference: {"type": "string", "format":
// "file_ref"}.
const FormatUploadRef = "file_ref"

// uploadRefFormats are the accepted spellings of the format, normalised
// by normFormat.
var uploadRefFormats = []string{"file_ref", "upload_ref", "upload_reference", "xagent_upload_ref", "xagent_file_ref"}

func normFormat(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "-", "_")
}

// IsUploadRefFormat reports whether a JSON Schema format declares an
// upload reference: [FormatUploadRef] or one of the other accepted
// spellings (case-insensitive, '-' and '_' alike).
func IsUploadRefFormat(format string) bool {
	n := normFormat(format)
	for _, f := range uploadRefFormats {
		if n == f {
			return true
		}
	}
	return false
}

// UploadRefArguments returns the names of the top-level properties of a
// tool input schema that are upload references, in no particular order: a
// property of type string whose format [IsUploadRefFormat], or one named
// file_ref (the spec's word for the reference) that declares no format. A
// schema that does not decode yields nil.
func UploadRefArguments(inputSchema json.RawMessage) []string {
	var s struct {
		Properties map[string]struct {
			Type   json.RawMessage `json:"type"`
			Format *string         `json:"format"`
		} `json:"properties"`
	}
	if json.Unmarshal(inputSchema, &s) != nil {
		return nil
	}
	var out []string
	for name, p := range s.Properties {
		if string(p.Type) != `"string"` {
			continue
		}
		if (p.Format != nil && IsUploadRefFormat(*p.Format)) || (p.Format == nil && name == "file_ref") {
			out = append(out, name)
		}
	}
	return out
}
