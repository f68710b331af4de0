package protocol

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxSkillHeaderLines bounds the front matter that [ParseSkillHeader] reads.
const MaxSkillHeaderLines = 256

// SkillHeader is the front matter of a Connector Skill (SKILL.md, section
// 4.2): the text between the leading "---" line and the next "---" line.
// Name is the protocol-visible Skill name; members other than name and
// description are kept, as plain strings, in Extra. It is a plain value.
type SkillHeader struct {
	Name        string
	Description string
	Extra       map[string]string
}

// ParseSkillHeader reads the YAML-style front matter of a Skill document:
// flat "key: value" lines between "---" lines; values may be quoted. Nested
// YAML (indented lines, list items) and comments are skipped. It fails when
// the document has no header, the header is not terminated within
// [MaxSkillHeaderLines] lines, or the header has no name.
func ParseSkillHeader(md []byte) (SkillHeader, error) {
	var h SkillHeader
	md = bytes.TrimPrefix(md, []byte("\xef\xbb\xbf"))
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(make([]byte, 0, 4096), 64*1024)
	started, lines := false, 0
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if !started {
			if line == "" {
				continue
			}
			if line != "---" {
				return h, errors.New("skill header: document does not start with a --- front matter line")
			}
			started = true
			continue
		}
		if line == "---" {
			if h.Name == "" {
				return h, errors.New("skill header: name is missing")
			}
			return h, nil
		}
		if lines++; lines > MaxSkillHeaderLines {
			return h, fmt.Errorf("skill header: longer than %d lines", MaxSkillHeaderLines)
		}
		if line == "" || strings.HasPrefix(line, "#") || line[0] == ' ' || line[0] == '\t' || strings.HasPrefix(line, "- ") {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			return h, fmt.Errorf("skill header: line %d is not \"key: value\"", lines+1)
		}
		key = strings.TrimSpace(key)
		val = unquoteSkillValue(strings.TrimSpace(val))
		switch key {
		case "name":
			h.Name = val
		case "description":
			h.Description = val
		default:
			if h.Extra == nil {
				h.Extra = map[string]string{}
			}
			h.Extra[key] = val
		}
	}
	if err := sc.Err(); err != nil {
		return h, fmt.Errorf("skill header: %w", err)
	}
	if !started {
		return h, errors.New("skill header: document is empty")
	}
	return h, errors.New("skill header: front matter is not terminated by ---")
}

func unquoteSkillValue(v string) string {
	if len(v) >= 2 {
		switch {
		case v[0] == '"' && v[len(v)-1] == '"':
			if u, err := strconv.Unquote(v); err == nil {
				return u
			}
			return v[1 : len(v)-1]
		case v[0] == '\'' && v[len(v)-1] == '\'':
			return strings.ReplaceAll(v[1:len(v)-1], "''", "'")
		}
	}
	return v
}

// PrimarySkillName returns the primary Skill name of a Card (section 4.2):
// "connector-" + the card id lowercased, with '.' and '_' turned into '-'.
// PrimarySkillName("im.wechat") == "connector-im-wechat".
func PrimarySkillName(cardID string) string {
	r := strings.NewReplacer(".", "-", "_", "-")
	return "connector-" + strings.ToLower(r.Replace(cardID))
}

// ValidateSkillName checks a Skill name against the naming rules of section
// 4.2: lowercase hyphen-case (ASCII a-z, 0-9 and '-', not starting or ending
// with '-'), equal to [PrimarySkillName] of cardID or to it followed by "-"
// and a purpose suffix. Violations carry path "".
func ValidateSkillName(name, cardID string) Violations {
	var vs Violations
	if name == "" {
		vs.add("", "skill name is required")
		return vs
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			vs.add("", "skill name %q must be lowercase hyphen-case (a-z, 0-9, -)", name)
			break
		}
	}
	if strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") {
		vs.add("", "skill name %q must not start or end with a hyphen", name)
	}
	primary := PrimarySkillName(cardID)
	if name != primary && !(strings.HasPrefix(name, primary+"-") && len(name) > len(primary)+1) {
		vs.add("", "skill name %q must be %q or %q followed by -<purpose>", name, primary, primary)
	}
	return vs
}

// ValidateSkill checks a Skill document against a Card (section 4.2): the
// header is present, its name is a valid name for the Card, every
// tools[].related_skill_ids entry is a valid name, and every related id that
// refers to the primary Skill matches the header name exactly. Violations
// about the header have path "name" (or "" when there is no header); those
// about the Card point into it ("tools[0].related_skill_ids[1]").
func ValidateSkill(md []byte, card *Card) Violations {
	var vs Violations
	if card == nil {
		vs.add("", "card is required to validate a skill")
		return vs
	}
	h, err := ParseSkillHeader(md)
	if err != nil {
		vs.add("", "%v", err)
	} else {
		for _, v := range ValidateSkillName(h.Name, card.ConnectorCardID) {
			vs.add("name", "%s", v.Reason)
		}
	}
	primary := PrimarySkillName(card.ConnectorCardID)
	for i, t := range card.Tools {
		for j, id := range t.RelatedSkillIDs {
			p := joinPath("tools", i, "related_skill_ids", j)
			for _, v := range ValidateSkillName(id, card.ConnectorCardID) {
				vs.add(p, "%s", v.Reason)
			}
			if err == nil && id == primary && h.Name != id {
				vs.add(p, "refers to the primary skill %q but the skill header name is %q", id, h.Name)
			}
		}
	}
	return vs
}
