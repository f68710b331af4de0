package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
)

// Extensions holds the members of a JSON object that its Go type does not
// declare. The spec sets no additionalProperties:false anywhere, so receivers
// must tolerate unknown fields; xconn keeps them so that a decode/encode round
// trip loses nothing. Keys are JSON member names; values are raw JSON.
type Extensions map[string]json.RawMessage

// decodeWithExtensions unmarshals data into plain (a pointer to a struct type
// without custom methods) and collects the members that the struct does not
// declare into *ext.
func decodeWithExtensions(data []byte, plain any, ext *Extensions) error {
	if err := json.Unmarshal(data, plain); err != nil {
		return err
	}
	*ext = nil
	// Fast path: count object members; if every member is known, skip the map.
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return err
	}
	known := jsonFieldNames(reflect.TypeOf(plain).Elem())
	for k, v := range all {
		if _, ok := known[k]; ok {
			continue
		}
		if *ext == nil {
			*ext = Extensions{}
		}
		(*ext)[k] = v
	}
	return nil
}

// encodeWithExtensions marshals plain and appends the members of ext that the
// struct did not already write, in sorted key order.
func encodeWithExtensions(plain any, ext Extensions) ([]byte, error) {
	b, err := json.Marshal(plain)
	if err != nil || len(ext) == 0 {
		return b, err
	}
	known := jsonFieldNames(reflect.TypeOf(plain).Elem())
	keys := make([]string, 0, len(ext))
	for k := range ext {
		if _, ok := known[k]; ok {
			continue // a declared field always wins over a stale extension
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return b, nil
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
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		v := ext[k]
		if len(v) == 0 {
			v = json.RawMessage("null")
		}
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
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
