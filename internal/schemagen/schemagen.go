// Package schemagen derives the JSON Schema of a tool's input from a Go
// struct type, for the typed tool handlers of the connector SDK.
//
// The mapping:
//   - properties come from exported fields and their json tags (a "-" tag
//     skips the field; embedded structs without a tag are flattened);
//   - a field is required unless its json tag has omitempty or omitzero, or
//     its type is a pointer;
//   - `desc:"..."` sets description, `enum:"a,b"` sets enum (values are typed
//     after the field: integers, numbers and booleans are parsed);
//   - a type implementing StringFormatter is a string with that format;
//   - string, integer, number, boolean, array (slices and arrays; []byte is a
//     base64 string), object (nested structs), maps with string keys
//     (additionalProperties), time.Time (string, format date-time) and
//     json.RawMessage (any value).
//
// Struct objects carry "additionalProperties": false.
//
// Output is deterministic: object members are written in sorted key order,
// properties in field order of the struct. Unsupported kinds (chan, func,
// complex, unsafe pointers, interfaces other than any) are errors, never
// panics. Functions are pure and safe for concurrent use.
package schemagen

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxDepth bounds nesting so that recursive types are refused instead of
// looping forever.
const maxDepth = 32

// timeType and rawType are the types with a fixed mapping.
func timeType() reflect.Type { return reflect.TypeFor[time.Time]() }
func rawType() reflect.Type  { return reflect.TypeFor[json.RawMessage]() }

// For returns the JSON Schema (an object schema) of struct type T.
func For[T any]() (json.RawMessage, error) {
	return FromType(reflect.TypeFor[T]())
}

// FromType returns the JSON Schema (an object schema) of struct type t (or a
// pointer to one).
func FromType(t reflect.Type) (json.RawMessage, error) {
	if t == nil {
		return nil, errors.New("schemagen: nil type")
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == timeType() {
		return nil, fmt.Errorf("schemagen: %v is not a struct type", t)
	}
	s, err := schemaOf(t, nil)
	if err != nil {
		return nil, fmt.Errorf("schemagen: %v: %w", t, err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("schemagen: encode schema of %v: %w", t, err)
	}
	return b, nil
}

// schema is one JSON Schema node. Properties keep struct field order.
type schema struct {
	Type                 string      `json:"type,omitempty"`
	Format               string      `json:"format,omitempty"`
	ContentEncoding      string      `json:"contentEncoding,omitempty"`
	Description          string      `json:"description,omitempty"`
	Enum                 []any       `json:"enum,omitempty"`
	Items                *schema     `json:"items,omitempty"`
	Properties           *properties `json:"properties,omitempty"`
	Required             []string    `json:"required,omitempty"`
	AdditionalProperties any         `json:"additionalProperties,omitempty"`
}

type property struct {
	name string
	s    *schema
}

// properties encodes as a JSON object in field order.
type properties []property

func (ps properties) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(p.name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(p.s)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// StringFormatter is implemented by types that encode as a JSON string
// of a given format (for example the SDK's upload references): their
// schema is {"type": "string", "format": JSONSchemaStringFormat()}.
type StringFormatter interface {
	JSONSchemaStringFormat() string
}

func stringFormatterType() reflect.Type { return reflect.TypeFor[StringFormatter]() }

// schemaOf maps t; stack holds the struct types being expanded (cycle check).
func schemaOf(t reflect.Type, stack []reflect.Type) (*schema, error) {
	if len(stack) > maxDepth {
		return nil, errors.New("nesting deeper than 32 levels")
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && t.Implements(stringFormatterType()) {
		return &schema{Type: "string", Format: reflect.Zero(t).Interface().(StringFormatter).JSONSchemaStringFormat()}, nil
	}
	switch t {
	case timeType():
		return &schema{Type: "string", Format: "date-time"}, nil
	case rawType():
		return &schema{}, nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return schemaOf(t.Elem(), stack)
	case reflect.String:
		return &schema{Type: "string"}, nil
	case reflect.Bool:
		return &schema{Type: "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return &schema{Type: "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return &schema{Type: "number"}, nil
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return &schema{Type: "string", ContentEncoding: "base64"}, nil
		}
		it, err := schemaOf(t.Elem(), stack)
		if err != nil {
			return nil, err
		}
		return &schema{Type: "array", Items: it}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("map key type %v: only string keys are supported", t.Key())
		}
		v, err := schemaOf(t.Elem(), stack)
		if err != nil {
			return nil, err
		}
		var ap any = v
		if v.Type == "" { // any value
			ap = true
		}
		return &schema{Type: "object", AdditionalProperties: ap}, nil
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return &schema{}, nil
		}
	case reflect.Struct:
		for _, s := range stack {
			if s == t {
				return nil, fmt.Errorf("recursive type %v", t)
			}
		}
		return structSchema(t, append(stack, t))
	}
	return nil, fmt.Errorf("unsupported type %v (kind %v)", t, t.Kind())
}

func structSchema(t reflect.Type, stack []reflect.Type) (*schema, error) {
	s := &schema{Type: "object", Properties: &properties{}, AdditionalProperties: false}
	depth := map[string]int{}
	if err := addFields(s, t, stack, 0, depth); err != nil {
		return nil, err
	}
	return s, nil
}

// addFields adds the fields of struct t to s, flattening untagged embedded
// structs. As in encoding/json, a field at a shallower embedding level
// hides one of the same name deeper down; depth records the level of each
// property name.
func addFields(s *schema, t reflect.Type, stack []reflect.Type, level int, depth map[string]int) error {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && !hasTag {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && ft != timeType() {
				if err := addFields(s, ft, stack, level+1, depth); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fs, err := schemaOf(f.Type, stack)
		if err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		fs = clone(fs)
		fs.Description = f.Tag.Get("desc")
		if e, ok := f.Tag.Lookup("enum"); ok {
			vals, err := enumValues(e, fs.Type)
			if err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
			fs.Enum = vals
		}
		if d, seen := depth[name]; seen {
			if d <= level {
				continue // hidden by a shallower (or earlier) field
			}
			removeProperty(s, name)
		}
		depth[name] = level
		*s.Properties = append(*s.Properties, property{name: name, s: fs})
		if !hasOpt(opts, "omitempty") && !hasOpt(opts, "omitzero") && f.Type.Kind() != reflect.Pointer {
			s.Required = append(s.Required, name)
		}
	}
	return nil
}

// removeProperty drops name from s's properties and required list.
func removeProperty(s *schema, name string) {
	*s.Properties = slices.DeleteFunc(*s.Properties, func(p property) bool { return p.name == name })
	s.Required = slices.DeleteFunc(s.Required, func(r string) bool { return r == name })
}

func clone(s *schema) *schema {
	c := *s
	return &c
}

func hasOpt(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// enumValues parses an enum tag for a field of JSON type typ.
func enumValues(tag, typ string) ([]any, error) {
	var out []any
	for v := range strings.SplitSeq(tag, ",") {
		v = strings.TrimSpace(v)
		switch typ {
		case "string":
			out = append(out, v)
		case "integer":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("enum value %q is not an integer", v)
			}
			out = append(out, n)
		case "number":
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("enum value %q is not a number", v)
			}
			out = append(out, n)
		case "boolean":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("enum value %q is not a boolean", v)
			}
			out = append(out, b)
		default:
			return nil, fmt.Errorf("enum is supported on string, integer, number and boolean fields, not %q", typ)
		}
	}
	return out, nil
}
