package protocol

import (
	"encoding/json"
	"os"
	"testing"
)

// vSpecDescriptor loads the Descriptor example of section 9, unchanged: it
// already has target.display_name and tools[].status, which the official
// schema requires, so nothing had to be added.
func vSpecDescriptor(t testing.TB) *Descriptor {
	t.Helper()
	data, err := os.ReadFile("testdata/spec_descriptor.json")
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseDescriptor(data)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSpecDescriptorValidates(t *testing.T) {
	data, err := os.ReadFile("testdata/spec_descriptor.json")
	if err != nil {
		t.Fatal(err)
	}
	card := vSpecCard(t)
	d, vs := ValidateDescriptorJSON(data, card)
	if len(vs) > 0 {
		t.Fatalf("spec descriptor: %v", vs)
	}
	if vs := ValidateDescriptorAgainstCard(d, card, "cch_conn_im_wechat_xxx"); len(vs) > 0 {
		t.Fatalf("against card: %v", vs)
	}
	if vs := ValidateSchema(SchemaDescriptor, data); len(vs) > 0 {
		t.Fatalf("schema: %v", vs)
	}
}

func TestValidateDescriptorRules(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(d *Descriptor)
		want   string
	}{
		{"spec example", func(d *Descriptor) {}, ""},
		{"schema v1 not normalised", func(d *Descriptor) { d.Schema = DescriptorSchemaV1 }, "schema"},
		{"schema wrong", func(d *Descriptor) { d.Schema = "x" }, "schema"},
		{"card id missing", func(d *Descriptor) { d.Connection.ConnectorCardID = "" }, "connection.connector_card_id"},
		{"connector id missing", func(d *Descriptor) { d.Connection.ConnectorID = "" }, "connection.connector_id"},
		{"channel id missing", func(d *Descriptor) { d.Connection.ConnectorChannelID = "" }, "connection.connector_channel_id"},
		{"target_type bad", func(d *Descriptor) { d.Connection.TargetType = "browser" }, "connection.target_type"},
		{"target_type missing", func(d *Descriptor) { d.Connection.TargetType = "" }, "connection.target_type"},
		{"im.v2 on email", func(d *Descriptor) { d.Connection.TargetType = TargetEmail }, "connection.profiles[0]"},
		{"profiles empty", func(d *Descriptor) { d.Connection.Profiles = nil }, "connection.profiles"},
		{"profiles duplicate", func(d *Descriptor) { d.Connection.Profiles = []string{ProfileIMv2, ProfileIMv2} }, "connection.profiles[1]"},
		{"profiles blank", func(d *Descriptor) { d.Connection.Profiles = []string{""} }, "connection.profiles[0]"},
		{"status each", func(d *Descriptor) { d.Connection.Status = StatusOffline }, ""},
		{"status bad", func(d *Descriptor) { d.Connection.Status = "online" }, "connection.status"},
		{"provider missing", func(d *Descriptor) { d.Target.Provider = "" }, "target.provider"},
		{"display_name empty ok", func(d *Descriptor) { d.Target.DisplayName = "" }, ""},
		{"tool id missing", func(d *Descriptor) { d.Tools[0].ToolID = "" }, "tools[0].tool_id"},
		{"tool id duplicate", func(d *Descriptor) { d.Tools = append(d.Tools, d.Tools[0]) }, "tools[1].tool_id"},
		{"tool status missing", func(d *Descriptor) { d.Tools[0].Status = "" }, "tools[0].status"},
		{"tool status bad", func(d *Descriptor) { d.Tools[0].Status = "on" }, "tools[0].status"},
		{"tool status not_supported", func(d *Descriptor) { d.Tools[0].Status = ToolNotSupported }, ""},
		{"permission bad", func(d *Descriptor) { d.Tools[0].TargetPermissionState = "yes" }, "tools[0].target_permission_state"},
		{"permission omitted", func(d *Descriptor) { d.Tools[0].TargetPermissionState = "" }, ""},
		{"no tools", func(d *Descriptor) { d.Tools = nil }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := vSpecDescriptor(t)
			tc.mutate(d)
			vs := ValidateDescriptor(d)
			if tc.want == "" && len(vs) > 0 {
				t.Fatalf("want valid, got %v", vs)
			}
			if tc.want != "" && !vHasPath(vs, tc.want) {
				t.Fatalf("want a violation at %q, got %v", tc.want, vs)
			}
			data, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			_, jvs := ValidateDescriptorJSON(data, nil)
			if tc.want == "" && len(jvs) > 0 {
				t.Fatalf("JSON: want valid, got %v", jvs)
			}
			if tc.want != "" && !vHasPath(jvs, tc.want) && tc.name != "schema v1 not normalised" {
				t.Fatalf("JSON: want a violation at %q, got %v", tc.want, jvs)
			}
			// A v1 Descriptor is normalised before the v2 schema applies.
			if len(jvs) == 0 && d.Schema != DescriptorSchemaV1 {
				if svs := ValidateSchema(SchemaDescriptor, data); len(svs) > 0 {
					t.Fatalf("accepted but schema rejects: %v", svs)
				}
			}
		})
	}
	if vs := ValidateDescriptor(nil); len(vs) != 1 {
		t.Fatalf("nil: %v", vs)
	}
}

func TestValidateDescriptorAgainstCard(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(d *Descriptor, c *Card)
		channel string
		want    string
	}{
		{"spec pair", func(d *Descriptor, c *Card) {}, "cch_conn_im_wechat_xxx", ""},
		{"channel not checked", func(d *Descriptor, c *Card) {}, "", ""},
		{"card id mismatch", func(d *Descriptor, c *Card) { c.ConnectorCardID = "im.feishu" }, "", "connection.connector_card_id"},
		{"channel mismatch", func(d *Descriptor, c *Card) {}, "cch_other", "connection.connector_channel_id"},
		{"profile not in card", func(d *Descriptor, c *Card) { d.Connection.Profiles = []string{ProfileIMv1} }, "", "connection.profiles[0]"},
		{"profile subset", func(d *Descriptor, c *Card) {
			c.Supports.Profiles = []string{ProfileIMv1, ProfileIMv2}
		}, "", ""},
		{"profiles empty", func(d *Descriptor, c *Card) { d.Connection.Profiles = nil }, "", "connection.profiles"},
		{"profiles duplicate", func(d *Descriptor, c *Card) { d.Connection.Profiles = []string{ProfileIMv2, ProfileIMv2} }, "", "connection.profiles[1]"},
		{"tool not in card", func(d *Descriptor, c *Card) { d.Tools[0].ToolID = "wechat_file_send" }, "", "tools[0].tool_id"},
		{"target type not in card", func(d *Descriptor, c *Card) { d.Connection.TargetType = TargetEmail }, "", "connection.target_type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, c := vSpecDescriptor(t), vSpecCard(t)
			tc.mutate(d, c)
			vs := ValidateDescriptorAgainstCard(d, c, tc.channel)
			if tc.want == "" && len(vs) > 0 {
				t.Fatalf("want valid, got %v", vs)
			}
			if tc.want != "" && !vHasPath(vs, tc.want) {
				t.Fatalf("want a violation at %q, got %v", tc.want, vs)
			}
			data, _ := json.Marshal(d)
			_, jvs := ValidateDescriptorJSON(data, c)
			if tc.want != "" && tc.name != "channel mismatch" && !vHasPath(jvs, tc.want) {
				t.Fatalf("JSON: want a violation at %q, got %v", tc.want, jvs)
			}
		})
	}
	if vs := ValidateDescriptorAgainstCard(vSpecDescriptor(t), nil, ""); len(vs) != 1 {
		t.Fatalf("nil card: %v", vs)
	}
}

func TestValidateDescriptorJSON(t *testing.T) {
	v1 := []byte(`{"schema":"xagent.connection/v1","connection":{"connector_card_id":"im.wechat","connector_id":"c1",
		"connector_channel_id":"cch_1","target_type":"im","profile":"xagent.im.v2","status":"connected"},
		"target":{"provider":"wechat","display_name":"W"}}`)
	tests := []struct {
		name string
		data []byte
		want string
		ok   bool // a Descriptor is returned
	}{
		{"v1 normalised", v1, "", true},
		{"display_name absent", []byte(`{"schema":"xagent.connection/v2","connection":{"connector_card_id":"im.wechat","connector_id":"c1",
			"connector_channel_id":"cch_1","target_type":"im","profiles":["xagent.im.v2"],"status":"connected"},
			"target":{"provider":"wechat"}}`), "target.display_name", true},
		{"tool status absent", []byte(`{"schema":"xagent.connection/v2","connection":{"connector_card_id":"im.wechat","connector_id":"c1",
			"connector_channel_id":"cch_1","target_type":"im","profiles":["xagent.im.v2"],"status":"connected"},
			"target":{"provider":"wechat","display_name":""},"tools":[{"tool_id":"wechat_message_send"}]}`), "tools[0].status", true},
		{"target missing", []byte(`{"schema":"xagent.connection/v2","connection":{"connector_card_id":"im.wechat","connector_id":"c1",
			"connector_channel_id":"cch_1","target_type":"im","profiles":["xagent.im.v2"],"status":"connected"}}`), "target.provider", true},
		{"not JSON", []byte(`{`), "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, vs := ValidateDescriptorJSON(tc.data, vSpecCard(t))
			if (d != nil) != tc.ok {
				t.Fatalf("descriptor returned = %v", d != nil)
			}
			switch {
			case tc.want == "" && tc.ok:
				if len(vs) > 0 {
					t.Fatalf("want valid, got %v", vs)
				}
				if d.Schema != DescriptorSchema || len(d.Connection.Profiles) != 1 {
					t.Fatalf("not normalised: %+v", d)
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
