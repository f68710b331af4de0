package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
)

// TestCard: the Card is the spec's example: id, target, profile, the
// telegram_bot_binding form with bot_token (password, secret) and chat_id
// (text), the tool and the Skill.
func TestCard(t *testing.T) {
	_, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	card, err := connectortest.FetchCard(t.Context(), cn.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	if card.ConnectorCardID != CardID || len(card.Supports.Targets) != 1 ||
		card.Supports.Targets[0].Provider != "telegram" || card.Supports.Targets[0].Label != "Telegram" ||
		len(card.Supports.TargetTypes) != 1 || card.Supports.TargetTypes[0] != protocol.TargetIM ||
		len(card.Supports.Profiles) != 1 || card.Supports.Profiles[0] != protocol.ProfileIMv2 {
		t.Fatalf("card identity: %+v", card.Supports)
	}
	if len(card.AuthFlows) != 1 {
		t.Fatalf("auth flows %+v", card.AuthFlows)
	}
	fl := card.AuthFlows[0]
	if fl.ID != FlowBot || fl.Type != "form" || fl.Title != "Bind a Telegram Bot" || len(fl.Fields) != 2 {
		t.Fatalf("flow %+v", fl)
	}
	tok, chat := fl.Fields[0], fl.Fields[1]
	if tok.Name != "bot_token" || tok.Label != "Bot Token" || tok.InputType != "password" || !tok.Secret || !tok.Required ||
		tok.Placeholder != "123456:ABC-DEF..." || tok.HelpText != "Create a bot with BotFather and enter its token." {
		t.Errorf("bot_token field %+v", tok)
	}
	if chat.Name != "chat_id" || chat.Label != "Chat ID" || chat.InputType != "text" || chat.Secret || !chat.Required ||
		chat.Placeholder != "For example, 123456789" || chat.HelpText != "Start a conversation with the bot, then enter the target chat_id." {
		t.Errorf("chat_id field %+v", chat)
	}
	if len(card.Tools) != 1 || card.Tools[0].ToolID != ToolSend || card.Tools[0].Profile != protocol.ProfileIMv2 ||
		len(card.Tools[0].RelatedSkillIDs) != 1 || card.Tools[0].RelatedSkillIDs[0] != SkillName {
		t.Fatalf("tools %+v", card.Tools)
	}
	var schema struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	json.Unmarshal(card.Tools[0].InputSchema, &schema)
	if !strings.Contains(string(schema.Properties["file"]), protocol.FormatUploadRef) || !strings.Contains(strings.Join(schema.Required, ","), "text") {
		t.Errorf("tool schema %s", card.Tools[0].InputSchema)
	}
}

// TestSignIn: a good token and chat authenticate the channel, and the
// Descriptor shows the bot's name and a redacted chat hint, never the
// token.
func TestSignIn(t *testing.T) {
	_, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	_, st := cl.SignIn(FlowBot, login)
	if st.Status != protocol.AuthAuthenticated || st.ConnectionDescriptor == nil {
		t.Fatalf("state %+v", st)
	}
	d := st.ConnectionDescriptor
	if d.Target.DisplayName != "@xconn_test_bot" || d.Target.AccountHint != "4***2" || d.Target.Provider != Provider {
		t.Fatalf("target %+v", d.Target)
	}
	if d.Connection.Status != protocol.StatusConnected {
		t.Fatalf("status %s", d.Connection.Status)
	}
	for _, frame := range cl.Transcript() {
		if strings.Contains(frame, testToken) || strings.Contains(frame, "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw") {
			t.Fatalf("token in a frame: %s", frame)
		}
	}
}

// TestSignInRefused: a bad token, an unknown chat, a malformed chat id,
// a bot with a webhook and a revoked token fail with a message that says
// what to fix and holds no token.
func TestSignInRefused(t *testing.T) {
	f, api := newFake(t)
	const hooked = "222:webhook-bot-token-abcdefghijklmnop"
	f.AddBot(hooked, telegramtestBot(222, "hooked_bot"))
	f.SetWebhook(hooked, "https://example.com/hook/s3cr3t")
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	for _, tc := range []struct {
		name  string
		input map[string]string
		want  string
	}{
		{"bad token", map[string]string{"bot_token": "999:not-a-real-token-at-all-xyz", "chat_id": "424242"}, "Telegram does not accept this bot token"},
		{"unknown chat", map[string]string{"bot_token": testToken, "chat_id": "777"}, "cannot reach chat 777"},
		{"malformed chat", map[string]string{"bot_token": testToken, "chat_id": "alice"}, "chat_id must be a number"},
		{"webhook set", map[string]string{"bot_token": hooked, "chat_id": "424242"}, "has a webhook set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			open, err := cl.Open(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			st, err := cl.SignInForm(ctx, open.ConnectorChannelID, FlowBot, tc.input)
			if err == nil {
				t.Fatalf("signed in: %+v", st)
			}
			msg := err.Error()
			var se *connectortest.SignInError
			if errors.As(err, &se) {
				msg = se.State.Message
			}
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("error %q, want %q", msg, tc.want)
			}
			if strings.Contains(msg, tc.input["bot_token"]) || strings.Contains(msg, "s3cr3t") {
				t.Fatalf("secret in %q", msg)
			}
		})
	}
}
