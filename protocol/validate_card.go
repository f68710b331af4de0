package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"github.com/xconn/xconn/internal/jsonbytes"
)

// ForbiddenCardKey may not appear anywhere in a Card (section 4.1).
const ForbiddenCardKey = "server_base_url"

// ValidateCard checks every hard rule of section 4.1 and the constraints of
// the official Card schema on a decoded Card, and returns all violations at
// once (nil when valid). It also rejects server_base_url in any unknown
// member of the Card, and unknown members whose names differ from a
// declared member only in case ("Schema" next to "schema"). It is pure and safe for concurrent use.
//
// A tool without a "profile" is accepted (the schema makes it optional); a
// tool that names one must name a Profile of supports.profiles. Every
// auth_flows[] entry needs the members the spec's table requires (id,
// target_type, type, title), and its target_type must be one of
// supports.target_types: see [ValidateAuthFlows] and [ValidateAuthFlowTargets].
func ValidateCard(c *Card) Violations {
	var vs Violations
	if c == nil {
		vs.add("", "card is missing")
		return vs
	}
	if c.Schema != CardSchema {
		vs.add("schema", "must be %q", CardSchema)
	}
	switch {
	case c.ProtocolVersion == "":
		vs.add("protocol_version", "is required and must be %q", ProtocolVersion)
	case c.ProtocolVersion != ProtocolVersion:
		vs.add("protocol_version", "must be %q, not %q", ProtocolVersion, c.ProtocolVersion)
	}
	switch {
	case c.Build.Version == "" && c.Build.GitTag == "" && c.Build.GitRev == "" && c.Build.BuildTime == "" && len(c.Build.Extensions) == 0:
		// The whole block is missing (or empty): say so, not which of its
		// members is missing.
		vs.add("build", buildRequired)
	case c.Build.BuildTime == "":
		vs.add("build.build_time", "is required")
	}
	if c.ConnectorCardID == "" {
		vs.add("connector_card_id", "is required")
	}
	if c.Connector.Name == "" {
		vs.add("connector.name", "is required")
	}
	if c.Connector.Version == "" {
		vs.add("connector.version", "is required")
	}
	validateSupports(&c.Supports, &vs)
	validateTools(c, &vs)
	vs = append(vs, ValidateAuthFlows(c.AuthFlows)...)
	vs = append(vs, ValidateAuthFlowTargets(c)...)
	if c.UI != nil && c.UI.LoginFlow != nil {
		for i, s := range c.UI.LoginFlow.Steps {
			if s.Type == "" {
				vs.add(joinPath("ui.login_flow.steps", i, "type"), "is required")
			}
		}
	}
	if c.Security != nil && c.Security.TrustLevel != "" && !slices.Contains(trustLevels(), c.Security.TrustLevel) {
		vs.add("security.trust_level", "must be one of %v, not %q", trustLevels(), c.Security.TrustLevel)
	}
	cardExtensionChecks(c, &vs)
	return vs
}

// ValidateCardJSON decodes a Card and validates it against the official JSON
// Schema and every rule of [ValidateCard]. server_base_url is looked for in
// the raw JSON, at any depth. When a rule and the schema report the same
// path, only the rule's reason is kept. It returns the Card whenever the
// JSON decodes (even with violations), and nil otherwise. It is safe for
// concurrent use.
func ValidateCardJSON(data []byte) (*Card, Violations) {
	schema := ValidateSchema(SchemaCard, data)
	c, err := ParseCard(data)
	if err != nil {
		var vs Violations
		vs.add("", "card does not decode: %v", err)
		return nil, mergeSchemaAndRules(vs, schema)
	}
	rules := ValidateCard(c)
	if i := slices.IndexFunc(rules, func(v Violation) bool { return v.Path == "build" && v.Reason == buildRequired }); i >= 0 && hasMember(data, "build") {
		// "build": {} is present but empty: its build_time is what is missing.
		rules[i] = Violation{Path: "build.build_time", Reason: "is required"}
	}
	// Forbidden keys are found in the raw document, including places the
	// typed Card does not keep (such as inside input_schema).
	rules = slices.DeleteFunc(rules, func(v Violation) bool { return v.Reason == forbiddenCardReason })
	for _, p := range findKeyPaths(data, ForbiddenCardKey) {
		rules.add(p, forbiddenCardReason)
	}
	return c, mergeSchemaAndRules(rules, schema)
}

// buildRequired is the reason of a Card without a build block.
const buildRequired = "is required"

// hasMember reports whether the JSON object data has a top-level member key.
func hasMember(data []byte, key string) bool {
	found := false
	_ = eachMember(data, func(k, _ []byte) error {
		if string(k) == key {
			found = true
		}
		return nil
	})
	return found
}

const forbiddenCardReason = ForbiddenCardKey + " must not appear in a Card"

func trustLevels() []string {
	return []string{TrustUnknown, TrustBuiltin, TrustVerified, TrustThirdParty, TrustLocal}
}

func validateSupports(s *Supports, vs *Violations) {
	if s.UserChannelMode != "" && s.UserChannelMode != UserChannelSingle && s.UserChannelMode != UserChannelMultiple {
		vs.add("supports.user_channel_mode", "must be %q or %q, not %q", UserChannelSingle, UserChannelMultiple, s.UserChannelMode)
	}
	if len(s.TargetTypes) == 0 {
		vs.add("supports.target_types", "must be non-empty")
	}
	for i, t := range s.TargetTypes {
		p := joinPath("supports.target_types", i)
		if !slices.Contains(TargetTypes(), t) {
			vs.add(p, "must be one of %v, not %q", TargetTypes(), t)
		}
		if slices.Index(s.TargetTypes, t) < i {
			vs.add(p, "duplicate target type %q", t)
		}
	}
	for i, t := range s.Targets {
		p := joinPath("supports.targets", i)
		if !slices.Contains(TargetTypes(), t.TargetType) {
			vs.add(joinPath(p, "target_type"), "must be one of %v, not %q", TargetTypes(), t.TargetType)
		}
		if t.Provider == "" {
			vs.add(joinPath(p, "provider"), "is required")
		}
		if t.Label == "" {
			vs.add(joinPath(p, "label"), "is required")
		}
	}
	if len(s.Profiles) == 0 {
		vs.add("supports.profiles", "must be non-empty")
	}
	for i, pr := range s.Profiles {
		p := joinPath("supports.profiles", i)
		if pr == "" {
			vs.add(p, "must be non-empty")
			continue
		}
		if slices.Index(s.Profiles, pr) < i {
			vs.add(p, "duplicate profile %q", pr)
			continue
		}
		spec, ok := LookupProfile(pr)
		if !ok {
			continue
		}
		if !slices.ContainsFunc(spec.TargetTypes, func(t TargetType) bool { return slices.Contains(s.TargetTypes, t) }) {
			vs.add(p, "profile %s allows target types %v, none of which is in supports.target_types", pr, spec.TargetTypes)
		}
	}
}

func validateTools(c *Card, vs *Violations) {
	seen := make(map[string]struct{}, len(c.Tools))
	for i := range c.Tools {
		t := &c.Tools[i]
		p := joinPath("tools", i)
		validateToolID(t.ToolID, joinPath(p, "tool_id"), vs)
		if _, dup := seen[t.ToolID]; dup && t.ToolID != "" {
			vs.add(joinPath(p, "tool_id"), "duplicate tool_id %q", t.ToolID)
		}
		seen[t.ToolID] = struct{}{}
		if t.Profile != "" && !slices.Contains(c.Supports.Profiles, t.Profile) {
			vs.add(joinPath(p, "profile"), "profile %q is not declared in supports.profiles", t.Profile)
		}
		for j, id := range t.RelatedSkillIDs {
			if id == "" {
				vs.add(joinPath(p, "related_skill_ids", j), "must be non-empty")
			}
		}
		validateInputSchema(t.InputSchema, joinPath(p, "input_schema"), vs)
		if len(t.OutputSchema) > 0 && !isJSONObject(t.OutputSchema) {
			vs.add(joinPath(p, "output_schema"), "must be a JSON object")
		}
	}
}

func validateToolID(id, path string, vs *Violations) {
	switch {
	case id == "":
		vs.add(path, "is required")
		return
	case len(id) > MaxToolIDLength:
		vs.add(path, "is %d bytes long, more than %d", len(id), MaxToolIDLength)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			vs.add(path, "may contain only ASCII letters, digits, '_', '.' and '-'")
			return
		}
	}
}

// inputSchemaView is the part of a tool input schema the protocol constrains.
type inputSchemaView struct {
	Type       json.RawMessage            `json:"type"`
	Properties map[string]json.RawMessage `json:"properties"`
	Required   json.RawMessage            `json:"required"`
}

func validateInputSchema(raw json.RawMessage, path string, vs *Violations) {
	if len(raw) == 0 || bytes.Equal(jsonbytes.TrimSpace(raw), []byte("null")) {
		vs.add(path, "is required")
		return
	}
	if !isJSONObject(raw) {
		vs.add(path, "must be a JSON object schema")
		return
	}
	var s inputSchemaView
	if err := json.Unmarshal(raw, &s); err != nil {
		// properties is not an object.
		vs.add(joinPath(path, "properties"), "must be a JSON object")
		return
	}
	var typ string
	if len(s.Type) == 0 || json.Unmarshal(s.Type, &typ) != nil || typ != "object" {
		vs.add(joinPath(path, "type"), "must be \"object\"")
	}
	switch {
	case s.Properties == nil:
		vs.add(joinPath(path, "properties"), "is required and must declare %s", ChannelIDArgument)
	default:
		cp := joinPath(path, "properties", ChannelIDArgument)
		prop, ok := s.Properties[ChannelIDArgument]
		var view struct {
			Type json.RawMessage `json:"type"`
		}
		switch {
		case !ok:
			vs.add(cp, "is required")
		case !isJSONObject(prop) || json.Unmarshal(prop, &view) != nil:
			vs.add(cp, "must be a JSON object schema")
		default:
			var pt string
			if json.Unmarshal(view.Type, &pt) != nil || pt != "string" {
				vs.add(joinPath(cp, "type"), "must be \"string\"")
			}
		}
		if _, ok := s.Properties["connector_card_id"]; ok {
			vs.add(joinPath(path, "properties", "connector_card_id"), "a tool must not declare a connector_card_id argument")
		}
	}
	rp := joinPath(path, "required")
	var req []json.RawMessage
	if len(s.Required) == 0 || json.Unmarshal(s.Required, &req) != nil {
		vs.add(rp, "must be an array containing %q", ChannelIDArgument)
		return
	}
	names := make([]string, 0, len(req))
	for i, r := range req {
		var n string
		if json.Unmarshal(r, &n) != nil {
			vs.add(joinPath(rp, i), "must be a string")
			continue
		}
		if slices.Contains(names, n) {
			vs.add(joinPath(rp, i), "duplicate required name %q", n)
		}
		names = append(names, n)
	}
	if !slices.Contains(names, ChannelIDArgument) {
		vs.add(rp, "must contain %q", ChannelIDArgument)
	}
}

// cardExtensionChecks inspects every raw part of a typed Card: unknown
// members at each level and the embedded JSON Schemas. It reports
// server_base_url anywhere and unknown members whose names differ from a
// declared member only in case.
func cardExtensionChecks(c *Card, vs *Violations) {
	var forbidden []string
	ext := func(base string, plain any, e Extensions) {
		checkCaseVariants(plain, e, base, vs)
		for k, v := range e {
			p := joinPath(base, k)
			if k == ForbiddenCardKey {
				forbidden = append(forbidden, p)
			}
			for _, q := range findKeyPaths(v, ForbiddenCardKey) {
				forbidden = append(forbidden, joinRaw(p, q))
			}
		}
	}
	raw := func(base string, r json.RawMessage) {
		for _, q := range findKeyPaths(r, ForbiddenCardKey) {
			forbidden = append(forbidden, joinRaw(base, q))
		}
	}
	ext("", c, c.Extensions)
	ext("build", &c.Build, c.Build.Extensions)
	ext("connector", &c.Connector, c.Connector.Extensions)
	ext("supports", &c.Supports, c.Supports.Extensions)
	for i := range c.Supports.Targets {
		t := &c.Supports.Targets[i]
		ext(joinPath("supports.targets", i), t, t.Extensions)
	}
	for i := range c.Tools {
		t := &c.Tools[i]
		p := joinPath("tools", i)
		ext(p, t, t.Extensions)
		raw(joinPath(p, "input_schema"), t.InputSchema)
		raw(joinPath(p, "output_schema"), t.OutputSchema)
	}
	for i := range c.AuthFlows {
		f := &c.AuthFlows[i]
		p := joinPath("auth_flows", i)
		ext(p, f, f.Extensions)
		raw(joinPath(p, "config_schema"), f.ConfigSchema)
		raw(joinPath(p, "ui_schema"), f.UISchema)
		for j := range f.Fields {
			ext(joinPath(p, "fields", j), &f.Fields[j], f.Fields[j].Extensions)
		}
	}
	if c.UI != nil {
		ext("ui", c.UI, c.UI.Extensions)
		if l := c.UI.LoginFlow; l != nil {
			ext("ui.login_flow", l, l.Extensions)
			for i := range l.Steps {
				ext(joinPath("ui.login_flow.steps", i), &l.Steps[i], l.Steps[i].Extensions)
			}
		}
	}
	if c.Security != nil {
		ext("security", c.Security, c.Security.Extensions)
	}
	slices.Sort(forbidden)
	for _, p := range forbidden {
		vs.add(p, forbiddenCardReason)
	}
}

// checkCaseVariants reports unknown members of plain (a pointer to one of
// this package's structs) whose names equal a declared member's name up to
// case. encoding/json matches names case-insensitively, so such a member
// would make the decoded value differ from what the JSON Schema checked.
func checkCaseVariants(plain any, ext Extensions, path string, vs *Violations) {
	if len(ext) == 0 {
		return
	}
	t := reflect.TypeOf(plain)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	known := declaredJSONNames(t)
	keys := make([]string, 0, len(ext))
	for k := range ext {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if slices.Contains(known, k) {
			continue
		}
		for _, n := range known {
			if strings.EqualFold(k, n) {
				vs.add(joinPath(path, k), "member name differs from %q only in case", n)
				break
			}
		}
	}
}

// declaredJSONNames lists the JSON member names struct type t declares.
func declaredJSONNames(t reflect.Type) []string {
	names := make([]string, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

// joinRaw appends a relative path produced by findKeyPaths to base.
func joinRaw(base, rel string) string {
	switch {
	case rel == "":
		return base
	case base == "":
		return rel
	case rel[0] == '[':
		return base + rel
	}
	return base + "." + rel
}

// maxJSONDepth bounds the nesting that raw-JSON scans of this package walk.
const maxJSONDepth = 128

// findKeyPaths returns the path of every object member named key, at any
// depth of the JSON document (up to maxJSONDepth). Invalid JSON yields none.
func findKeyPaths(data []byte, key string) []string {
	if len(data) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(data, &v) != nil {
		return nil
	}
	var out []string
	var walk func(v any, path string, depth int)
	walk = func(v any, path string, depth int) {
		if depth > maxJSONDepth {
			return
		}
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				p := joinPath(path, k)
				if k == key {
					out = append(out, p)
				}
				walk(c, p, depth+1)
			}
		case []any:
			for i, c := range v {
				walk(c, joinRaw(path, joinPath(i)), depth+1)
			}
		}
	}
	walk(v, "", 0)
	slices.Sort(out)
	return out
}

// isJSONObject reports whether raw is a JSON object.
func isJSONObject(raw []byte) bool {
	raw = jsonbytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	return json.Valid(raw)
}
