package argcheck

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/xconn/xconn/internal/jsonbytes"
)

// This file holds the fast path of Validate for the schemas tools mostly
// have (what internal/schemagen makes of a flat struct): an object whose
// properties are strings (with minLength, maxLength, enum), integers,
// numbers or booleans, a required list of declared properties and a boolean
// additionalProperties. For such a schema, arguments that are a flat object
// of plain scalars are checked in one pass over their bytes, without
// decoding them into a map and without the general validator.
//
// The fast path only ever accepts: whenever it meets something it does not
// handle, or a violation, Validate falls back to the general validator,
// which decides and reports the violations with their exact wording.

// maxFastProps bounds the properties of a fast schema (one bit each).
const maxFastProps = 64

// fastKind is the type a fast property accepts.
type fastKind uint8

const (
	fastAny     fastKind = iota // no type keyword: any scalar
	fastString                  // "type": "string"
	fastInteger                 // "type": "integer"
	fastNumber                  // "type": "number"
	fastBoolean                 // "type": "boolean"
)

// fastProp is one declared property of a fast schema.
type fastProp struct {
	name   string
	kind   fastKind
	minLen int // -1 when absent
	maxLen int // -1 when absent
	enum   []string
}

// fastSchema is the compiled form of a schema the fast path handles.
type fastSchema struct {
	props      []fastProp
	required   uint64 // bit i: props[i] is required
	additional bool   // members outside props are allowed
}

// Annotation keywords carry no assertion: the fast path ignores them.
var annotations = map[string]bool{
	"title": true, "description": true, "$comment": true, "default": true,
	"examples": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// compileFast returns the fast form of schema, or nil when the schema uses
// anything beyond what the fast path handles.
func compileFast(schema []byte) *fastSchema {
	var top map[string]json.RawMessage
	if json.Unmarshal(schema, &top) != nil || top == nil {
		return nil
	}
	f := &fastSchema{additional: true}
	var required []string
	for k, v := range top {
		switch {
		case annotations[k]:
		case k == "$schema":
			var s string
			if json.Unmarshal(v, &s) != nil || s != "https://json-schema.org/draft/2020-12/schema" {
				return nil
			}
		case k == "type":
			var s string
			if json.Unmarshal(v, &s) != nil || s != "object" {
				return nil
			}
		case k == "additionalProperties":
			if json.Unmarshal(v, &f.additional) != nil {
				return nil
			}
		case k == "required":
			if json.Unmarshal(v, &required) != nil {
				return nil
			}
		case k == "properties":
			var props map[string]json.RawMessage
			if json.Unmarshal(v, &props) != nil || props == nil || len(props) > maxFastProps {
				return nil
			}
			for name, ps := range props {
				p, ok := compileFastProp(name, ps)
				if !ok {
					return nil
				}
				f.props = append(f.props, p)
			}
		default:
			return nil
		}
	}
	for _, r := range required {
		i := f.index([]byte(r))
		if i < 0 {
			return nil // required but not declared: left to the general path
		}
		f.required |= 1 << uint(i)
	}
	return f
}

// compileFastProp compiles one property schema; false when it uses
// anything the fast path does not handle.
func compileFastProp(name string, schema []byte) (fastProp, bool) {
	p := fastProp{name: name, minLen: -1, maxLen: -1}
	var m map[string]json.RawMessage
	if json.Unmarshal(schema, &m) != nil || m == nil {
		return p, false
	}
	for k, v := range m {
		switch {
		case annotations[k]:
		case k == "type":
			var s string
			if json.Unmarshal(v, &s) != nil {
				return p, false
			}
			switch s {
			case "string":
				p.kind = fastString
			case "integer":
				p.kind = fastInteger
			case "number":
				p.kind = fastNumber
			case "boolean":
				p.kind = fastBoolean
			default:
				return p, false
			}
		case k == "minLength" || k == "maxLength":
			var n uint32
			if json.Unmarshal(v, &n) != nil || !plainUint(v) {
				return p, false
			}
			if k == "minLength" {
				p.minLen = int(n)
			} else {
				p.maxLen = int(n)
			}
		case k == "enum":
			if json.Unmarshal(v, &p.enum) != nil || len(p.enum) == 0 {
				return p, false
			}
		default:
			return p, false
		}
	}
	// Length and enum rules are checked on strings only. Without a type,
	// the fast path takes only strings for them (enum members are strings;
	// a length rule ignores other values, which the general path then
	// accepts).
	if p.minLen >= 0 || p.maxLen >= 0 || p.enum != nil {
		switch p.kind {
		case fastAny:
			p.kind = fastString
		case fastString:
		default:
			return p, false
		}
	}
	return p, true
}

// plainUint reports whether v is written as digits only (no fraction or
// exponent, which the general validator reads its own way).
func plainUint(v []byte) bool {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// index returns the position of the property named key, or -1.
func (f *fastSchema) index(key []byte) int {
	for i := range f.props {
		if f.props[i].name == string(key) {
			return i
		}
	}
	return -1
}

// accepts reports whether b (valid or not) is certainly a valid instance;
// false means "let the general validator decide".
func (f *fastSchema) accepts(b []byte) bool {
	i := jsonbytes.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = jsonbytes.SkipSpace(b, i+1)
	var seen uint64
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return false
			}
			key, next, ok := scanKey(b, i)
			if !ok {
				return false
			}
			i = jsonbytes.SkipSpace(b, next)
			if i >= len(b) || b[i] != ':' {
				return false
			}
			i = jsonbytes.SkipSpace(b, i+1)
			val, next, ok := scanScalar(b, i)
			if !ok {
				return false
			}
			i = jsonbytes.SkipSpace(b, next)
			if pi := f.index(key); pi >= 0 {
				bit := uint64(1) << uint(pi)
				if seen&bit != 0 || !f.props[pi].accepts(val) {
					return false // a duplicate: the last one counts; let the general path read it
				}
				seen |= bit
			} else if !f.additional {
				return false
			}
			if i >= len(b) {
				return false
			}
			if b[i] == ',' {
				i = jsonbytes.SkipSpace(b, i+1)
				continue
			}
			if b[i] != '}' {
				return false
			}
			i++
			break
		}
	}
	return jsonbytes.SkipSpace(b, i) == len(b) && seen&f.required == f.required
}

// accepts reports whether the scalar val satisfies the property.
func (p *fastProp) accepts(val []byte) bool {
	c := val[0]
	switch p.kind {
	case fastAny:
		return true
	case fastBoolean:
		return c == 't' || c == 'f'
	case fastNumber:
		return c == '-' || c >= '0' && c <= '9'
	case fastInteger:
		if c != '-' && (c < '0' || c > '9') {
			return false
		}
		// Digits only: 1.0 and 1e2 are integers too, but the general
		// path reads those.
		return bytes.IndexAny(val, ".eE") < 0
	}
	// fastString
	if c != '"' {
		return false
	}
	body := val[1 : len(val)-1]
	if p.minLen >= 0 || p.maxLen >= 0 {
		n := utf8.RuneCount(body)
		if p.minLen >= 0 && n < p.minLen || p.maxLen >= 0 && n > p.maxLen {
			return false
		}
	}
	if p.enum != nil {
		for _, e := range p.enum {
			if e == string(body) {
				return true
			}
		}
		return false
	}
	return true
}

// scanKey reads the member name at b[i] (a '"'): printable ASCII without
// escapes only. It returns the name's bytes and the index after it.
func scanKey(b []byte, i int) ([]byte, int, bool) {
	for j := i + 1; j < len(b); j++ {
		c := b[j]
		switch {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// scanScalar reads the scalar value at b[i]: a string without escapes in
// valid UTF-8, a number, true, false or null. Objects, arrays and anything
// else are refused. It returns the value's bytes and the index after it.
func scanScalar(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) {
		return nil, 0, false
	}
	switch c := b[i]; {
	case c == '"':
		ascii := true
		for j := i + 1; j < len(b); j++ {
			c := b[j]
			switch {
			case c == '"':
				if !ascii && !utf8.Valid(b[i+1:j]) {
					return nil, 0, false
				}
				return b[i : j+1], j + 1, true
			case c == '\\' || c < 0x20:
				return nil, 0, false
			case c >= 0x80:
				ascii = false
			}
		}
		return nil, 0, false
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		end, ok := jsonbytes.NumberEnd(b, i)
		if !ok {
			return nil, 0, false
		}
		return b[i:end], end, true
	}
	return nil, 0, false
}

func literal(b []byte, i int, lit string) ([]byte, int, bool) {
	end := i + len(lit)
	if end > len(b) || string(b[i:end]) != lit {
		return nil, 0, false
	}
	return b[i:end], end, true
}
