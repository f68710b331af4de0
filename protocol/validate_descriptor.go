package protocol

import (
	"encoding/json"
	"slices"
)

func toolStatuses() []ToolStatus {
	return []ToolStatus{ToolAvailable, ToolUnavailable, ToolDeniedByTarget, ToolRequiresReauth, ToolNotSupported}
}

func permissionStates() []PermissionState {
	return []PermissionState{PermissionUnknown, PermissionGranted, PermissionDenied, PermissionRequiresReauth}
}

// ValidateDescriptor checks the rules of section 9 that need no Card, plus
// the constraints of the official Descriptor v2 schema: schema, connection
// ids, target_type, profiles (non-empty, unique, each allowing the
// target_type when it is a standard Profile), status, target.provider and
// tools[] (tool_id, status, target_permission_state, no duplicate tool_id).
// Unknown members whose names differ from a declared one only in case are
// violations.
// A v1 Descriptor must be normalised first ([NormalizeDescriptor]). Use
// [ValidateDescriptorAgainstCard] for the Card rules. It is pure and safe for
// concurrent use.
func ValidateDescriptor(d *Descriptor) Violations {
	var vs Violations
	if d == nil {
		vs.add("", "connection descriptor is missing")
		return vs
	}
	switch d.Schema {
	case DescriptorSchema:
	case DescriptorSchemaV1:
		vs.add("schema", "must be %q (normalise a v1 Descriptor with NormalizeDescriptor)", DescriptorSchema)
	default:
		vs.add("schema", "must be %q", DescriptorSchema)
	}
	c := &d.Connection
	if c.ConnectorCardID == "" {
		vs.add("connection.connector_card_id", "is required")
	}
	if c.ConnectorID == "" {
		vs.add("connection.connector_id", "is required")
	}
	if c.ConnectorChannelID == "" {
		vs.add("connection.connector_channel_id", "is required")
	}
	if !slices.Contains(TargetTypes(), c.TargetType) {
		vs.add("connection.target_type", "must be one of %v, not %q", TargetTypes(), c.TargetType)
	}
	validateDescriptorProfiles(c.Profiles, &vs)
	for i, p := range c.Profiles {
		if spec, ok := LookupProfile(p); ok && slices.Index(c.Profiles, p) == i && slices.Contains(TargetTypes(), c.TargetType) &&
			!slices.Contains(spec.TargetTypes, c.TargetType) {
			vs.add(joinPath("connection.profiles", i), "profile %s does not allow target type %q", p, c.TargetType)
		}
	}
	if !slices.Contains(ConnectionStatuses(), c.Status) {
		vs.add("connection.status", "must be one of %v, not %q", ConnectionStatuses(), c.Status)
	}
	if d.Target.Provider == "" {
		vs.add("target.provider", "is required")
	}
	checkCaseVariants(d, d.Extensions, "", &vs)
	checkCaseVariants(c, c.Extensions, "connection", &vs)
	checkCaseVariants(&d.Target, d.Target.Extensions, "target", &vs)
	seen := make(map[string]struct{}, len(d.Tools))
	for i, t := range d.Tools {
		p := joinPath("tools", i)
		checkCaseVariants(&t, t.Extensions, p, &vs)
		if _, dup := seen[t.ToolID]; t.ToolID == "" {
			vs.add(joinPath(p, "tool_id"), "is required")
		} else if dup {
			vs.add(joinPath(p, "tool_id"), "duplicate tool_id %q", t.ToolID)
		}
		seen[t.ToolID] = struct{}{}
		if !slices.Contains(toolStatuses(), t.Status) {
			vs.add(joinPath(p, "status"), "must be one of %v, not %q", toolStatuses(), t.Status)
		}
		if t.TargetPermissionState != "" && !slices.Contains(permissionStates(), t.TargetPermissionState) {
			vs.add(joinPath(p, "target_permission_state"), "must be one of %v, not %q", permissionStates(), t.TargetPermissionState)
		}
	}
	return vs
}

func validateDescriptorProfiles(profiles []Profile, vs *Violations) {
	if len(profiles) == 0 {
		vs.add("connection.profiles", "must be non-empty")
	}
	for i, p := range profiles {
		switch {
		case p == "":
			vs.add(joinPath("connection.profiles", i), "must be non-empty")
		case slices.Index(profiles, p) < i:
			vs.add(joinPath("connection.profiles", i), "duplicate profile %q", p)
		}
	}
}

// ValidateDescriptorAgainstCard cross-checks a Descriptor with the Card of
// its Connector (section 9): connection.connector_card_id equals the Card id,
// connection.connector_channel_id equals channelID (not checked when
// channelID is ""), connection.profiles is non-empty, unique and a subset of
// supports.profiles, connection.target_type is one of supports.target_types,
// and every tools[].tool_id is a Card tool. It does not repeat the rules of
// [ValidateDescriptor]. It is pure and safe for concurrent use.
func ValidateDescriptorAgainstCard(d *Descriptor, card *Card, channelID string) Violations {
	var vs Violations
	if d == nil {
		vs.add("", "connection descriptor is missing")
		return vs
	}
	if card == nil {
		vs.add("", "card is missing")
		return vs
	}
	c := &d.Connection
	if c.ConnectorCardID != card.ConnectorCardID {
		vs.add("connection.connector_card_id", "must equal the Card id %q, not %q", card.ConnectorCardID, c.ConnectorCardID)
	}
	if channelID != "" && c.ConnectorChannelID != channelID {
		vs.add("connection.connector_channel_id", "must equal the current channel %q, not %q", channelID, c.ConnectorChannelID)
	}
	validateDescriptorProfiles(c.Profiles, &vs)
	for i, p := range c.Profiles {
		if p != "" && !card.DeclaresProfile(p) {
			vs.add(joinPath("connection.profiles", i), "profile %q is not declared in the Card's supports.profiles", p)
		}
	}
	if c.TargetType != "" && !slices.Contains(card.Supports.TargetTypes, c.TargetType) {
		vs.add("connection.target_type", "target type %q is not declared in the Card's supports.target_types", c.TargetType)
	}
	for i, t := range d.Tools {
		if t.ToolID == "" {
			continue
		}
		if _, ok := card.Tool(t.ToolID); !ok {
			vs.add(joinPath("tools", i, "tool_id"), "tool %q is not declared in the Card", t.ToolID)
		}
	}
	return vs
}

// ValidateDescriptorJSON decodes a Descriptor, normalising a v1 Descriptor
// to v2, and validates it against the official v2 JSON Schema (after
// normalisation), [ValidateDescriptor] and, when card is non-nil,
// [ValidateDescriptorAgainstCard] without a channel check. It returns the
// normalised Descriptor whenever the JSON decodes. It is safe for concurrent
// use.
func ValidateDescriptorJSON(data []byte, card *Card) (*Descriptor, Violations) {
	var peek struct {
		Schema json.RawMessage `json:"schema"`
	}
	_ = json.Unmarshal(data, &peek)
	d, err := ParseDescriptor(data)
	if err != nil {
		var vs Violations
		vs.add("", "connection descriptor does not decode: %v", err)
		return nil, mergeSchemaAndRules(vs, ValidateSchema(SchemaDescriptor, data))
	}
	schemaInput := data
	var s string
	if json.Unmarshal(peek.Schema, &s) == nil && s == DescriptorSchemaV1 {
		b, err := json.Marshal(d)
		if err != nil {
			var vs Violations
			vs.add("", "normalised v1 descriptor does not encode: %v", err)
			return d, vs
		}
		schemaInput = b
	}
	rules := ValidateDescriptor(d)
	if card != nil {
		rules = append(rules, ValidateDescriptorAgainstCard(d, card, "")...)
	}
	return d, mergeSchemaAndRules(rules, ValidateSchema(SchemaDescriptor, schemaInput))
}
