package wecom

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/wecom/internal/wxcrypt"
	"github.com/xconn/xconn/protocol"
)

// Binding modes.
const (
	modeApp = "app"
	modeBot = "bot"
)

// AppLogin is the wecom_app_binding form: a self-built application and
// its API message receiving (接收消息) settings.
type AppLogin struct {
	CorpID         string `json:"corp_id" label:"Corp ID" input:"text" placeholder:"ww..." help:"WeCom admin console → My Company (我的企业) → Company Info: Corp ID (企业ID)."`
	AgentID        int    `json:"agent_id" label:"AgentId" input:"text" placeholder:"1000002" help:"Apps (应用管理) → your self-built application: AgentId."`
	Secret         string `json:"secret" label:"Secret" secret:"true" input:"password" help:"The application's Secret, from the same page (viewed in the WeCom app)."`
	Token          string `json:"token" label:"Token" secret:"true" input:"password" help:"The application → Receive Messages (接收消息) → Set API Receiving: Token."`
	EncodingAESKey string `json:"encoding_aes_key" label:"EncodingAESKey" secret:"true" input:"password" help:"From the same page: the 43-character EncodingAESKey."`
}

// binding is what a channel keeps (the SDK seals it and redacts its
// secrets everywhere): an application's or a robot's credentials.
type binding struct {
	Mode string `json:"mode"`
	// Application (modeApp).
	CorpID         string `json:"corp_id,omitempty"`
	AgentID        int    `json:"agent_id,omitempty"`
	Secret         string `json:"secret" secret:"true"`
	Token          string `json:"token,omitempty" secret:"true"`
	EncodingAESKey string `json:"encoding_aes_key,omitempty" secret:"true"`
	// Robot (modeBot).
	BotID string `json:"bot_id,omitempty"`
	// Name is how the Descriptor shows the account.
	Name string `json:"name"`
}

// key is the consumer key: corp_id/agent_id, or the bot_id.
func (b binding) key() string {
	if b.Mode == modeBot {
		return "bot:" + b.BotID
	}
	return appKey(b.CorpID, b.AgentID)
}

func appKey(corpID string, agentID int) string { return corpID + "/" + strconv.Itoa(agentID) }

func (b binding) cred() cred { return cred{CorpID: b.CorpID, Secret: b.Secret} }

// client is a channel's client: its application (with the callback's
// crypter) or its robot.
type client struct {
	c     *Connector
	bin   binding
	crypt *wxcrypt.Crypter // modeApp
}

// Close forgets the application's cached access token.
func (cl *client) Close() error {
	if cl.bin.Mode == modeApp {
		cl.c.api.forget(cl.bin.cred())
	}
	return nil
}

var corpIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{4,64}$`)

// signInApp checks the form, then the credentials with a fresh access
// token, before the channel is authenticated.
func (c *Connector) signInApp(ctx context.Context, _ *connector.Channel, in AppLogin) (connector.Account[binding], error) {
	b := binding{Mode: modeApp, CorpID: strings.TrimSpace(in.CorpID), AgentID: in.AgentID, Secret: strings.TrimSpace(in.Secret),
		Token: strings.TrimSpace(in.Token), EncodingAESKey: strings.TrimSpace(in.EncodingAESKey)}
	switch {
	case !corpIDPattern.MatchString(b.CorpID):
		return connector.Account[binding]{}, invalid("corp_id must be the Corp ID of My Company → Company Info (such as ww1234567890abcdef)")
	case b.AgentID <= 0:
		return connector.Account[binding]{}, invalid("agent_id must be the application's AgentId, a positive number such as 1000002")
	case b.Secret == "":
		return connector.Account[binding]{}, invalid("secret must not be empty")
	case b.Token == "":
		return connector.Account[binding]{}, invalid("token must be the Token of the application's API message receiving")
	}
	crypt, err := wxcrypt.New(b.Token, b.EncodingAESKey, b.CorpID)
	if err != nil {
		return connector.Account[binding]{}, invalid("encoding_aes_key must be the 43-character EncodingAESKey of the application's API message receiving")
	}
	b.Name = fmt.Sprintf("WeCom application %d of %s", b.AgentID, b.CorpID)
	if _, err := c.api.token(ctx, b.cred(), true); err != nil {
		return connector.Account[binding]{}, c.signInError(err)
	}
	return c.clients.With(account(b), &client{c: c, bin: b, crypt: crypt}), nil
}

func invalid(msg string) error { return protocol.Errorf(protocol.CodeInvalidAuthInput, "%s", msg) }

func account(b binding) connector.Account[binding] {
	hint := connector.Hint(b.CorpID)
	if b.Mode == modeBot {
		hint = connector.Hint(b.BotID)
	}
	return connector.Account[binding]{Binding: b, DisplayName: b.Name, AccountHint: hint}
}

// signInError turns a failed token request into a secret-free error.
func (c *Connector) signInError(err error) error {
	c.log.Info("wecom: sign-in refused", "err", err)
	var ae *APIError
	switch {
	case errors.As(err, &ae) && ae.Code == codeIPNotAllowed:
		return &protocol.Error{Code: protocol.CodeInvalidAuthInput,
			Message: "WeCom refused the connector's IP address (errcode 60020): add it to the application's trusted IPs (企业可信IP), or use --proxy"}
	case errors.As(err, &ae) && !ae.Temporary():
		return protocol.Errorf(protocol.CodeInvalidAuthInput,
			"WeCom refused the application credentials (errcode %d: %s): check the Corp ID and the application's Secret", ae.Code, ae.Msg)
	case errors.As(err, &ae):
		return &protocol.Error{Code: connector.CodeTargetUnreachable, Retryable: true,
			Message: fmt.Sprintf("WeCom cannot answer the token request now (errcode %d): try again later", ae.Code)}
	}
	return &protocol.Error{Code: connector.CodeTargetUnreachable, Retryable: true,
		Message: "the WeCom server API cannot be reached (check the network, --wecom-api-url and --proxy)"}
}

// newClient rebuilds a restored channel's client: an application's
// credentials must still get an access token (refused ones make the
// channel expired).
func (c *Connector) newClient(ctx context.Context, _ *connector.Channel, b binding, _ connector.ClientReason) (*client, error) {
	switch b.Mode {
	case modeApp:
		crypt, err := wxcrypt.New(b.Token, b.EncodingAESKey, b.CorpID)
		if err != nil {
			return nil, fmt.Errorf("wecom: application %s: %w", b.key(), connector.ErrBindingExpired)
		}
		if _, err := c.api.token(ctx, b.cred(), false); err != nil {
			var ae *APIError
			if errors.As(err, &ae) && !ae.Temporary() && ae.Code != codeIPNotAllowed {
				return nil, fmt.Errorf("wecom: application %s: %w", b.key(), connector.ErrBindingExpired)
			}
			return nil, c.signInError(err)
		}
		return &client{c: c, bin: b, crypt: crypt}, nil
	case modeBot:
		// The robot's long connection checks its secret (bot.go).
		return &client{c: c, bin: b}, nil
	}
	return nil, fmt.Errorf("wecom: binding mode %q: %w", b.Mode, connector.ErrBindingExpired)
}
