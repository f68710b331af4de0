package host

import (
	"encoding/json"
	"fmt"
	"regexp"
)

// ProviderToolNamePattern is what both OpenAI (function names) and
// Anthropic (tool names) accept: ASCII letters, digits, underscores and
// hyphens, 1 to 64 characters. A protocol tool_id may also contain periods
// and be up to 256 characters long; such tools are reported, never renamed.
const ProviderToolNamePattern = `^[a-zA-Z0-9_-]{1,64}$`

var providerToolName = regexp.MustCompile(ProviderToolNamePattern)

// Unsupported is a tool an exporter left out, with the reason.
type Unsupported struct {
	ToolID string
	CardID string
	Reason string
}

// OpenAITool is one entry of the OpenAI Chat Completions "tools" array.
type OpenAITool struct {
	Type     string         `json:"type"` // "function"
	Function OpenAIFunction `json:"function"`
}

// OpenAIFunction is the function of an [OpenAITool].
type OpenAIFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// AnthropicTool is one entry of the Anthropic Messages API "tools" array.
type AnthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

func checkName(d FunctionDef) (Unsupported, bool) {
	if providerToolName.MatchString(d.Name) {
		return Unsupported{}, true
	}
	return Unsupported{ToolID: d.Name, CardID: d.CardID,
		Reason: fmt.Sprintf("name must match %s (no periods, at most 64 characters)", ProviderToolNamePattern)}, false
}

func params(p json.RawMessage) json.RawMessage {
	if len(p) == 0 {
		return json.RawMessage(`{"type":"object"}`)
	}
	return p
}

// ExportOpenAI converts function definitions to the OpenAI tool format.
// Tools whose tool_id OpenAI rejects are returned in the second result
// instead of being renamed.
func ExportOpenAI(defs []FunctionDef) ([]OpenAITool, []Unsupported) {
	var out []OpenAITool
	var bad []Unsupported
	for _, d := range defs {
		if u, ok := checkName(d); !ok {
			bad = append(bad, u)
			continue
		}
		out = append(out, OpenAITool{Type: "function", Function: OpenAIFunction{Name: d.Name, Description: d.Description, Parameters: params(d.Parameters)}})
	}
	return out, bad
}

// ExportAnthropic converts function definitions to the Anthropic tool
// format. Tools whose tool_id Anthropic rejects are returned in the second
// result instead of being renamed.
func ExportAnthropic(defs []FunctionDef) ([]AnthropicTool, []Unsupported) {
	var out []AnthropicTool
	var bad []Unsupported
	for _, d := range defs {
		if u, ok := checkName(d); !ok {
			bad = append(bad, u)
			continue
		}
		out = append(out, AnthropicTool{Name: d.Name, Description: d.Description, InputSchema: params(d.Parameters)})
	}
	return out, bad
}
