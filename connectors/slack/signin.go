package slack

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Login is the slack_app_binding form.
type Login struct {
	AppToken string `json:"app_token" label:"App-Level Token" secret:"true" input:"password" placeholder:"xapp-1-..." help:"Basic Information → App-Level Tokens: a token with the connections:write scope (Socket Mode must be on)."`
	BotToken string `json:"bot_token" label:"Bot User OAuth Token" secret:"true" input:"password" placeholder:"xoxb-..." help:"OAuth & Permissions → Bot User OAuth Token, after installing the app to the workspace."`
	Channel  string `json:"channel,omitempty" label:"Channel ID" placeholder:"C0123456789 (optional)" help:"The one channel (or DM) this connection serves, from the channel's details. Leave empty for every DM and mention reaching the bot."`
}

// binding is what a channel keeps after sign-in; the SDK seals it and
// redacts both tokens everywhere.
type binding struct {
	AppToken string `json:"app_token" secret:"true"`
	BotToken string `json:"bot_token" secret:"true"`
	// Channel is the one conversation served; "" serves every DM and
	// every mention of the bot.
	Channel   string `json:"channel,omitempty"`
	TeamID    string `json:"team_id"`
	Team      string `json:"team"`
	BotUserID string `json:"bot_user_id"`
	BotID     string `json:"bot_id"`
	BotName   string `json:"bot_name"`
	// Since is the sign-in time as a Slack ts: messages written before
	// it are history and are not published.
	Since string `json:"since"`
}

// chatClient is a channel's client: the Web API with its bot token.
type chatClient struct {
	api *slackapi.Client
	b   binding
}

var (
	channelPattern = regexp.MustCompile(`^[CGD][A-Z0-9]{6,20}$`)
	tokenChars     = regexp.MustCompile(`^[A-Za-z0-9-]{10,300}$`)
)

// tsOf renders a time as a Slack ts ("1700000000.000000").
func tsOf(t time.Time) string { return fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000) }

// signIn checks the bot token (auth.test), the app-level token
// (apps.connections.open, which Socket Mode needs) and, when given, that
// the bot can read the channel (conversations.history), then binds the
// channel. Every refusal is a secret-free *protocol.Error saying what to fix.
func (c *Connector) signIn(ctx context.Context, _ *connector.Channel, in Login) (connector.Account[binding], error) {
	var none connector.Account[binding]
	appToken, botToken := strings.TrimSpace(in.AppToken), strings.TrimSpace(in.BotToken)
	channel := strings.ToUpper(strings.TrimSpace(in.Channel))
	switch {
	case !strings.HasPrefix(botToken, "xoxb-") || !tokenChars.MatchString(botToken):
		return none, protocol.Errorf(protocol.CodeInvalidAuthInput,
			"bot_token is not a bot token: copy the Bot User OAuth Token (xoxb-…) from the app's OAuth & Permissions page")
	case !strings.HasPrefix(appToken, "xapp-") || !tokenChars.MatchString(appToken):
		return none, protocol.Errorf(protocol.CodeInvalidAuthInput,
			"app_token is not an app-level token: create one (xapp-…) with the connections:write scope under the app's Basic Information → App-Level Tokens")
	case channel != "" && !channelPattern.MatchString(channel):
		return none, protocol.Errorf(protocol.CodeInvalidAuthInput,
			"channel must be a Slack channel id such as C0123456789 (the channel's details show it), or empty for every DM and mention")
	}
	api := c.api(botToken, appToken)
	var at *slackapi.AuthTestResponse
	err := c.call(ctx, "auth.test", func(ctx context.Context) (err error) {
		at, err = api.AuthTestContext(ctx)
		return err
	})
	if err != nil {
		return none, c.signInError(err, map[string]string{
			"invalid_auth":           "Slack does not accept this bot token: copy the Bot User OAuth Token (xoxb-…) again, after (re)installing the app",
			"token_revoked":          "this bot token was revoked (the app was uninstalled or the token rotated): reinstall the app and copy the new Bot User OAuth Token",
			"account_inactive":       "the bot's account is deactivated: reinstall the app to the workspace",
			"not_allowed_token_type": "bot_token must be the Bot User OAuth Token (xoxb-…), not a user or app-level token",
		})
	}
	if at.BotID == "" {
		return none, protocol.Errorf(protocol.CodeInvalidAuthInput, "bot_token belongs to a user, not a bot: use the Bot User OAuth Token (xoxb-…)")
	}
	err = c.call(ctx, "apps.connections.open", func(ctx context.Context) error {
		_, _, err := api.StartSocketModeContext(ctx)
		return err
	})
	if err != nil {
		return none, c.signInError(err, map[string]string{
			"invalid_auth":           "Slack does not accept this app-level token: copy it again from Basic Information → App-Level Tokens",
			"token_revoked":          "this app-level token was revoked: generate a new one with the connections:write scope",
			"not_allowed_token_type": "app_token must be an app-level token (xapp-…) with the connections:write scope",
			"missing_scope":          "the app-level token lacks the connections:write scope: generate one with it",
			"not_authed":             "app_token is missing",
		})
	}
	if channel != "" {
		err = c.call(ctx, "conversations.history", func(ctx context.Context) error {
			_, err := api.GetConversationHistoryContext(ctx, &slackapi.GetConversationHistoryParameters{ChannelID: channel, Limit: 1})
			return err
		})
		if err != nil {
			return none, c.signInError(err, map[string]string{
				"channel_not_found": fmt.Sprintf("the bot cannot see channel %s: check the id, and invite the bot to a private channel (/invite @%s)", channel, at.User),
				"not_in_channel":    fmt.Sprintf("the bot is not a member of channel %s: invite it (/invite @%s)", channel, at.User),
				"missing_scope":     "the bot token lacks the history scope of this kind of channel (channels:history, groups:history, im:history or mpim:history): add it under OAuth & Permissions and reinstall the app",
			})
		}
	}
	b := binding{AppToken: appToken, BotToken: botToken, Channel: channel, TeamID: at.TeamID, Team: at.Team,
		BotUserID: at.UserID, BotID: at.BotID, BotName: at.User, Since: tsOf(time.Now())}
	hint := at.Team
	if channel != "" {
		hint = at.Team + " " + connector.Hint(channel)
	}
	acct := connector.Account[binding]{Binding: b, DisplayName: "@" + at.User + " (" + at.Team + ")", AccountHint: hint}
	// auth.test has just accepted the token: the channel's client needs
	// no second check.
	return c.clients.With(acct, &chatClient{api: api, b: b}), nil
}

// signInError turns a Web API failure of a sign-in into a secret-free
// *protocol.Error: the refusals in known say what to fix.
func (c *Connector) signInError(err error, known map[string]string) error {
	c.log.Info("slack: sign-in refused", "err", err)
	var ae *APIError
	switch {
	case known[codeOf(err)] != "":
		return protocol.Errorf(protocol.CodeInvalidAuthInput, "%s", known[codeOf(err)])
	case isTemporary(err):
		return &protocol.Error{Code: connector.CodeTargetUnreachable, Retryable: true,
			Message: "the Slack Web API cannot be reached or is busy now: try again later (check the network, --slack-api-url and --proxy)"}
	case errors.As(err, &ae):
		return &protocol.Error{Code: protocol.CodeInvalidAuthInput, Message: fmt.Sprintf("Slack refused %s: %s", ae.Method, ae.Error())}
	}
	return &protocol.Error{Code: connector.CodeTargetUnreachable, Retryable: true,
		Message: "the Slack Web API cannot be reached (check the network, --slack-api-url and --proxy)"}
}

// newClient is the channel's client. A sign-in hands over the client its
// auth.test checked; on restore it checks that the bot token still works:
// a token Slack refuses makes the restored channel revoked.
func (c *Connector) newClient(ctx context.Context, _ *connector.Channel, b binding, _ connector.ClientReason) (*chatClient, error) {
	api := c.api(b.BotToken, b.AppToken)
	err := c.call(ctx, "auth.test", func(ctx context.Context) error {
		_, err := api.AuthTestContext(ctx)
		return err
	})
	if isRevoked(err) {
		return nil, fmt.Errorf("slack: bot @%s: %w", b.BotName, connector.ErrRevoked)
	}
	if err != nil {
		return nil, c.signInError(err, nil)
	}
	return &chatClient{api: api, b: b}, nil
}
