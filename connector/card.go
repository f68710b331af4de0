package connector

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/xconn/xconn/internal/argcheck"
	"github.com/xconn/xconn/protocol"
)

// cloneCard deep-copies a Card through its JSON form (extensions kept).
func cloneCard(c *protocol.Card) *protocol.Card {
	b, err := json.Marshal(c)
	if err != nil {
		cp := *c
		return &cp
	}
	var out protocol.Card
	if err := json.Unmarshal(b, &out); err != nil {
		cp := *c
		return &cp
	}
	return &out
}

// buildCard makes the final Card from Options.Card and the registrations:
// tools merged and given the connector_channel_id argument, security from
// the API key; then it checks it exhaustively. The caller holds s.mu.
func (s *Server) buildCard() (*protocol.Card, map[string]*argcheck.Validator, error) {
	var c *protocol.Card
	if s.opts.Card != nil {
		c = cloneCard(s.opts.Card)
	} else {
		c = s.opts.Identity.card()
		c.Supports.Profiles = s.deriveProfiles(c)
	}
	if c.Schema == "" {
		c.Schema = protocol.CardSchema
	}
	if c.ProtocolVersion == "" {
		c.ProtocolVersion = protocol.ProtocolVersion
	}
	if c.Build.BuildTime == "" && c.Build.Version == "" && c.Build.GitRev == "" {
		c.Build = BuildInfo()
	}
	if c.Security == nil {
		c.Security = &protocol.Security{}
	}
	c.Security.APIKeyRequired = s.opts.APIKey != ""
	s.mergeDeclaredFlows(c)
	primary := protocol.PrimarySkillName(c.ConnectorCardID)

	var vs protocol.Violations
	add := func(path, format string, args ...any) {
		vs = append(vs, protocol.Violation{Path: path, Reason: fmt.Sprintf(format, args...)})
	}
	for _, id := range s.toolOrder {
		e := s.tools[id]
		t, ok := c.Tool(id)
		if !ok {
			c.Tools = append(c.Tools, protocol.Tool{ToolID: id})
			t = &c.Tools[len(c.Tools)-1]
		}
		if e.opts.Title != "" {
			t.Title = e.opts.Title
		}
		if e.opts.Description != "" {
			t.Description = e.opts.Description
		}
		if e.opts.Profile != "" {
			t.Profile = e.opts.Profile
		}
		if len(e.opts.RelatedSkillIDs) > 0 {
			t.RelatedSkillIDs = append([]string(nil), e.opts.RelatedSkillIDs...)
		} else if len(t.RelatedSkillIDs) == 0 && len(s.opts.Skill) > 0 {
			t.RelatedSkillIDs = []string{primary}
		}
		if len(e.opts.OutputSchema) > 0 {
			t.OutputSchema = e.opts.OutputSchema
		}
		schema := e.opts.InputSchema
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = t.InputSchema
		}
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = e.schema
		}
		inj, err := protocol.WithConnectorChannelIDInputSchema(schema)
		if err != nil {
			add("tools["+id+"].input_schema", "%v", err)
			continue
		}
		t.InputSchema = inj
	}
	validators := map[string]*argcheck.Validator{}
	for i, t := range c.Tools {
		path := fmt.Sprintf("tools[%d]", i)
		if s.tools[t.ToolID] == nil {
			add(path, "tool %q has no handler: register it with AddTool", t.ToolID)
			continue
		}
		v, err := argcheck.Compile(t.InputSchema)
		if err != nil {
			add(path+".input_schema", "does not compile: %v", err)
			continue
		}
		validators[t.ToolID] = v
	}
	for i, f := range c.AuthFlows {
		reg, ok := s.flows[f.ID]
		switch {
		case !ok:
			add(fmt.Sprintf("auth_flows[%d]", i), "flow %q has no handler: register it with AddAuthFlow", f.ID)
		case reg.flowType() != f.Type:
			add(fmt.Sprintf("auth_flows[%d].type", i), "is %q but the registered flow is %q", f.Type, reg.flowType())
		}
	}
	for id := range s.flows {
		if _, ok := c.AuthFlow(id); !ok {
			add("auth_flows", "registered flow %q is not declared in the Card", id)
		}
	}
	if c.DeclaresProfile(protocol.ProfileIMv2) && s.onMessage == nil {
		add("supports.profiles", "declares %s but no OnAssistantMessage handler is registered", protocol.ProfileIMv2)
	}
	vs = append(vs, protocol.ValidateCard(c)...)
	if len(s.opts.Skill) > 0 {
		for _, v := range protocol.ValidateSkill(s.opts.Skill, c) {
			vs = append(vs, protocol.Violation{Path: "skill." + strings.TrimPrefix(v.Path, "skill."), Reason: v.Reason})
		}
	}
	if s.opts.APIKey != "" {
		cj, _ := json.Marshal(c)
		if containsToken(cj, []byte(s.opts.APIKey)) {
			add("", "the Card contains the system API key")
		}
		if containsToken(s.opts.Skill, []byte(s.opts.APIKey)) {
			add("skill", "the Skill contains the system API key")
		}
	}
	if len(vs) > 0 {
		return nil, nil, fmt.Errorf("connector: invalid Card: %w", vs)
	}
	return c, validators, nil
}

// containsToken reports whether key occurs in text as a whole token: not
// preceded or followed by a letter, digit, '_' or '-' (so a key is never
// "found" inside a longer word, and text never inside a key).
func containsToken(text, key []byte) bool {
	for off := 0; len(key) > 0; {
		i := bytes.Index(text[off:], key)
		if i < 0 {
			return false
		}
		i += off
		end := i + len(key)
		if (i == 0 || !isTokenByte(text[i-1])) && (end == len(text) || !isTokenByte(text[end])) {
			return true
		}
		off = i + 1
	}
	return false
}

func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// deriveProfiles returns supports.profiles of an Identity Card: the
// declared ones, else the current profile of each target type (IM v2 for
// im, Device v1 for device). The caller holds s.mu.
func (s *Server) deriveProfiles(c *protocol.Card) []protocol.Profile {
	if len(c.Supports.Profiles) > 0 {
		return c.Supports.Profiles
	}
	var ps []protocol.Profile
	for _, t := range c.Supports.TargetTypes {
		switch {
		case t == protocol.TargetIM:
			ps = append(ps, protocol.ProfileIMv2)
		case t == protocol.TargetDevice:
			ps = append(ps, protocol.ProfileDeviceV1)
		}
	}
	return ps
}

// mergeDeclaredFlows puts the flows declared by AddForm/AddQR into the
// Card: an entry of the same id is replaced, target_type and title get
// their defaults, and the Default flow becomes ui.login_flow. The caller
// holds s.mu.
func (s *Server) mergeDeclaredFlows(c *protocol.Card) {
	label := c.Connector.Name
	if len(c.Supports.Targets) > 0 && c.Supports.Targets[0].Label != "" {
		label = c.Supports.Targets[0].Label
	}
	for _, d := range s.typed.flowDecls {
		if d.TargetType == "" && len(c.Supports.TargetTypes) > 0 {
			d.TargetType = c.Supports.TargetTypes[0]
		}
		if d.Title == "" {
			d.Title = "Sign in to " + label
		}
		if i := slices.IndexFunc(c.AuthFlows, func(f protocol.AuthFlow) bool { return f.ID == d.ID }); i >= 0 {
			c.AuthFlows[i] = d
		} else {
			c.AuthFlows = append(c.AuthFlows, d)
		}
	}
	if s.typed.defaultFlow != "" {
		if c.UI == nil {
			c.UI = &protocol.UI{}
		}
		c.UI.LoginFlow = &protocol.LoginFlow{FlowID: s.typed.defaultFlow}
	}
	// Hand-written Cards get the defaults the spec requires too.
	for i := range c.AuthFlows {
		f := &c.AuthFlows[i]
		if f.TargetType == "" && len(c.Supports.TargetTypes) == 1 {
			f.TargetType = c.Supports.TargetTypes[0]
		}
		if f.Title == "" {
			f.Title = "Sign in to " + label
		}
	}
}
