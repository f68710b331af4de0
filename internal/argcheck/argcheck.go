// Package argcheck validates tool arguments against a tool's input_schema
// (JSON Schema 2020-12, the default draft when the schema names none) and
// reports every violation with a JSON path such as "items[2].name".
//
// Schemas are self-contained: a $ref to another document (remote URL or
// file) is refused at compile time; only references inside the schema and
// to the standard meta-schemas (embedded in the library) resolve.
package argcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/xconn/xconn/protocol"
)

// MaxViolations bounds the violations one Validate call returns; further
// ones are summarised by a last violation at the document root.
const MaxViolations = 50

// schemaURL names the compiled document; it is never fetched. It is
// hierarchical so that a relative $ref resolves to another (refused)
// document instead of to itself.
const schemaURL = "https://input-schema.xconn.invalid/schema.json"

// Validator is a compiled input schema. It is immutable after Compile and
// safe for concurrent use.
type Validator struct {
	schema *jsonschema.Schema
	fast   *fastSchema // nil when the schema needs the general validator
}

// refuseLoader refuses every external document.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema %q refused: input schemas must be self-contained", url)
}

// Compile compiles a JSON Schema (2020-12 unless it declares another draft
// with $schema); "format" is asserted. It fails on malformed JSON, an invalid schema, or a $ref to
// any external document.
func Compile(schema json.RawMessage) (*Validator, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil, errors.New("argcheck: empty schema")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("argcheck: schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("argcheck: add schema: %w", err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("argcheck: compile schema: %w", err)
	}
	return &Validator{schema: s, fast: compileFast(schema)}, nil
}

// Validate checks args (a JSON object; empty or null counts as {}) and
// returns every violation with a JSON path ("text", "items[2].name") and a
// reason, sorted by path. nil means valid. Reasons never quote a string
// argument's value (for pattern and format failures they name only the rule).
func (v *Validator) Validate(args json.RawMessage) protocol.Violations {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		trimmed = []byte("{}")
	}
	if v.fast != nil && v.fast.accepts(trimmed) {
		return nil
	}
	inst, err := decodeInstance(trimmed)
	if err != nil {
		return protocol.Violations{{Path: "", Reason: "arguments are not valid JSON"}}
	}
	if _, ok := inst.(map[string]any); !ok {
		return protocol.Violations{{Path: "", Reason: "arguments must be a JSON object"}}
	}
	err = v.schema.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return protocol.Violations{{Path: "", Reason: "validation failed: " + err.Error()}}
	}
	p := message.NewPrinter(language.English)
	var out protocol.Violations
	collect(ve, inst, p, &out)
	slices.SortStableFunc(out, func(a, b protocol.Violation) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Reason, b.Reason)
	})
	out = slices.Compact(out)
	if len(out) > MaxViolations {
		n := len(out) - MaxViolations
		out = append(out[:MaxViolations:MaxViolations], protocol.Violation{Path: "", Reason: fmt.Sprintf("and %d more violations", n)})
	}
	return out
}

// collect appends the leaf errors of e.
func collect(e *jsonschema.ValidationError, inst any, p *message.Printer, out *protocol.Violations) {
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			collect(c, inst, p, out)
		}
		return
	}
	base := path(inst, e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		for _, m := range k.Missing {
			*out = append(*out, protocol.Violation{Path: join(base, m), Reason: "is required"})
		}
	case *kind.AdditionalProperties:
		for _, m := range k.Properties {
			*out = append(*out, protocol.Violation{Path: join(base, m), Reason: "is not allowed"})
		}
	// Reasons never quote the argument's value: it may be sensitive.
	case *kind.Pattern:
		*out = append(*out, protocol.Violation{Path: base, Reason: "does not match pattern " + strconv.Quote(k.Want)})
	case *kind.Format:
		*out = append(*out, protocol.Violation{Path: base, Reason: "is not a valid " + k.Want})
	case *kind.ContentMediaType:
		*out = append(*out, protocol.Violation{Path: base, Reason: "is not valid " + k.Want + " content"})
	case *kind.ContentEncoding:
		*out = append(*out, protocol.Violation{Path: base, Reason: "is not valid " + k.Want + " content"})
	default:
		*out = append(*out, protocol.Violation{Path: base, Reason: k.LocalizedString(p)})
	}
}

// path renders a JSON Pointer's tokens as "a.b[2].c", using the instance to
// tell array indexes from object keys.
func path(inst any, tokens []string) string {
	var b strings.Builder
	cur := inst
	for _, t := range tokens {
		switch v := cur.(type) {
		case []any:
			i, err := strconv.Atoi(t)
			if err == nil && i >= 0 && i < len(v) {
				b.WriteString("[" + t + "]")
				cur = v[i]
				continue
			}
			cur = nil
		case map[string]any:
			cur = v[t]
		default:
			cur = nil
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(t)
	}
	return b.String()
}

func join(base, name string) string {
	if base == "" {
		return name
	}
	return base + "." + name
}
