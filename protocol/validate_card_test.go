package protocol

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// vSpecCard loads the Card example of section 4.1, unchanged. It already
// carries everything the official schema requires (build.build_time, and the
// tool's "profile", which the rules need), so nothing had to be added.
func vSpecCard(t testing.TB) *Card {
	t.Helper()
	data, err := os.ReadFile("testdata/spec_card.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseCard(data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func vHasPath(vs Violations, path string) bool {
	for _, v := range vs {
		if v.Path == path {
			return true
		}
	}
	return false
}

func TestSpecCardValidates(t *testing.T) {
	data, err := os.ReadFile("testdata/spec_card.json")
	if err != nil {
		t.Fatal(err)
	}
	c, vs := ValidateCardJSON(data)
	if len(vs) > 0 {
		t.Fatalf("spec card: %v", vs)
	}
	if c == nil || c.ConnectorCardID != "im.wechat" {
		t.Fatalf("card not returned: %+v", c)
	}
	if vs := ValidateSchema(SchemaCard, data); len(vs) > 0 {
		t.Fatalf("spec card vs schema: %v", vs)
	}
}

func vStr(s string) *string { return &s }

func TestValidateCardRules(t *testing.T) {
	okField := AuthField{Name: "chat_id", Label: "Chat", InputType: InputText}
	tests := []struct {
		name   string
		mutate func(c *Card)
		want   string // path of the expected violation; "" means valid
	}{
		{"spec example", func(c *Card) {}, ""},
		{"schema wrong", func(c *Card) { c.Schema = "xagent.connector/v2" }, "schema"},
		{"protocol_version missing", func(c *Card) { c.ProtocolVersion = "" }, "protocol_version"},
		{"protocol_version old", func(c *Card) { c.ProtocolVersion = "2.0" }, "protocol_version"},
		{"protocol_version bare major", func(c *Card) { c.ProtocolVersion = "3" }, "protocol_version"},
		{"build_time missing", func(c *Card) { c.Build.BuildTime = "" }, "build.build_time"},
		{"build missing", func(c *Card) { c.Build = Build{} }, "build"},
		{"build without version ok", func(c *Card) { c.Build = Build{BuildTime: "x"} }, ""},
		{"card id missing", func(c *Card) { c.ConnectorCardID = "" }, "connector_card_id"},
		{"connector name missing", func(c *Card) { c.Connector.Name = "" }, "connector.name"},
		{"connector version missing", func(c *Card) { c.Connector.Version = "" }, "connector.version"},
		{"user_channel_mode multiple", func(c *Card) { c.Supports.UserChannelMode = UserChannelMultiple }, ""},
		{"user_channel_mode omitted", func(c *Card) { c.Supports.UserChannelMode = "" }, ""},
		{"user_channel_mode bad", func(c *Card) { c.Supports.UserChannelMode = "many" }, "supports.user_channel_mode"},
		{"target_types empty", func(c *Card) { c.Supports.TargetTypes = nil }, "supports.target_types"},
		{"target_types unknown", func(c *Card) { c.Supports.TargetTypes = []string{"im", "browser"} }, "supports.target_types[1]"},
		{"target_types duplicate", func(c *Card) { c.Supports.TargetTypes = []string{"im", "im"} }, "supports.target_types[1]"},
		{"target_types two", func(c *Card) { c.Supports.TargetTypes = []string{"im", "email"} }, ""},
		{"targets no provider", func(c *Card) { c.Supports.Targets[0].Provider = "" }, "supports.targets[0].provider"},
		{"targets no label", func(c *Card) { c.Supports.Targets[0].Label = "" }, "supports.targets[0].label"},
		{"targets bad type", func(c *Card) { c.Supports.Targets[0].TargetType = "chat" }, "supports.targets[0].target_type"},
		{"profiles empty", func(c *Card) { c.Supports.Profiles = nil }, "supports.profiles"},
		{"profiles duplicate", func(c *Card) { c.Supports.Profiles = []string{ProfileIMv2, ProfileIMv2} }, "supports.profiles[1]"},
		{"profiles empty entry", func(c *Card) { c.Supports.Profiles = []string{ProfileIMv2, ""} }, "supports.profiles[1]"},
		{"im.v1 and im.v2 on im", func(c *Card) { c.Supports.Profiles = []string{ProfileIMv1, ProfileIMv2} }, ""},
		{"im.v2 without im", func(c *Card) { c.Supports.TargetTypes = []string{"email"}; c.Supports.Targets = nil }, "supports.profiles[0]"},
		{"im.v1 without im", func(c *Card) {
			c.Supports.TargetTypes = []string{"device"}
			c.Supports.Profiles = []string{ProfileIMv1}
			c.Tools[0].Profile = ProfileIMv1
		}, "supports.profiles[0]"},
		{"device.v1 needs device", func(c *Card) { c.Supports.Profiles = append(c.Supports.Profiles, ProfileDeviceV1) }, "supports.profiles[1]"},
		{"device.v1 with device", func(c *Card) {
			c.Supports.TargetTypes = append(c.Supports.TargetTypes, TargetDevice)
			c.Supports.Profiles = append(c.Supports.Profiles, ProfileDeviceV1)
		}, ""},
		{"unknown profile kept", func(c *Card) { c.Supports.Profiles = append(c.Supports.Profiles, "vendor.x.v1") }, ""},
		{"tool profile undeclared", func(c *Card) { c.Tools[0].Profile = ProfileIMv1 }, "tools[0].profile"},
		{"tool profile omitted", func(c *Card) { c.Tools[0].Profile = "" }, ""},
		{"tool_id empty", func(c *Card) { c.Tools[0].ToolID = "" }, "tools[0].tool_id"},
		{"tool_id charset", func(c *Card) { c.Tools[0].ToolID = "send message" }, "tools[0].tool_id"},
		{"tool_id non-ascii", func(c *Card) { c.Tools[0].ToolID = "envoyé" }, "tools[0].tool_id"},
		{"tool_id all allowed chars", func(c *Card) { c.Tools[0].ToolID = "Az09_.-x" }, ""},
		{"tool_id 256", func(c *Card) { c.Tools[0].ToolID = strings.Repeat("a", 256) }, ""},
		{"tool_id 257", func(c *Card) { c.Tools[0].ToolID = strings.Repeat("a", 257) }, "tools[0].tool_id"},
		{"tool_id duplicate", func(c *Card) { c.Tools = append(c.Tools, c.Tools[0]) }, "tools[1].tool_id"},
		{"two tools", func(c *Card) { t2 := c.Tools[0]; t2.ToolID = "other"; c.Tools = append(c.Tools, t2) }, ""},
		{"related skill empty", func(c *Card) { c.Tools[0].RelatedSkillIDs = []string{""} }, "tools[0].related_skill_ids[0]"},
		{"input_schema missing", func(c *Card) { c.Tools[0].InputSchema = nil }, "tools[0].input_schema"},
		{"input_schema not object", func(c *Card) { c.Tools[0].InputSchema = json.RawMessage(`[1]`) }, "tools[0].input_schema"},
		{"input_schema type array", func(c *Card) {
			c.Tools[0].InputSchema = json.RawMessage(`{"type":"array","properties":{"connector_channel_id":{"type":"string"}},"required":["connector_channel_id"]}`)
		}, "tools[0].input_schema.type"},
		{"input_schema minimal", func(c *Card) {
			c.Tools[0].InputSchema = json.RawMessage(`{"type":"object","properties":{"connector_channel_id":{"type":"string"}},"required":["connector_channel_id"]}`)
		}, ""},
		{"channel id property missing", func(c *Card) {
			c.Tools[0].InputSchema = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["connector_channel_id"]}`)
		}, "tools[0].input_schema.properties.connector_channel_id"},
		{"properties missing", func(c *Card) {
			c.Tools[0].InputSchema = json.RawMessage(`{"type":"object","required":["connector_channel_id"]}`)
		}, "tools[0].input_schema.properties"},
		{"channel id not string", func(c *Card) {
			c.Tools[0].InputSchema = json.RawMessage(`{"type":"object","properties":{"connector_channel_id":{"type":"integer"}},"required":["connector_channel_id"]}`)
		}, "tools[0].input_schema.properties.connector_channel_id.type"},
		{"channel id not required", func(c *Card) {
			c.Tools[0].InputSchema = json.RawMessage(`{"type":"object","properties":{"connector_channel_id":{"type":"string"}},"required":["text"]}`)
		}, "tools[0].input_schema.required"},
		{"required missing", func(c *Card) {
			c.Tools[0].InputSchema = json.RawMessage(`{"type":"object","properties":{"connector_channel_id":{"type":"string"}}}`)
		}, "tools[0].input_schema.required"},
		{"required duplicate", func(c *Card) {
			c.Tools[0].InputSchema = json.RawMessage(`{"type":"object","properties":{"connector_channel_id":{"type":"string"}},"required":["connector_channel_id","connector_channel_id"]}`)
		}, "tools[0].input_schema.required[1]"},
		{"connector_card_id argument", func(c *Card) {
			c.Tools[0].InputSchema = json.RawMessage(`{"type":"object","properties":{"connector_channel_id":{"type":"string"},"connector_card_id":{"type":"string"}},"required":["connector_channel_id"]}`)
		}, "tools[0].input_schema.properties.connector_card_id"},
		{"output_schema not object", func(c *Card) { c.Tools[0].OutputSchema = json.RawMessage(`"x"`) }, "tools[0].output_schema"},
		{"no tools", func(c *Card) { c.Tools = nil }, ""},
		{"server_base_url top", func(c *Card) {
			c.Extensions = Extensions{"server_base_url": json.RawMessage(`"https://x"`)}
		}, "server_base_url"},
		{"server_base_url nested", func(c *Card) {
			c.Supports.Extensions = Extensions{"x": json.RawMessage(`{"server_base_url":"https://x"}`)}
		}, "supports.x.server_base_url"},
		{"other extension ok", func(c *Card) { c.Extensions = Extensions{"vendor_note": json.RawMessage(`"hi"`)} }, ""},
		{"auth flow id empty", func(c *Card) { c.AuthFlows[0].ID = "" }, "auth_flows[0].id"},
		{"auth flow id duplicate", func(c *Card) { c.AuthFlows[1].ID = c.AuthFlows[0].ID }, "auth_flows[1].id"},
		{"auth flow type missing", func(c *Card) { c.AuthFlows[0].Type = "" }, "auth_flows[0].type"},
		{"auth flow type unknown", func(c *Card) { c.AuthFlows[0].Type = "oauth" }, "auth_flows[0].type"},
		{"auth flow target_type bad", func(c *Card) { c.AuthFlows[0].TargetType = "chat" }, "auth_flows[0].target_type"},
		{"auth flow target_type missing", func(c *Card) { c.AuthFlows[0].TargetType = "" }, "auth_flows[0].target_type"},
		{"auth flow target_type undeclared", func(c *Card) { c.AuthFlows[1].TargetType = TargetEmail }, "auth_flows[1].target_type"},
		{"auth flow title missing", func(c *Card) { c.AuthFlows[0].Title = "" }, "auth_flows[0].title"},
		{"form without fields", func(c *Card) { c.AuthFlows[1].Fields = nil }, "auth_flows[1].fields"},
		{"form with one field", func(c *Card) { c.AuthFlows[1].Fields = []AuthField{okField} }, ""},
		{"qr with fields", func(c *Card) { c.AuthFlows[0].Fields = []AuthField{okField} }, "auth_flows[0].fields"},
		{"field name empty", func(c *Card) { c.AuthFlows[1].Fields[1].Name = "" }, "auth_flows[1].fields[1].name"},
		{"field name duplicate", func(c *Card) { c.AuthFlows[1].Fields[1].Name = "bot_token" }, "auth_flows[1].fields[1].name"},
		{"field label empty", func(c *Card) { c.AuthFlows[1].Fields[1].Label = "" }, "auth_flows[1].fields[1].label"},
		{"field input_type bad", func(c *Card) { c.AuthFlows[1].Fields[1].InputType = "email" }, "auth_flows[1].fields[1].input_type"},
		{"default on text field ok", func(c *Card) { c.AuthFlows[1].Fields[1].DefaultValue = vStr("1") }, ""},
		{"default on password field", func(c *Card) { c.AuthFlows[1].Fields[0].DefaultValue = vStr("x") }, "auth_flows[1].fields[0].default_value"},
		{"default on secret text field", func(c *Card) {
			c.AuthFlows[1].Fields[1].Secret = true
			c.AuthFlows[1].Fields[1].DefaultValue = vStr("")
		}, "auth_flows[1].fields[1].default_value"},
		{"config_schema not object", func(c *Card) { c.AuthFlows[0].ConfigSchema = json.RawMessage(`1`) }, "auth_flows[0].config_schema"},
		{"login step type missing", func(c *Card) { c.UI.LoginFlow.Steps[1].Type = "" }, "ui.login_flow.steps[1].type"},
		{"trust_level bad", func(c *Card) { c.Security.TrustLevel = "trusted" }, "security.trust_level"},
		{"trust_level local", func(c *Card) { c.Security.TrustLevel = TrustLocal }, ""},
		{"no ui no security", func(c *Card) { c.UI = nil; c.Security = nil }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := vSpecCard(t)
			tc.mutate(c)
			vs := ValidateCard(c)
			if tc.want == "" {
				if len(vs) > 0 {
					t.Fatalf("want valid, got %v", vs)
				}
			} else if !vHasPath(vs, tc.want) {
				t.Fatalf("want a violation at %q, got %v", tc.want, vs)
			}
			// The JSON path agrees with the struct path, and anything
			// accepted also passes the official schema.
			data, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			_, jvs := ValidateCardJSON(data)
			if tc.want == "" && len(jvs) > 0 {
				t.Fatalf("JSON: want valid, got %v", jvs)
			}
			if tc.want != "" && !vHasPath(jvs, tc.want) {
				t.Fatalf("JSON: want a violation at %q, got %v", tc.want, jvs)
			}
			if len(jvs) == 0 {
				if svs := ValidateSchema(SchemaCard, data); len(svs) > 0 {
					t.Fatalf("accepted but schema rejects: %v", svs)
				}
			}
		})
	}
}

func TestValidateCardNil(t *testing.T) {
	if vs := ValidateCard(nil); len(vs) != 1 {
		t.Fatalf("nil card: %v", vs)
	}
}

func TestValidateCardJSONRaw(t *testing.T) {
	base, err := os.ReadFile("testdata/spec_card.json")
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(base, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tools := func(m map[string]any) map[string]any { return m["tools"].([]any)[0].(map[string]any) }
	tests := []struct {
		name string
		data []byte
		want string
		card bool // the Card decodes
	}{
		{"spec", base, "", true},
		{"not JSON", []byte(`{"schema":`), "", false},
		{"array", []byte(`[]`), "", false},
		{"server_base_url inside input_schema", edit(func(m map[string]any) {
			tools(m)["input_schema"].(map[string]any)["properties"].(map[string]any)["server_base_url"] = map[string]any{"type": "string"}
		}), "tools[0].input_schema.properties.server_base_url", true},
		{"server_base_url in array", edit(func(m map[string]any) {
			m["x"] = []any{map[string]any{"server_base_url": "https://a"}}
		}), "x[0].server_base_url", true},
		{"build missing", edit(func(m map[string]any) { delete(m, "build") }), "build", true},
		{"build empty", edit(func(m map[string]any) { m["build"] = map[string]any{} }), "build.build_time", true},
		{"build_time missing", edit(func(m map[string]any) { delete(m["build"].(map[string]any), "build_time") }), "build.build_time", true},
		{"supports missing", edit(func(m map[string]any) { delete(m, "supports") }), "supports.target_types", true},
		{"tools null", edit(func(m map[string]any) { m["tools"] = nil }), "tools", true},
		{"connector not object", edit(func(m map[string]any) { m["connector"] = "x" }), "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, vs := ValidateCardJSON(tc.data)
			if (c != nil) != tc.card {
				t.Fatalf("card returned = %v, want %v", c != nil, tc.card)
			}
			switch {
			case tc.want == "" && tc.card:
				if len(vs) > 0 {
					t.Fatalf("want valid, got %v", vs)
				}
			case tc.want == "":
				if len(vs) == 0 {
					t.Fatal("want violations")
				}
			case !vHasPath(vs, tc.want):
				t.Fatalf("want violation at %q, got %v", tc.want, vs)
			}
		})
	}
}

func TestValidateCardJSONDedupesSchemaAndRules(t *testing.T) {
	c := vSpecCard(t)
	c.Connector.Name = ""
	data, _ := json.Marshal(c)
	_, vs := ValidateCardJSON(data)
	n := 0
	for _, v := range vs {
		if v.Path == "connector.name" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("want one violation at connector.name, got %v", vs)
	}
}

// A Card without a build block is reported at "build", once, not at the
// member of the block that happens to be required.
func TestValidateCardBuildMissing(t *testing.T) {
	c := vSpecCard(t)
	c.Build = Build{}
	data, _ := json.Marshal(c)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	delete(m, "build")
	data, _ = json.Marshal(m)
	for name, vs := range map[string]Violations{"typed": ValidateCard(c), "json": second(ValidateCardJSON(data))} {
		var got []string
		for _, v := range vs {
			if v.Path == "build" || strings.HasPrefix(v.Path, "build.") {
				got = append(got, v.String())
			}
		}
		if len(got) != 1 || got[0] != "build: is required" {
			t.Errorf("%s: build violations %q, want [build: is required]", name, got)
		}
	}
}

func second[A, B any](_ A, b B) B { return b }
