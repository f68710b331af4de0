package telegram

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Login is the telegram_bot_binding form, field for field the spec's
// example (§4.1).
type Login struct {
	BotToken string `json:"bot_token" label:"Bot Token" secret:"true" input:"password" placeholder:"123456:ABC-DEF..." help:"Create a bot with BotFather and enter its token."`
	ChatID   string `json:"chat_id" label:"Chat ID" input:"text" placeholder:"For example, 123456789" help:"Start a conversation with the bot, then enter the target chat_id."`
}

// binding is what a channel keeps after sign-in; the SDK seals it and
// redacts Token everywhere.
type binding struct {
	Token   string `json:"token" secret:"true"`
	ChatID  int64  `json:"chat_id"`
	BotID   int64  `json:"bot_id"`
	BotName string `json:"bot_name"`
	// Since is the sign-in time (Unix seconds): messages written before it
	// are history and are not published.
	Since int64 `json:"since"`
}

// chatClient is a channel's client: its bot token and chat.
type chatClient struct {
	c      *Connector
	token  string
	chatID int64
}

// Close drops the shared transport's idle connections (the SDK closes
// clients last when the server closes).
func (cl *chatClient) Close() error {
	cl.c.api.hc.CloseIdleConnections()
	return nil
}

var chatIDPattern = regexp.MustCompile(`^(-?[0-9]{1,20}|@[A-Za-z][A-Za-z0-9_]{3,31})$`)

// signIn checks the token (getMe), that no webhook takes the updates
// (getWebhookInfo) and the chat (getChat), then binds the channel. Every
// refusal is a secret-free *protocol.Error saying what to fix.
func (c *Connector) signIn(ctx context.Context, _ *connector.Channel, in Login) (connector.Account[binding], error) {
	token := strings.TrimSpace(in.BotToken)
	chatID := strings.TrimSpace(in.ChatID)
	if !chatIDPattern.MatchString(chatID) {
		return connector.Account[binding]{}, protocol.Errorf(protocol.CodeInvalidAuthInput,
			"chat_id must be a number such as 123456789 (or -100… for a group), or a channel's @username")
	}
	if token == "" || strings.ContainsAny(token, "/?#% \t\r\n") {
		return connector.Account[binding]{}, protocol.Errorf(protocol.CodeInvalidAuthInput,
			"bot_token is not a Bot API token: copy it from BotFather (it looks like 123456:ABC-DEF...)")
	}
	var me User
	if err := c.api.call(ctx, token, "getMe", struct{}{}, &me); err != nil {
		return connector.Account[binding]{}, c.signInError(err, "Telegram does not accept this bot token: copy it again from BotFather (/mybots → API Token)")
	}
	var wh WebhookInfo
	if err := c.api.call(ctx, token, "getWebhookInfo", struct{}{}, &wh); err != nil {
		return connector.Account[binding]{}, c.signInError(err, "")
	}
	if wh.URL != "" {
		return connector.Account[binding]{}, protocol.Errorf(protocol.CodeInvalidAuthInput,
			"bot @%s has a webhook set, and Telegram delivers a bot's updates either to a webhook or by polling, never both: "+
				"remove the webhook (Bot API deleteWebhook) if this connector should serve the bot", me.Username)
	}
	var chat Chat
	if err := c.api.call(ctx, token, "getChat", map[string]string{"chat_id": chatID}, &chat); err != nil {
		var ae *APIError
		if errors.As(err, &ae) && ae.Code == 400 {
			return connector.Account[binding]{}, protocol.Errorf(protocol.CodeInvalidAuthInput,
				"bot @%s cannot reach chat %s (%s): send the bot a message (or add it to the group) first, then use that chat's id",
				me.Username, chatID, ae.Description)
		}
		return connector.Account[binding]{}, c.signInError(err, "")
	}
	name := me.FirstName
	if me.Username != "" {
		name = "@" + me.Username
	}
	acct := connector.Account[binding]{
		Binding:     binding{Token: token, ChatID: chat.ID, BotID: me.ID, BotName: name, Since: time.Now().Unix()},
		DisplayName: name,
		AccountHint: connector.Hint(strconv.FormatInt(chat.ID, 10)),
	}
	// getMe has just accepted the token: the channel's client needs no
	// second check.
	return c.clients.With(acct, &chatClient{c: c, token: token, chatID: chat.ID}), nil
}

// signInError turns a Bot API failure of a sign-in into a secret-free
// *protocol.Error; unauthorized names what to do.
func (c *Connector) signInError(err error, unauthorized string) error {
	c.log.Info("telegram: sign-in refused", "err", err)
	var ae *APIError
	switch {
	case isUnauthorized(err) && unauthorized != "":
		return protocol.Errorf(protocol.CodeInvalidAuthInput, "%s", unauthorized)
	case errors.As(err, &ae) && ae.Temporary():
		return &protocol.Error{Code: connector.CodeTargetUnreachable, Retryable: true,
			Message: fmt.Sprintf("the Telegram Bot API cannot serve %s now (%d %s): try again later", ae.Method, ae.Code, ae.Description)}
	case errors.As(err, &ae):
		return &protocol.Error{Code: protocol.CodeConnectorChannelUnavailable,
			Message: fmt.Sprintf("the Telegram Bot API refused %s: %d %s", ae.Method, ae.Code, ae.Description)}
	}
	return &protocol.Error{Code: connector.CodeTargetUnreachable, Retryable: true,
		Message: "the Telegram Bot API cannot be reached (check the network, --telegram-api-url and --telegram-proxy)"}
}

// newClient is the channel's client. A sign-in hands over the client its
// getMe checked; on restore it checks that the token still works (getMe):
// a token Telegram refuses makes the restored channel expired.
func (c *Connector) newClient(ctx context.Context, _ *connector.Channel, b binding, _ connector.ClientReason) (*chatClient, error) {
	var me User
	if err := c.api.call(ctx, b.Token, "getMe", struct{}{}, &me); err != nil {
		if isUnauthorized(err) {
			return nil, fmt.Errorf("telegram: bot %s: %w", b.BotName, connector.ErrBindingExpired)
		}
		return nil, c.signInError(err, "")
	}
	return &chatClient{c: c, token: b.Token, chatID: b.ChatID}, nil
}
