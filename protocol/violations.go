package protocol

import (
	"strconv"
	"strings"
)

// Violation is one broken rule: where (a JSON path such as
// "tools[2].input_schema.required", "" for the document itself) and why.
type Violation struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

func (v Violation) String() string {
	if v.Path == "" {
		return v.Reason
	}
	return v.Path + ": " + v.Reason
}

// Violations is every broken rule of one validation. A nil or empty value
// means valid. It implements error so that it can be returned as one; use
// [Violations.Err] to get a nil error for an empty list.
type Violations []Violation

func (vs Violations) Error() string {
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(v.String())
	}
	return b.String()
}

// Err returns vs as an error, or nil when vs is empty.
func (vs Violations) Err() error {
	if len(vs) == 0 {
		return nil
	}
	return vs
}

// add appends a violation at path.
func (vs *Violations) add(path, format string, args ...any) {
	r := format
	if len(args) > 0 {
		r = sprintf(format, args...)
	}
	*vs = append(*vs, Violation{Path: path, Reason: r})
}

// joinPath builds JSON paths: joinPath("tools", 2, "tool_id") = "tools[2].tool_id".
func joinPath(parts ...any) string {
	var b strings.Builder
	for _, p := range parts {
		switch p := p.(type) {
		case int:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(p))
			b.WriteByte(']')
		case string:
			if p == "" {
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p)
		}
	}
	return b.String()
}
