package protocol

import (
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/xconn/xconn/internal/jsonbytes"
)

// This file holds a small scanner for the top level of a JSON object. It
// lets the envelope, the hottest type on the data plane, decode in one pass
// with a handful of allocations, and lets every type find unknown members
// without a second full decode. Callers must check json.Valid first: the
// scanner assumes well-formed input.

var errNotObject = errors.New("not a JSON object")

// eachMember calls fn for every member of the JSON object in data with the
// raw key (quotes included) and the raw value. data must be valid JSON.
func eachMember(data []byte, fn func(key, val []byte) error) error {
	i := jsonbytes.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return errNotObject
	}
	i = jsonbytes.SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return nil
	}
	for i < len(data) {
		ks := i
		i = skipString(data, i)
		key := data[ks:i]
		i = jsonbytes.SkipSpace(data, i)
		i = jsonbytes.SkipSpace(data, i+1) // ':'
		vs := i
		i = skipValue(data, i)
		if err := fn(key, data[vs:i]); err != nil {
			return err
		}
		i = jsonbytes.SkipSpace(data, i)
		if i < len(data) && data[i] == ',' {
			i = jsonbytes.SkipSpace(data, i+1)
			continue
		}
		break
	}
	return nil
}

// skipString returns the index after the string starting at data[i] == '"'.
func skipString(data []byte, i int) int {
	i++
	for i < len(data) {
		switch data[i] {
		case '\\':
			i += 2
		case '"':
			return i + 1
		default:
			i++
		}
	}
	return i
}

// skipValue returns the index after the value starting at data[i].
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return i
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				i = skipString(data, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default: // number, true, false, null
		for i < len(data) {
			switch data[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// keyIs reports whether the raw key (with quotes) equals name. Escaped keys
// never match a plain name here; they fall back to the slow path.
func keyIs(raw []byte, name string) bool {
	return len(raw) == len(name)+2 && string(raw[1:len(raw)-1]) == name
}

// rawKeyString returns the key as a Go string, unescaping when needed.
func rawKeyString(raw []byte) string {
	if s, ok := fastString(raw); ok {
		return s
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// fastString converts a raw JSON string without escapes to a Go string.
func fastString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c == '\\' || c < 0x20 {
			return "", false
		}
	}
	if !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}

// decodeString decodes a raw JSON value into *dst with encoding/json's
// semantics (null leaves dst unchanged; a non-string is a type error).
func decodeString(raw []byte, dst *string) error {
	if s, ok := fastString(raw); ok {
		*dst = s
		return nil
	}
	return json.Unmarshal(raw, dst)
}

// isNull reports whether the raw value is the literal null.
func isNull(raw []byte) bool { return string(raw) == "null" }

// cloneRaw copies a raw value so that it does not alias the input buffer.
func cloneRaw(raw []byte) json.RawMessage {
	out := make(json.RawMessage, len(raw))
	copy(out, raw)
	return out
}

// appendJSONString appends s as a JSON string, escaping as encoding/json
// does (including <, > and & for HTML safety, and U+2028/U+2029).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
