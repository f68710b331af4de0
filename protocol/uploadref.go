package protocol

import "encoding/json"

// FormatUploadRef is the JSON Schema "format" that marks a tool argument as
// an internal upload reference (sections 8.19 and 10): a string property
// {"type": "string", "format": "xagent-upload-ref"} of a tool's
// input_schema. The spec leaves the declaration's spelling to the
// implementation; xconn uses this format on both sides.
//
// xAgent projects such an argument to the model as a unified file_ref of a
// file the conversation has; before tool.invoke it opens that file, uploads
// it with POST /files/uploads for the channel and puts the returned
// file_ref in the argument. The Connector handler receives only that
// reference, never bytes, base64 or a target-system URL.
const FormatUploadRef = "xagent-upload-ref"

// UploadRefArguments returns the names of the top-level properties of a
// tool input schema that are declared upload references, in no particular
// order. A schema that does not decode yields nil.
func UploadRefArguments(inputSchema json.RawMessage) []string {
	var s struct {
		Properties map[string]struct {
			Type   json.RawMessage `json:"type"`
			Format string          `json:"format"`
		} `json:"properties"`
	}
	if json.Unmarshal(inputSchema, &s) != nil {
		return nil
	}
	var out []string
	for name, p := range s.Properties {
		if p.Format == FormatUploadRef && string(p.Type) == `"string"` {
			out = append(out, name)
		}
	}
	return out
}
