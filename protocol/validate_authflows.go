package protocol

import "slices"

func authFlowTypes() []string { return []string{AuthFlowQRLogin, AuthFlowForm} }

// ValidateAuthFlows checks the Card's auth_flows[] entries on their own
// (section 4.1, "auth_flows[] fields"): every entry has the members the
// table marks Required (id, target_type, type and title, each non-empty;
// fields when type is form), a unique id, a known target_type and type, and
// fields only on a form flow, each with a unique name, a label, an
// input_type of text or password, and no default_value when it is secret.
// config_schema and ui_schema, when present, are JSON objects.
//
// Paths are relative to the Card ("auth_flows[0].title: is required"), so
// the result can be merged with [ValidateCard]'s. ValidateCard reports
// exactly these violations plus those of [ValidateAuthFlowTargets]; the
// conformance suite judges its auth-flow requirements with the same two
// functions. It is pure and safe for concurrent use.
func ValidateAuthFlows(flows []AuthFlow) Violations {
	var vs Violations
	for i := range flows {
		f := &flows[i]
		p := joinPath("auth_flows", i)
		if f.ID == "" {
			vs.add(joinPath(p, "id"), "is required")
		} else if slices.IndexFunc(flows, func(o AuthFlow) bool { return o.ID == f.ID }) < i {
			vs.add(joinPath(p, "id"), "duplicate auth flow id %q", f.ID)
		}
		switch {
		case f.TargetType == "":
			vs.add(joinPath(p, "target_type"), "is required")
		case !slices.Contains(TargetTypes(), f.TargetType):
			vs.add(joinPath(p, "target_type"), "must be one of %v, not %q", TargetTypes(), f.TargetType)
		}
		switch f.Type {
		case "":
			vs.add(joinPath(p, "type"), "is required")
		case AuthFlowForm:
			if len(f.Fields) == 0 {
				vs.add(joinPath(p, "fields"), "a form flow needs at least one field")
			}
		case AuthFlowQRLogin:
		default:
			vs.add(joinPath(p, "type"), "must be one of %v, not %q", authFlowTypes(), f.Type)
		}
		if f.Title == "" {
			vs.add(joinPath(p, "title"), "is required")
		}
		if f.Type != AuthFlowForm && len(f.Fields) > 0 {
			vs.add(joinPath(p, "fields"), "fields apply only to a form flow")
		}
		for j, fd := range f.Fields {
			fp := joinPath(p, "fields", j)
			if fd.Name == "" {
				vs.add(joinPath(fp, "name"), "is required")
			} else if slices.IndexFunc(f.Fields, func(o AuthField) bool { return o.Name == fd.Name }) < j {
				vs.add(joinPath(fp, "name"), "duplicate field name %q in this flow", fd.Name)
			}
			if fd.Label == "" {
				vs.add(joinPath(fp, "label"), "is required")
			}
			if fd.InputType != InputText && fd.InputType != InputPassword {
				vs.add(joinPath(fp, "input_type"), "must be %q or %q, not %q", InputText, InputPassword, fd.InputType)
			}
			if fd.DefaultValue != nil && fd.IsSecret() {
				vs.add(joinPath(fp, "default_value"), "a secret field must not have a default value")
			}
		}
		if len(f.ConfigSchema) > 0 && !isJSONObject(f.ConfigSchema) {
			vs.add(joinPath(p, "config_schema"), "must be a JSON object")
		}
		if len(f.UISchema) > 0 && !isJSONObject(f.UISchema) {
			vs.add(joinPath(p, "ui_schema"), "must be a JSON object")
		}
	}
	return vs
}

// ValidateAuthFlowTargets checks that the target_type of every auth_flows[]
// entry is one of the Card's supports.target_types (section 4.1: a flow
// signs a channel in to a target the Card supports). An empty or unknown
// target_type is left to [ValidateAuthFlows], so that one mistake is
// reported once. It is pure and safe for concurrent use.
func ValidateAuthFlowTargets(c *Card) Violations {
	var vs Violations
	if c == nil {
		return vs
	}
	for i, f := range c.AuthFlows {
		if f.TargetType == "" || !slices.Contains(TargetTypes(), f.TargetType) {
			continue
		}
		if !slices.Contains(c.Supports.TargetTypes, f.TargetType) {
			vs.add(joinPath("auth_flows", i, "target_type"), "%q is not in supports.target_types %v", f.TargetType, c.Supports.TargetTypes)
		}
	}
	return vs
}
