package protocol

import (
	"bytes"
	"embed"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// SchemaKind selects one of the official JSON Schemas of protocol 3.0.
type SchemaKind int

// The official JSON Schemas embedded in this package.
const (
	// SchemaCard is xagent.connector.v1.schema.json (the Connector Card).
	SchemaCard SchemaKind = iota
	// SchemaDescriptor is xagent.connection.v2.schema.json (the Connection Descriptor v2).
	SchemaDescriptor
	// SchemaPacket is xagent.connector.packet.v1.schema.json (the packet envelope).
	SchemaPacket
)

func (k SchemaKind) String() string {
	switch k {
	case SchemaCard:
		return "card"
	case SchemaDescriptor:
		return "descriptor"
	case SchemaPacket:
		return "packet"
	}
	return "SchemaKind(" + strconv.Itoa(int(k)) + ")"
}

// schemaFiles holds the official schemas, byte-identical to the spec's copies.
// It is read-only.
//
//go:embed schemas/*.json
var schemaFiles embed.FS

func schemaFile(k SchemaKind) (string, bool) {
	switch k {
	case SchemaCard:
		return "schemas/xagent.connector.v1.schema.json", true
	case SchemaDescriptor:
		return "schemas/xagent.connection.v2.schema.json", true
	case SchemaPacket:
		return "schemas/xagent.connector.packet.v1.schema.json", true
	}
	return "", false
}

// compiledSchemas holds the compiled official schemas, indexed by SchemaKind.
type compiledSchemas [3]*jsonschema.Schema

// loadSchemas compiles the embedded schemas once, from the embedded bytes
// only (never the network). It is initialised once and never mutated after,
// so it is safe for concurrent use.
var loadSchemas = sync.OnceValues(func() (*compiledSchemas, error) {
	var out compiledSchemas
	for k := SchemaCard; k <= SchemaPacket; k++ {
		name, _ := schemaFile(k)
		raw, err := schemaFiles.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read embedded schema %s: %w", name, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("parse embedded schema %s: %w", name, err)
		}
		c := jsonschema.NewCompiler()
		// A loader that refuses everything: the schemas are self-contained
		// and the draft 2020-12 meta-schema is built into the library.
		c.UseLoader(noLoader{})
		url := "urn:xconn:embedded:" + name
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("add embedded schema %s: %w", name, err)
		}
		s, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("compile embedded schema %s: %w", name, err)
		}
		out[k] = s
	}
	return &out, nil
})

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema %s: remote schemas are not loaded", url)
}

// ValidateSchema validates data against one official JSON Schema of the
// protocol (embedded in this package, never fetched) and returns every
// violation with its JSON path in the style "tools[2].input_schema.required".
// A missing required member is reported at the member's own path
// ("connector.name: is required"). Invalid JSON is one violation at path "".
// It is safe for concurrent use.
func ValidateSchema(kind SchemaKind, data []byte) Violations {
	var vs Violations
	schemas, err := loadSchemas()
	if err != nil {
		vs.add("", "official schema unavailable: %v", err)
		return vs
	}
	if _, ok := schemaFile(kind); !ok {
		vs.add("", "unknown schema kind %d", int(kind))
		return vs
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		vs.add("", "invalid JSON: %v", err)
		return vs
	}
	err = schemas[kind].Validate(inst)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		vs.add("", "schema validation failed: %v", err)
		return vs
	}
	p := message.NewPrinter(language.English)
	collectSchemaErrors(ve, inst, p, &vs)
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].Path < vs[j].Path })
	return dedupeViolations(vs)
}

func collectSchemaErrors(ve *jsonschema.ValidationError, inst any, p *message.Printer, vs *Violations) {
	if _, ok := ve.ErrorKind.(*kind.Contains); ok {
		// The causes say why each item failed; the useful fact is that
		// no item matched.
		vs.add(instancePath(inst, ve.InstanceLocation), "%s", ve.ErrorKind.LocalizedString(p))
		return
	}
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			collectSchemaErrors(c, inst, p, vs)
		}
		return
	}
	path := instancePath(inst, ve.InstanceLocation)
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		for _, m := range k.Missing {
			vs.add(joinPath(path, m), "is required")
		}
		return
	case *kind.Const:
		vs.add(path, "must be %s", schemaValue(k.Want))
		return
	}
	vs.add(path, "%s", ve.ErrorKind.LocalizedString(p))
}

func schemaValue(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// instancePath turns a JSON Pointer token list into this package's path
// style, walking the instance so that array indexes are told apart from
// object keys made of digits.
func instancePath(inst any, loc []string) string {
	var b strings.Builder
	cur := inst
	for _, tok := range loc {
		switch v := cur.(type) {
		case []any:
			i, err := strconv.Atoi(tok)
			b.WriteString("[" + tok + "]")
			if err == nil && i >= 0 && i < len(v) {
				cur = v[i]
			} else {
				cur = nil
			}
		case map[string]any:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(tok)
			cur = v[tok]
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(tok)
			cur = nil
		}
	}
	return b.String()
}

// dedupeViolations drops exact duplicates, keeping the first occurrence.
func dedupeViolations(vs Violations) Violations {
	if len(vs) < 2 {
		return vs
	}
	seen := make(map[Violation]struct{}, len(vs))
	out := vs[:0]
	for _, v := range vs {
		if _, ok := seen[v]; ok {
			continue
		}
		seen[v] = struct{}{}
		out = append(out, v)
	}
	return out
}

// mergeSchemaAndRules combines rule violations with schema violations: a
// schema violation is dropped when a rule already reports the same path, or
// a path inside it ("build" is covered by "build.build_time"), because the
// rule's reason is the more precise one.
func mergeSchemaAndRules(rules, schema Violations) Violations {
	covered := func(p string) bool {
		for _, r := range rules {
			if r.Path == p || p != "" && (strings.HasPrefix(r.Path, p+".") || strings.HasPrefix(r.Path, p+"[")) {
				return true
			}
		}
		return false
	}
	out := append(Violations(nil), rules...)
	for _, v := range schema {
		if covered(v.Path) {
			continue
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil
	}
	return dedupeViolations(out)
}
