package webchat

import (
	_ "embed"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Identity of the web chat connector.
const (
	// CardID is the connector_card_id of the web chat connector.
	CardID = "im.webchat"
	// Provider is its target provider.
	Provider = "webchat"
	// SkillName is its primary Skill.
	SkillName = "connector-im-webchat"
	// FlowQR is the QR sign-in flow: a browser opens the login URL and
	// confirms.
	FlowQR = "webchat_qr_login"
	// FlowRoom is the form sign-in flow that opens a room protected by an
	// access code.
	FlowRoom = "webchat_room"
	// ToolSend is the proactive message tool.
	ToolSend = "webchat_message_send"
	// ConnectorVersion is the Card's connector.version; raise it whenever
	// the tools, flows or Skill change.
	ConnectorVersion = "1.0.0"
)

// skillMD is the primary Skill, served at /skill.md.
//
//go:embed SKILL.md
var skillMD []byte

// Skill returns a copy of the connector's primary Skill (Markdown).
func Skill() []byte { return append([]byte(nil), skillMD...) }

// Card returns the web chat connector's static Card, before the SDK
// injects connector_channel_id into tool schemas and sets
// security.api_key_required. It returns a new value on each call.
func Card() *protocol.Card {
	return &protocol.Card{
		Schema:          protocol.CardSchema,
		ProtocolVersion: protocol.ProtocolVersion,
		Build:           connector.BuildInfo(),
		ConnectorCardID: CardID,
		Connector: protocol.CardInfo{
			Name:        "xconn Web Chat",
			Version:     ConnectorVersion,
			Vendor:      "xconn",
			Description: "A chat page in the browser: QR sign-in or rooms with an access code, text and files both ways, live streaming.",
		},
		Supports: protocol.Supports{
			UserChannelMode: protocol.UserChannelMultiple,
			TargetTypes:     []protocol.TargetType{protocol.TargetIM},
			Targets: []protocol.Target{{
				TargetType:  protocol.TargetIM,
				Provider:    Provider,
				Label:       "Web Chat",
				Description: "A web chat page served by the connector.",
			}},
			Profiles: []protocol.Profile{protocol.ProfileIMv2},
		},
		AuthFlows: []protocol.AuthFlow{
			{
				ID:          FlowQR,
				TargetType:  protocol.TargetIM,
				Type:        protocol.AuthFlowQRLogin,
				Title:       "Sign in a browser by QR code",
				Description: "Scan the QR code with a phone, or open its link, and press Confirm.",
			},
			{
				ID:          FlowRoom,
				TargetType:  protocol.TargetIM,
				Type:        protocol.AuthFlowForm,
				Title:       "Open a chat room",
				Description: "A room is reachable at /webchat/rooms/<room> by anyone who enters the access code.",
				Fields: []protocol.AuthField{
					{Name: "room", Label: "Room name", InputType: protocol.InputText, Required: true,
						Placeholder: "lobby", HelpText: "1 to 64 of a-z, 0-9, '-' and '_'."},
					{Name: "access_code", Label: "Access code", InputType: protocol.InputPassword, Required: true, Secret: true,
						HelpText: "People enter it to join the room. It is stored encrypted and never shown again."},
				},
			},
		},
		UI: &protocol.UI{LoginFlow: &protocol.LoginFlow{FlowID: FlowQR}},
		Security: &protocol.Security{
			TrustLevel:  protocol.TrustLocal,
			DataClasses: []string{"messages", "files"},
		},
	}
}
