package protocol

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestWithConnectorChannelIDInputSchema(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantErr  bool
		required []string
	}{
		{"nil", ``, false, []string{"connector_channel_id"}},
		{"minimal", `{"type":"object"}`, false, []string{"connector_channel_id"}},
		{"with args", `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`, false, []string{"connector_channel_id", "text"}},
		{"already declared", `{"type":"object","properties":{"connector_channel_id":{"type":"string"}},"required":["connector_channel_id"]}`, false, []string{"connector_channel_id"}},
		{"no type", `{"properties":{"n":{"type":"integer"}}}`, false, []string{"connector_channel_id"}},
		{"conflicting type", `{"type":"object","properties":{"connector_channel_id":{"type":"integer"}}}`, true, nil},
		{"card id argument", `{"type":"object","properties":{"connector_card_id":{"type":"string"}}}`, true, nil},
		{"array schema", `{"type":"array"}`, true, nil},
		{"not an object", `[1]`, true, nil},
		{"null", `null`, true, nil},
		{"bad required", `{"type":"object","required":"x"}`, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := json.RawMessage(tt.in)
			before := string(in)
			out, err := WithConnectorChannelIDInputSchema(in)
			if string(in) != before {
				t.Fatal("input mutated")
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			var doc struct {
				Type       string                    `json:"type"`
				Properties map[string]map[string]any `json:"properties"`
				Required   []string                  `json:"required"`
			}
			if err := json.Unmarshal(out, &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Type != "object" || doc.Properties["connector_channel_id"]["type"] != "string" {
				t.Fatalf("schema = %s", out)
			}
			if !slices.Equal(doc.Required, tt.required) {
				t.Fatalf("required = %v, want %v", doc.Required, tt.required)
			}
			// Idempotent: applying it twice changes nothing.
			again, err := WithConnectorChannelIDInputSchema(out)
			if err != nil || string(again) != string(out) {
				t.Fatalf("second application: %s, %v", again, err)
			}
		})
	}
}
