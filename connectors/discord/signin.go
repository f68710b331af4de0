package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Login is the discord_bot_binding form.
type Login struct {
	BotToken  string `json:"bot_token" label:"Bot Token" secret:"true" input:"password" placeholder:"MTIz...abc" help:"Developer Portal → your application → Bot → Reset Token; enable the Message Content intent on the same page."`
	ChannelID string `json:"channel_id" label:"Channel ID" input:"text" placeholder:"For example, 1100000000000000001" help:"Turn on Developer Mode (User Settings → Advanced), then right-click the channel (or DM) → Copy Channel ID."`
}

// binding is what a channel keeps after sign-in; the SDK seals it and
// redacts Token everywhere.
type binding struct {
	Token       string `json:"token" secret:"true"`
	ChannelID   string `json:"channel_id"`
	GuildID     string `json:"guild_id,omitempty"`
	ChannelName string `json:"channel_name,omitempty"`
	BotID       string `json:"bot_id"`
	BotName     string `json:"bot_name"`
	// Since is a snowflake of the sign-in time: messages before it are
	// history and are not published.
	Since string `json:"since"`
}

// chatClient is a channel's REST client: a discordgo session (its rate
// limit buckets) for the channel's bot and channel.
type chatClient struct {
	c         *Connector
	s         *discordgo.Session
	channelID string
	botID     string
}

// Close drops the shared transport's idle connections.
func (cl *chatClient) Close() error {
	cl.c.api.hc.CloseIdleConnections()
	return nil
}

var (
	snowflakePattern = regexp.MustCompile(`^[0-9]{15,21}$`)
	// A bot token is three base64url parts joined by dots.
	tokenPattern = regexp.MustCompile(`^[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+$`)
)

// discordEpoch is the first millisecond of 2015, the origin of snowflakes.
const discordEpoch = 1420070400000

// snowflakeAt is the smallest snowflake of time t.
func snowflakeAt(t time.Time) string {
	return strconv.FormatInt((t.UnixMilli()-discordEpoch)<<22, 10)
}

// idLess compares two snowflakes.
func idLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// Sign-in messages naming what to fix.
const (
	msgBadToken = "Discord does not accept this bot token: copy it again from the Developer Portal (your application → Bot → Reset Token)"
	msgIntent   = "Discord refused the Message Content intent (Gateway close 4014, disallowed intents): in the Developer Portal open your application → Bot → " +
		"Privileged Gateway Intents, switch on MESSAGE CONTENT INTENT, save, then sign in again (a bot in 100 or more servers needs Discord's approval for it)"
)

// signIn checks the token (GET users/@me), the channel (GET
// channels/{id}) and the Gateway with the connector's intents (IDENTIFY:
// 4014 when Message Content is not enabled), then binds the channel.
// Every refusal is a secret-free *protocol.Error saying what to fix.
func (c *Connector) signIn(ctx context.Context, _ *connector.Channel, in Login) (connector.Account[binding], error) {
	token := strings.TrimPrefix(strings.TrimSpace(in.BotToken), "Bot ")
	channelID := strings.TrimSpace(in.ChannelID)
	var none connector.Account[binding]
	if !snowflakePattern.MatchString(channelID) {
		return none, protocol.Errorf(protocol.CodeInvalidAuthInput,
			"channel_id must be a Discord channel id, a number of 17 to 20 digits (Developer Mode → right-click the channel → Copy Channel ID)")
	}
	if !tokenPattern.MatchString(token) {
		return none, protocol.Errorf(protocol.CodeInvalidAuthInput,
			"bot_token is not a Discord bot token: copy it from the Developer Portal (your application → Bot → Reset Token)")
	}
	s := c.api.session(token)
	var me *discordgo.User
	err := c.api.call(ctx, "GET users/@me", func(o discordgo.RequestOption) (err error) { me, err = s.User("@me", o); return })
	if err != nil {
		return none, c.signInError(err, msgBadToken)
	}
	if !me.Bot {
		return none, protocol.Errorf(protocol.CodeInvalidAuthInput, "this token belongs to a user account, not a bot: use the token of a bot (Developer Portal → Bot)")
	}
	var dc *discordgo.Channel
	err = c.api.call(ctx, "GET channels/{id}", func(o discordgo.RequestOption) (err error) { dc, err = s.Channel(channelID, o); return })
	if err != nil {
		var ae *APIError
		if errors.As(err, &ae) && (ae.Status == http.StatusNotFound || ae.Status == http.StatusForbidden) {
			return none, protocol.Errorf(protocol.CodeInvalidAuthInput,
				"bot %s cannot see channel %s (%s): invite the bot to the server with the View Channels, Send Messages, Read Message History and Attach Files permissions, "+
					"or, for a DM, write to the bot first and use that DM's channel id", me.Username, channelID, ae.Message)
		}
		return none, c.signInError(err, msgBadToken)
	}
	switch dc.Type {
	case discordgo.ChannelTypeGuildText, discordgo.ChannelTypeDM, discordgo.ChannelTypeGroupDM, discordgo.ChannelTypeGuildNews,
		discordgo.ChannelTypeGuildPublicThread, discordgo.ChannelTypeGuildPrivateThread, discordgo.ChannelTypeGuildNewsThread:
	default:
		return none, protocol.Errorf(protocol.CodeInvalidAuthInput,
			"channel %s is not a text channel, thread or DM (type %d): bind a channel people write in", channelID, dc.Type)
	}
	if err := c.probeGateway(ctx, token); err != nil {
		return none, err
	}
	name := "@" + me.Username
	acct := connector.Account[binding]{
		Binding: binding{Token: token, ChannelID: dc.ID, GuildID: dc.GuildID, ChannelName: dc.Name, BotID: me.ID, BotName: name,
			Since: snowflakeAt(time.Now())},
		DisplayName: name,
		AccountHint: connector.Hint(dc.ID),
	}
	return c.clients.With(acct, &chatClient{c: c, s: s, channelID: dc.ID, botID: me.ID}), nil
}

// probeGateway connects to the Gateway once with the connector's intents,
// unless a connection of this token already runs: Discord refuses a
// privileged intent that is not enabled only there (close 4014).
func (c *Connector) probeGateway(ctx context.Context, token string) error {
	for _, mb := range c.bots.Members(token).Channels() {
		if mb.Channel.Status() == protocol.StatusConnected {
			return nil
		}
	}
	s := c.api.session(token)
	g := newGatewayConn(s, c.openTimeout)
	err := g.open(ctx)
	if err == nil {
		g.close()
		return nil
	}
	return c.gatewayError(err)
}

// gatewayError turns a failed Gateway connect of a sign-in into a
// secret-free *protocol.Error.
func (c *Connector) gatewayError(err error) error {
	c.log.Info("discord: sign-in refused by the Gateway", "err", err)
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		switch ce.Code {
		case closeDisallowedIntents:
			return protocol.Errorf(protocol.CodeInvalidAuthInput, "%s", msgIntent)
		case closeAuthenticationFailed:
			return protocol.Errorf(protocol.CodeInvalidAuthInput, "%s", msgBadToken)
		case closeInvalidIntents, closeInvalidAPIVersion, closeShardingRequired, closeInvalidShard:
			return &protocol.Error{Code: protocol.CodeConnectorChannelUnavailable,
				Message: fmt.Sprintf("the Discord Gateway refused the connection (close %d %s)", ce.Code, ce.Text)}
		}
	}
	return &protocol.Error{Code: connector.CodeTargetUnreachable, Retryable: true,
		Message: "the Discord Gateway cannot be reached (check the network, --discord-gateway-url and --proxy)"}
}

// signInError turns a REST failure of a sign-in into a secret-free
// *protocol.Error; unauthorized names what to do.
func (c *Connector) signInError(err error, unauthorized string) error {
	c.log.Info("discord: sign-in refused", "err", err)
	var ae *APIError
	switch {
	case isUnauthorized(err):
		return protocol.Errorf(protocol.CodeInvalidAuthInput, "%s", unauthorized)
	case errors.As(err, &ae) && ae.Temporary():
		return &protocol.Error{Code: connector.CodeTargetUnreachable, Retryable: true,
			Message: fmt.Sprintf("Discord cannot serve %s now (%d %s): try again later", ae.Op, ae.Status, ae.Message)}
	case errors.As(err, &ae):
		return &protocol.Error{Code: protocol.CodeConnectorChannelUnavailable,
			Message: fmt.Sprintf("Discord refused %s: %d %s", ae.Op, ae.Status, ae.Message)}
	case connector.IsTemporary(err):
		return &protocol.Error{Code: connector.CodeTargetUnreachable, Retryable: true, Message: "Discord rate-limits the sign-in: try again later"}
	}
	return &protocol.Error{Code: connector.CodeTargetUnreachable, Retryable: true,
		Message: "the Discord API cannot be reached (check the network, --discord-api-url and --proxy)"}
}

// newClient is the channel's client. A sign-in hands over the one it
// checked; on restore it checks that the token still works (GET
// users/@me): a token Discord refuses makes the restored channel expired.
func (c *Connector) newClient(ctx context.Context, _ *connector.Channel, b binding, _ connector.ClientReason) (*chatClient, error) {
	s := c.api.session(b.Token)
	err := c.api.call(ctx, "GET users/@me", func(o discordgo.RequestOption) error { _, err := s.User("@me", o); return err })
	if err != nil {
		if isUnauthorized(err) {
			return nil, fmt.Errorf("discord: bot %s: %w", b.BotName, connector.ErrBindingExpired)
		}
		return nil, c.signInError(err, "")
	}
	return &chatClient{c: c, s: s, channelID: b.ChannelID, botID: b.BotID}, nil
}
