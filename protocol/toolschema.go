package protocol

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/xconn/xconn/internal/jsonbytes"
)

// ChannelIDDescription is the description the helper gives the reserved
// connector_channel_id argument.
const ChannelIDDescription = "Target user-level Connector channel ID. Pass the opaque ID returned by connector_channels_list or inbound source_connector_channel_id unchanged."

// WithConnectorChannelIDInputSchema returns a copy of an object input schema
// with the reserved connector_channel_id argument injected: a string property
// and an entry of required (section 10). A nil or empty schema becomes the
// minimal object schema. The input is never modified.
//
// It fails when the schema is not a JSON object schema, when it already
// declares connector_channel_id with a type other than string, or when it
// declares the forbidden argument connector_card_id.
func WithConnectorChannelIDInputSchema(schema json.RawMessage) (json.RawMessage, error) {
	doc := map[string]json.RawMessage{}
	if len(jsonbytes.TrimSpace(schema)) > 0 {
		if err := json.Unmarshal(schema, &doc); err != nil {
			return nil, fmt.Errorf("input schema: must be a JSON object: %w", err)
		}
		if doc == nil {
			return nil, fmt.Errorf("input schema: must be a JSON object, not null")
		}
	}
	if t, ok := doc["type"]; ok {
		var s string
		if json.Unmarshal(t, &s) != nil || s != "object" {
			return nil, fmt.Errorf("input schema: type must be \"object\", got %s", t)
		}
	}
	doc["type"] = json.RawMessage(`"object"`)

	props := map[string]json.RawMessage{}
	if p, ok := doc["properties"]; ok {
		if err := json.Unmarshal(p, &props); err != nil || props == nil {
			return nil, fmt.Errorf("input schema: properties must be an object")
		}
	}
	if _, ok := props["connector_card_id"]; ok {
		return nil, fmt.Errorf("input schema: properties.connector_card_id is forbidden: xAgent resolves the Card through the channel")
	}
	if existing, ok := props[ChannelIDArgument]; ok {
		var decl struct {
			Type any `json:"type"`
		}
		if err := json.Unmarshal(existing, &decl); err != nil || decl.Type != "string" {
			return nil, fmt.Errorf("input schema: properties.%s is declared with a type other than string", ChannelIDArgument)
		}
	} else {
		p, _ := json.Marshal(map[string]string{"type": "string", "description": ChannelIDDescription})
		props[ChannelIDArgument] = p
	}
	pb, err := json.Marshal(props)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	doc["properties"] = pb

	var required []string
	if r, ok := doc["required"]; ok {
		if err := json.Unmarshal(r, &required); err != nil {
			return nil, fmt.Errorf("input schema: required must be an array of strings")
		}
	}
	if !slices.Contains(required, ChannelIDArgument) {
		required = append([]string{ChannelIDArgument}, required...)
	}
	rb, err := json.Marshal(required)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	doc["required"] = rb
	return json.Marshal(doc)
}
