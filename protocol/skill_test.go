package protocol

import (
	"strings"
	"testing"
)

func TestPrimarySkillName(t *testing.T) {
	for id, want := range map[string]string{
		"im.wechat":    "connector-im-wechat",
		"im.feishu":    "connector-im-feishu",
		"device.adb":   "connector-device-adb",
		"im.Tele_gram": "connector-im-tele-gram",
	} {
		if got := PrimarySkillName(id); got != want {
			t.Errorf("PrimarySkillName(%q) = %q, want %q", id, got, want)
		}
	}
}

func TestValidateSkillName(t *testing.T) {
	tests := []struct {
		name, card string
		ok         bool
	}{
		{"connector-im-wechat", "im.wechat", true},
		{"connector-im-wechat-file", "im.wechat", true},
		{"connector-device-adb", "device.adb", true},
		{"connector-im-wechat-", "im.wechat", false},
		{"connector-im-wechatfile", "im.wechat", false},
		{"Connector-im-wechat", "im.wechat", false},
		{"connector_im_wechat", "im.wechat", false},
		{"im-connector-reply", "im.wechat", false},
		{"android-device-control", "device.adb", false},
		{"connector-im-feishu", "im.wechat", false},
		{"", "im.wechat", false},
	}
	for _, tc := range tests {
		vs := ValidateSkillName(tc.name, tc.card)
		if (len(vs) == 0) != tc.ok {
			t.Errorf("ValidateSkillName(%q, %q) = %v, want ok=%v", tc.name, tc.card, vs, tc.ok)
		}
	}
}

func TestParseSkillHeader(t *testing.T) {
	tests := []struct {
		name, md, want, desc string
		extra                map[string]string
		ok                   bool
	}{
		{"plain", "---\nname: connector-im-wechat\ndescription: Reply on WeChat\n---\n# Body\n", "connector-im-wechat", "Reply on WeChat", nil, true},
		{"quoted and extra", "\n---\nname: \"connector-im-wechat\"\ndescription: 'It''s here'\nversion: 1\nmetadata:\n  a: b\n# c\n---\n", "connector-im-wechat", "It's here", map[string]string{"version": "1", "metadata": ""}, true},
		{"crlf", "---\r\nname: x\r\n---\r\n", "x", "", nil, true},
		{"no header", "# Skill\nname: x\n", "", "", nil, false},
		{"unterminated", "---\nname: x\n", "", "", nil, false},
		{"no name", "---\ndescription: d\n---\n", "", "", nil, false},
		{"bad line", "---\nname x\n---\n", "", "", nil, false},
		{"empty", "", "", "", nil, false},
		{"too long", "---\n" + strings.Repeat("k: v\n", MaxSkillHeaderLines+1) + "name: x\n---\n", "", "", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := ParseSkillHeader([]byte(tc.md))
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			if !tc.ok {
				return
			}
			if h.Name != tc.want || h.Description != tc.desc {
				t.Fatalf("got %+v", h)
			}
			for k, v := range tc.extra {
				if h.Extra[k] != v {
					t.Fatalf("extra %q = %q, want %q", k, h.Extra[k], v)
				}
			}
		})
	}
}

func TestValidateSkill(t *testing.T) {
	primary := "---\nname: connector-im-wechat\ndescription: d\n---\nbody"
	tests := []struct {
		name   string
		md     string
		mutate func(c *Card)
		want   string // violation path; "-" means valid
	}{
		{"spec card and primary skill", primary, func(c *Card) {}, "-"},
		{"suffix skill, card refers to suffix", "---\nname: connector-im-wechat-file\n---\n", func(c *Card) {
			c.Tools[0].RelatedSkillIDs = []string{"connector-im-wechat-file"}
		}, "-"},
		{"header name mismatches primary reference", "---\nname: connector-im-wechat-file\n---\n", func(c *Card) {}, "tools[0].related_skill_ids[0]"},
		{"header name wrong format", "---\nname: im-connector-reply\n---\n", func(c *Card) { c.Tools[0].RelatedSkillIDs = nil }, "name"},
		{"related id wrong format", primary, func(c *Card) { c.Tools[0].RelatedSkillIDs = []string{"Connector-IM"} }, "tools[0].related_skill_ids[0]"},
		{"no header", "# Skill only", func(c *Card) {}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := vSpecCard(t)
			tc.mutate(c)
			vs := ValidateSkill([]byte(tc.md), c)
			if tc.want == "-" {
				if len(vs) > 0 {
					t.Fatalf("want valid, got %v", vs)
				}
				return
			}
			if !vHasPath(vs, tc.want) {
				t.Fatalf("want violation at %q, got %v", tc.want, vs)
			}
		})
	}
	if vs := ValidateSkill([]byte(primary), nil); len(vs) != 1 {
		t.Fatalf("nil card: %v", vs)
	}
}
