package connector

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	c := cloneCard(s.opts.Card)
	if c.Schema == "" {
		c.Schema = protocol.CardSchema
	}
	if c.ProtocolVersion == "" {
		c.ProtocolVersion = protocol.ProtocolVersion
	}
	if c.Security == nil {
		c.Security = &protocol.Security{}
	}
	c.Security.APIKeyRequired = s.opts.APIKey != ""

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
		if bytes.Contains(cj, []byte(s.opts.APIKey)) {
			add("", "the Card contains the system API key")
		}
		if bytes.Contains(s.opts.Skill, []byte(s.opts.APIKey)) {
			add("skill", "the Skill contains the system API key")
		}
	}
	if len(vs) > 0 {
		return nil, nil, fmt.Errorf("connector: invalid Card: %w", vs)
	}
	return c, validators, nil
}
