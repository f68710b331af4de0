package sdkfixture

import (
	"github.com/xconn/xconn/protocol"
)

// Fixture identifiers.
const (
	FixtureCardID   = "test.fixture"
	FlowTokenForm   = "token_form"
	FlowQR          = "qr"
	ToolEcho        = "fixture_echo"
	ToolSend        = "fixture_send"
	ToolSlow        = "fixture_slow"
	ToolBlock       = "fixture_block"
	ToolPanic       = "fixture_panic"
	ToolLeakError   = "fixture_leak_error"
	ToolLeakResult  = "fixture_leak_result"
	ToolProgress    = "fixture_progress"
	ToolWhoAmI      = "fixture_whoami"
	ToolSum         = "fixture_sum"
	ToolArgs        = "fixture_args"
	ToolReadFile    = "fixture_read_file"
	ToolIMv2Only    = "fixture_im_v2_only"
	BadToken        = "bad-token-value"
	FixtureSkillMD  = "---\nname: connector-test-fixture\ndescription: Test fixture connector.\n---\n\n# Fixture\n\nUse fixture_echo to echo text.\n"
	fixtureBuildTag = "v0.0.1"
)

// FixtureCard returns the fixture's static Card for the given Profiles
// (default xagent.im.v2). Tools come from AddTool at start.
func FixtureCard(profiles ...protocol.Profile) *protocol.Card {
	if len(profiles) == 0 {
		profiles = []protocol.Profile{protocol.ProfileIMv2}
	}
	return &protocol.Card{
		Schema:          protocol.CardSchema,
		ProtocolVersion: protocol.ProtocolVersion,
		Build:           protocol.Build{Version: "0.0.1", GitTag: fixtureBuildTag, GitRev: "abc1234", BuildTime: "2612021200"},
		ConnectorCardID: FixtureCardID,
		Connector:       protocol.CardInfo{Name: "Fixture", Version: "0.0.1", Vendor: "xconn", Description: "In-process test connector"},
		Supports: protocol.Supports{
			UserChannelMode: protocol.UserChannelMultiple,
			TargetTypes:     []protocol.TargetType{protocol.TargetIM},
			Targets:         []protocol.Target{{TargetType: protocol.TargetIM, Provider: "fixture", Label: "Fixture"}},
			Profiles:        profiles,
		},
		AuthFlows: []protocol.AuthFlow{
			{ID: FlowTokenForm, TargetType: protocol.TargetIM, Type: protocol.AuthFlowForm, Title: "Token",
				Fields: []protocol.AuthField{
					{Name: "token", Label: "Token", InputType: protocol.InputPassword, Required: true, Secret: true},
					{Name: "name", Label: "Display name", InputType: protocol.InputText},
				}},
			{ID: FlowQR, TargetType: protocol.TargetIM, Type: protocol.AuthFlowQRLogin, Title: "Scan"},
		},
		Security: &protocol.Security{TrustLevel: protocol.TrustLocal},
	}
}
