package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"

	"github.com/xconn/xconn/internal/jsonbytes"
)

// Extensions holds the members of a JSON object that its Go type does not
// declare. The spec sets no additionalProperties:false anywhere, so receivers
// must tolerate unknown fields; xconn keeps them so that a decode/encode round
// trip loses nothing. Keys are JSON member names; values are raw JSON.
type Extensions map[string]json.RawMessage

// decodeWithExtensions unmarshals data into plain (a pointer to a struct type
// without custom methods) and collects the members that the struct does not
// declare into *ext. Finding them costs one scan of the top-level members,
// not a second decode.
func decodeWithExtensions(data []byte, plain any, ext *Extensions) error {
	if isNull(jsonbytes.TrimSpace(data)) {
		return nil // the encoding/json convention: null leaves the value as it is
	}
	t := reflect.TypeOf(plain).Elem()
	var variants bool // a member whose name differs from a declared one only in case
	if json.Valid(data) {
		_ = eachMember(data, func(key, _ []byte) error {
			name := rawKeyString(key)
			if !declaresField(t, name) && foldsToField(t, name) {
				variants = true
			}
			return nil
		})
	}
	src := data
	if variants {
		// encoding/json would let such a member set the declared field
		// (it matches names case-insensitively); keep it as an extension
		// instead, so that a round trip decodes to the same value.
		src = withoutCaseVariants(data, t)
	}
	if err := json.Unmarshal(src, plain); err != nil {
		return err
	}
	*ext = nil
	return eachMember(data, func(key, val []byte) error {
		name := rawKeyString(key)
		if declaresField(t, name) {
			return nil
		}
		if *ext == nil {
			*ext = Extensions{}
		}
		(*ext)[name] = cloneRaw(val)
		return nil
	})
}

// foldsToField reports whether name equals a declared member name of t up to
// case.
func foldsToField(t reflect.Type, name string) bool {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		fn, _, _ := strings.Cut(tag, ",")
		if fn == "" {
			fn = f.Name
		}
		if strings.EqualFold(fn, name) {
			return true
		}
	}
	return false
}

// withoutCaseVariants re-encodes the object in data without the members
// whose names fold to, but do not equal, a declared member of t.
func withoutCaseVariants(data []byte, t reflect.Type) []byte {
	out := []byte{'{'}
	_ = eachMember(data, func(key, val []byte) error {
		name := rawKeyString(key)
		if !declaresField(t, name) && foldsToField(t, name) {
			return nil
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, key...)
		out = append(out, ':')
		out = append(out, val...)
		return nil
	})
	return append(out, '}')
}

// declaresField reports whether struct type t declares the JSON member name
// exactly. A member that differs only in case is kept as an extension (and
// flagged by validation), so a round trip writes back what it read.
func declaresField(t reflect.Type, name string) bool {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		fn, _, _ := strings.Cut(tag, ",")
		if fn == "" {
			fn = f.Name
		}
		if fn == name {
			return true
		}
	}
	return false
}

// encodeWithExtensions marshals plain and appends the members of ext that the
// struct did not already write, in sorted key order.
func encodeWithExtensions(plain any, ext Extensions) ([]byte, error) {
	b, err := json.Marshal(plain)
	if err != nil || len(ext) == 0 {
		return b, err
	}
	return appendExtensions(b, reflect.TypeOf(plain).Elem(), ext), nil
}

// appendExtensions adds the members of ext that struct type t does not
// declare to the encoded object b, in sorted key order. A declared field
// always wins over a stale extension of the same name.
func appendExtensions(b []byte, t reflect.Type, ext Extensions) []byte {
	keys := make([]string, 0, len(ext))
	for k := range ext {
		if !declaresField(t, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return b
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	buf.Grow(len(b) + 32*len(keys))
	buf.Write(b[:len(b)-1]) // drop the closing brace
	first := len(b) == 2    // "{}"
	for _, k := range keys {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		buf.Write(appendJSONString(nil, k))
		buf.WriteByte(':')
		v := ext[k]
		if len(v) == 0 || !json.Valid(v) {
			v = json.RawMessage("null")
		}
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// jsonFieldNames returns the JSON member names a struct type declares.
func jsonFieldNames(t reflect.Type) map[string]struct{} {
	names := make(map[string]struct{}, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		names[name] = struct{}{}
	}
	return names
}
