package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/xconn/xconn/protocol"
)

func cardIDs() []string {
	return []string{"card.http", "card.json-schema", "card.schema", "card.protocol-version", "card.id", "card.name",
		"card.version", "card.target-types", "card.profiles", "card.profile-target-types", "card.user-channel-mode",
		"card.tool-profile", "card.tool-id", "card.tool-id-charset", "card.tool-input-object", "card.tool-channel-arg",
		"card.tool-no-card-id-arg", "card.auth-flows", "card.secret-default", "card.no-server-base-url", "card.targets",
		"card.auth-flow-target-type"}
}

// probeCard fetches the Card without an API key and checks every hard rule.
// The Card is read even when the probe's requirements are deselected,
// because every later probe needs it.
func probeCard(ctx context.Context, s *session, r *recorder) {
	res, err := s.get(ctx, protocol.PathCard, "")
	if err != nil {
		s.cardError = err.Error()
		r.fail("card.http", "200 with a JSON object", err.Error(), "")
		r.skipRest("the Card could not be fetched")
		return
	}
	var members map[string]json.RawMessage
	if res.status != 200 || json.Unmarshal(res.body, &members) != nil {
		s.cardError = res.String()
		r.fail("card.http", "200 with a JSON object", res.String(), "")
		r.skipRest("the Card could not be fetched")
		return
	}
	card, err := protocol.ParseCard(res.body)
	if err != nil {
		s.cardError = "Card does not decode: " + err.Error()
		r.pass("card.http")
		r.fail("card.json-schema", "a Card that decodes", err.Error(), "")
		r.skipRest("the Card does not decode")
		return
	}
	s.card = card
	s.setSecretsFromCard()
	r.pass("card.http")
	packet := s.redact(string(res.body))
	if vs := protocol.ValidateSchema(protocol.SchemaCard, res.body); len(vs) > 0 {
		r.fail("card.json-schema", "no JSON Schema violation", vs.Error(), "")
	} else {
		r.pass("card.json-schema")
	}
	for _, rule := range cardRules(card, members) {
		if len(rule.problems) == 0 {
			r.pass(rule.id)
		} else {
			r.fail(rule.id, rule.expected, strings.Join(rule.problems, "; "), packet)
		}
	}
}

type cardRule struct {
	id, expected string
	problems     []string
}

// cardRules evaluates the Card rules of section 4.1 one requirement each.
func cardRules(c *protocol.Card, members map[string]json.RawMessage) []cardRule {
	var rules []cardRule
	rule := func(id, expected string, problems ...string) {
		var ps []string
		for _, p := range problems {
			if p != "" {
				ps = append(ps, p)
			}
		}
		rules = append(rules, cardRule{id: id, expected: expected, problems: ps})
	}
	iff := func(bad bool, format string, args ...any) string {
		if bad {
			return fmt.Sprintf(format, args...)
		}
		return ""
	}
	rule("card.schema", protocol.CardSchema, iff(c.Schema != protocol.CardSchema, "schema %q", c.Schema))
	rule("card.protocol-version", "protocol_version 3.0", iff(c.ProtocolVersion != protocol.ProtocolVersion, "protocol_version %q", c.ProtocolVersion))
	rule("card.id", "non-empty connector_card_id", iff(c.ConnectorCardID == "", "connector_card_id is empty"))
	rule("card.name", "non-empty connector.name", iff(c.Connector.Name == "", "connector.name is empty"))
	rule("card.version", "non-empty connector.version", iff(c.Connector.Version == "", "connector.version is empty"))

	var tt []string
	tt = append(tt, iff(len(c.Supports.TargetTypes) == 0, "supports.target_types is empty"))
	for i, t := range c.Supports.TargetTypes {
		tt = append(tt, iff(!oneOf(t, protocol.TargetTypes()...), "supports.target_types[%d] %q is unknown", i, t))
	}
	rule("card.target-types", "non-empty known target types", tt...)
	rule("card.profiles", "non-empty supports.profiles", iff(len(c.Supports.Profiles) == 0, "supports.profiles is empty"))

	var pt []string
	for _, p := range c.Supports.Profiles {
		allowed := profileTargetTypes(p)
		if allowed == nil {
			continue
		}
		ok := false
		for _, t := range c.Supports.TargetTypes {
			ok = ok || oneOf(t, allowed...)
		}
		pt = append(pt, iff(!ok, "profile %s needs target type %s", p, quoteList(allowed)))
	}
	rule("card.profile-target-types", "declared Profiles intersect target_types", pt...)
	rule("card.user-channel-mode", "single, multiple or omitted",
		iff(!oneOf(c.Supports.UserChannelMode, "", protocol.UserChannelSingle, protocol.UserChannelMultiple), "user_channel_mode %q", c.Supports.UserChannelMode))

	var prof, ids, charset, obj, arg, cardArg []string
	seen := map[string]bool{}
	for i, t := range c.Tools {
		at := fmt.Sprintf("tools[%d]", i)
		// The schema makes profile optional; a tool that names one must name a declared Profile.
		prof = append(prof, iff(t.Profile != "" && !c.DeclaresProfile(t.Profile), "%s.profile %q is not in supports.profiles", at, t.Profile))
		ids = append(ids, iff(t.ToolID == "", "%s.tool_id is empty", at), iff(t.ToolID != "" && seen[t.ToolID], "%s.tool_id %q is repeated", at, t.ToolID))
		seen[t.ToolID] = true
		charset = append(charset, iff(t.ToolID != "" && !validToolID(t.ToolID), "%s.tool_id %q", at, t.ToolID))
		sc := parseObjectSchema(t.InputSchema)
		obj = append(obj, iff(sc == nil || sc.Type != "object", "%s.input_schema is not an object schema", at))
		if sc != nil {
			ch, ok := sc.Properties[protocol.ChannelIDArgument]
			arg = append(arg, iff(!ok || ch.Type != "string", "%s.input_schema.properties.connector_channel_id is not a string property", at),
				iff(!oneOf(protocol.ChannelIDArgument, sc.Required...), "%s.input_schema.required lacks connector_channel_id", at))
			_, bad := sc.Properties["connector_card_id"]
			cardArg = append(cardArg, iff(bad, "%s.input_schema declares connector_card_id", at))
		}
	}
	rule("card.tool-profile", "tool profiles declared by the Card", prof...)
	rule("card.tool-id", "non-empty unique tool ids", ids...)
	rule("card.tool-id-charset", "[A-Za-z0-9_.-]{1,256}", charset...)
	rule("card.tool-input-object", "input_schema of type object", obj...)
	rule("card.tool-channel-arg", "a required string connector_channel_id", arg...)
	rule("card.tool-no-card-id-arg", "no connector_card_id argument", cardArg...)

	// The auth-flow rules are protocol's, so that the suite and
	// protocol.ValidateCard (xconn validate card, host admission) always reach
	// the same verdict on the same Card.
	var flows, secrets, flowTargets []string
	for _, v := range protocol.ValidateAuthFlows(c.AuthFlows) {
		if strings.HasSuffix(v.Path, ".default_value") {
			secrets = append(secrets, v.String()) // the one rule at that path: no default on a secret field
		} else {
			flows = append(flows, v.String())
		}
	}
	for _, v := range protocol.ValidateAuthFlowTargets(c) {
		flowTargets = append(flowTargets, v.String())
	}
	rule("card.auth-flows", "complete auth flows", flows...)
	rule("card.secret-default", "no default_value on secret fields", secrets...)
	_, hasBase := members["server_base_url"]
	rule("card.no-server-base-url", "no server_base_url", iff(hasBase, "the Card has server_base_url"))
	var targets []string
	targets = append(targets, iff(len(c.Supports.Targets) == 0, "supports.targets is empty"))
	for i, t := range c.Supports.Targets {
		targets = append(targets, iff(t.TargetType == "" || t.Provider == "" || t.Label == "", "supports.targets[%d] lacks target_type, provider or label", i))
	}
	rule("card.targets", "targets with target_type, provider and label", targets...)
	rule("card.auth-flow-target-type", "auth flow target types from supports.target_types", flowTargets...)
	return rules
}

// profileTargetTypes returns the target types a standard Profile allows, or
// nil for a Profile the suite does not know.
func profileTargetTypes(p protocol.Profile) []string {
	switch p {
	case protocol.ProfileIMv1, protocol.ProfileIMv2:
		return []string{protocol.TargetIM}
	case protocol.ProfileDeviceV1:
		return []string{protocol.TargetDevice}
	}
	return nil
}

func validToolID(id string) bool {
	if len(id) == 0 || len(id) > protocol.MaxToolIDLength {
		return false
	}
	for _, c := range []byte(id) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
		if !ok {
			return false
		}
	}
	return true
}

// objectSchema is the part of a tool input_schema the suite reads.
type objectSchema struct {
	Type       string                  `json:"type"`
	Required   []string                `json:"required"`
	Properties map[string]propertyType `json:"properties"`
}

type propertyType struct {
	Type string `json:"type"`
}

// parseObjectSchema decodes a tool schema, or returns nil when it is not a
// JSON object with a string "type" (a type list is not an object schema).
func parseObjectSchema(raw json.RawMessage) *objectSchema {
	var sc objectSchema
	if len(raw) == 0 || json.Unmarshal(raw, &sc) != nil {
		return nil
	}
	return &sc
}
