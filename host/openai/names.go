package openai

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"

	"github.com/xconn/xconn/host"
)

// FunctionNamePattern is the rule OpenAI (and most compatible servers)
// apply to function names. A protocol tool_id may also hold periods and be
// up to 256 characters long.
const FunctionNamePattern = host.ProviderToolNamePattern

var functionName = regexp.MustCompile(FunctionNamePattern)

// nameHashLen is the number of hex digits of the suffix of a mapped name.
const nameHashLen = 10

// FunctionName maps a tool_id to the function name the model sees: the
// tool_id itself when the provider accepts it; otherwise the tool_id with
// every character outside [a-zA-Z0-9_-] replaced by "_", cut to leave room
// for "_" and a stable 10-digit hash of the whole tool_id
// ("im.wechat.send" → "im_wechat_send_2c1f5a9b04"). The result depends on
// the tool_id alone, so names stay the same across turns and restarts;
// [toolNames] maps them back.
func FunctionName(toolID string) string {
	if functionName.MatchString(toolID) {
		return toolID
	}
	sum := sha256.Sum256([]byte(toolID))
	suffix := "_" + hex.EncodeToString(sum[:])[:nameHashLen]
	b := []byte(toolID)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if room := 64 - len(suffix); len(b) > room {
		b = b[:room]
	}
	return string(b) + suffix
}

// toolNames is the mapping of one request: function name → projected
// tool. Two tool_ids that map to one name (a valid id that happens to
// equal another's mapped name) keep the first; the second is reported.
type toolNames map[string]host.FunctionDef

// project builds the tools array and the mapping; dropped lists tool_ids
// that could not be given a unique name (never expected in practice).
func project(defs []host.FunctionDef) (tools []Tool, names toolNames, dropped []string) {
	names = make(toolNames, len(defs))
	for _, d := range defs {
		name := FunctionName(d.Name)
		if _, taken := names[name]; taken {
			dropped = append(dropped, d.Name)
			continue
		}
		names[name] = d
		params := d.Parameters
		if len(params) == 0 || string(params) == "null" {
			params = []byte(`{"type":"object","properties":{}}`)
		}
		desc := d.Description
		if desc == "" {
			desc = d.Title
		}
		tools = append(tools, Tool{Type: "function", Function: Function{Name: name, Description: desc, Parameters: params}})
	}
	return tools, names, dropped
}
