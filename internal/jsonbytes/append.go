package jsonbytes

import "bytes"

// Plain reports whether s is printable ASCII other than the quote, the
// backslash and <, > and & (which encoding/json escapes for HTML): then
// encoding/json writes it as a JSON string without any escape. It is
// conservative: it reports false for some strings (non-ASCII, DEL) that
// encoding/json also writes unescaped.
func Plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// AppendMember appends prefix (for example `,"type":`) and s as a JSON
// string. s must be [Plain]; nothing is escaped.
func AppendMember(b []byte, prefix, s string) []byte {
	b = append(b, prefix...)
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// Escaped reports whether JSON text b holds a byte sequence that
// encoding/json escapes when it compacts a RawMessage: <, >, & and the
// line separators U+2028 and U+2029. Without one, json.Compact writes what
// json.Marshal of the RawMessage would.
func Escaped(b []byte) bool {
	return bytes.ContainsAny(b, "<>&") || bytes.Contains(b, []byte("\u2028")) || bytes.Contains(b, []byte("\u2029"))
}
