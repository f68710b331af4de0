package connector

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/xconn/xconn/protocol"
)

// Identity declares who a connector is, in one small struct: the SDK
// derives the whole Card from it and from what is registered (tools, sign-in
// flows, IM handlers). It is the code-first alternative to a hand-written
// [Options.Card]; set one or the other.
//
// What the SDK fills in:
//   - schema and protocol_version: the ones this SDK speaks (3.0);
//   - build: [BuildInfo] (from -ldflags or the toolchain's VCS data);
//   - supports.target_types: TargetType; supports.targets: one entry of
//     Provider, Label and TargetDescription;
//   - supports.profiles: Profiles, or when empty xagent.im.v2 for an IM
//     target (which needs an OnAssistantMessage handler) and
//     xagent.device.v1 for a device target;
//   - auth_flows: from AddForm, AddQR and AddAuthFlow registrations;
//     ui.login_flow names the flow registered with FlowOptions.Default;
//   - tools: from AddTool/AddRawTool registrations, each linked to the
//     primary Skill (related_skill_ids) when a Skill is served;
//   - security: api_key_required from Options.APIKey, TrustLevel and
//     DataClasses from here.
//
// The Skill's front matter name is the primary Skill name of CardID
// ("connector-" + the id with '.' and '_' turned into '-', so "im.roomchat"
// serves "connector-im-roomchat"): a Skill without front matter gets one
// (name, and Description as description), a Skill with one is checked
// against it at Start.
type Identity struct {
	// CardID is the connector_card_id, such as "im.telegram". Required.
	CardID string
	// Name is the human-readable connector name. Required.
	Name string
	// Version is the connector's own version (raise it when tools, flows
	// or the Skill change). Default "1.0.0".
	Version string
	// Vendor and Description are optional Card text.
	Vendor      string
	Description string
	// TargetType is the kind of target system (im, device, ...). Required.
	TargetType protocol.TargetType
	// Provider names the target system, such as "telegram". Required.
	Provider string
	// Label is the target's display label (default Name).
	Label string
	// TargetDescription describes the target (optional).
	TargetDescription string
	// Profiles overrides the derived supports.profiles.
	Profiles []protocol.Profile
	// UserChannelMode is single or multiple (default multiple).
	UserChannelMode string
	// TrustLevel and DataClasses fill the Card's security block.
	TrustLevel  string
	DataClasses []string
}

func (id Identity) check() error {
	var missing []string
	if id.CardID == "" {
		missing = append(missing, "CardID")
	}
	if id.Name == "" {
		missing = append(missing, "Name")
	}
	if id.TargetType == "" {
		missing = append(missing, "TargetType")
	}
	if id.Provider == "" {
		missing = append(missing, "Provider")
	}
	if len(missing) > 0 {
		return fmt.Errorf("connector: Options.Identity: %s required", strings.Join(missing, ", "))
	}
	return nil
}

// card returns the static Card of an Identity, before registrations.
func (id Identity) card() *protocol.Card {
	version := id.Version
	if version == "" {
		version = "1.0.0"
	}
	label := id.Label
	if label == "" {
		label = id.Name
	}
	mode := id.UserChannelMode
	if mode == "" {
		mode = protocol.UserChannelMultiple
	}
	c := &protocol.Card{
		Schema:          protocol.CardSchema,
		ProtocolVersion: protocol.ProtocolVersion,
		Build:           BuildInfo(),
		ConnectorCardID: id.CardID,
		Connector:       protocol.CardInfo{Name: id.Name, Version: version, Vendor: id.Vendor, Description: id.Description},
		Supports: protocol.Supports{
			UserChannelMode: mode,
			TargetTypes:     []protocol.TargetType{id.TargetType},
			Targets: []protocol.Target{{TargetType: id.TargetType, Provider: id.Provider, Label: label,
				Description: id.TargetDescription}},
			Profiles: append([]protocol.Profile(nil), id.Profiles...),
		},
		Security: &protocol.Security{TrustLevel: id.TrustLevel, DataClasses: append([]string(nil), id.DataClasses...)},
	}
	return c
}

// skillWithHeader returns the Skill to serve: md unchanged when it has
// front matter, else md behind a generated header naming the primary Skill.
func skillWithHeader(md []byte, cardID, description string) []byte {
	if len(bytes.TrimSpace(md)) == 0 {
		return md
	}
	if startsWithFrontMatter(md) {
		return md
	}
	desc := strings.Join(strings.Fields(description), " ")
	var b bytes.Buffer
	b.WriteString("---\nname: ")
	b.WriteString(protocol.PrimarySkillName(cardID))
	b.WriteString("\n")
	if desc != "" {
		fmt.Fprintf(&b, "description: %q\n", desc)
	}
	b.WriteString("---\n\n")
	b.Write(md)
	return b.Bytes()
}

// startsWithFrontMatter reports whether the first non-empty line of md is
// "---".
func startsWithFrontMatter(md []byte) bool {
	md = bytes.TrimPrefix(md, []byte("\xef\xbb\xbf"))
	for len(md) > 0 {
		line, rest, _ := bytes.Cut(md, []byte("\n"))
		if t := bytes.TrimSpace(line); len(t) > 0 {
			return string(t) == "---"
		}
		md = rest
	}
	return false
}
