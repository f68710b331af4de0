package feishu

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Login is the feishu_app_binding form.
type Login struct {
	AppID     string `json:"app_id" label:"App ID" input:"text" placeholder:"cli_..." help:"Feishu Open Platform → your self-built app → Credentials & Basic Info."`
	AppSecret string `json:"app_secret" label:"App Secret" secret:"true" input:"password" help:"The app's App Secret, from the same page."`
}

// binding is what a channel keeps: its app's credentials (the SDK seals
// it and redacts the secret everywhere).
type binding struct {
	AppID     string `json:"app_id"`
	AppSecret string `json:"app_secret" secret:"true"`
	// Name is how the Descriptor shows the app.
	Name string `json:"name"`
}

func (b binding) cred() cred { return cred{AppID: b.AppID, Secret: b.AppSecret} }

// appClient is a channel's client: its app.
type appClient struct {
	c   *Connector
	cr  cred
	bin binding
}

// Close forgets the app's cached tenant token.
func (cl *appClient) Close() error {
	cl.c.api.forget(cl.cr.AppID)
	return nil
}

var appIDPattern = regexp.MustCompile(`^cli_[A-Za-z0-9]{4,64}$`)

// signIn verifies the credentials with a fresh tenant token (§2) before
// the channel is authenticated.
func (c *Connector) signIn(ctx context.Context, _ *connector.Channel, in Login) (connector.Account[binding], error) {
	appID, secret := strings.TrimSpace(in.AppID), strings.TrimSpace(in.AppSecret)
	if !appIDPattern.MatchString(appID) {
		return connector.Account[binding]{}, protocol.Errorf(protocol.CodeInvalidAuthInput,
			"app_id must be a Feishu App ID such as cli_a1b2c3d4e5f6 (Credentials & Basic Info of the app)")
	}
	if secret == "" {
		return connector.Account[binding]{}, protocol.Errorf(protocol.CodeInvalidAuthInput, "app_secret must not be empty")
	}
	b := binding{AppID: appID, AppSecret: secret, Name: "Feishu app " + appID}
	if _, err := c.api.tenantToken(ctx, b.cred(), true); err != nil {
		return connector.Account[binding]{}, c.signInError(err)
	}
	// The token was just granted: the channel's client needs no check.
	return c.clients.With(account(b), &appClient{c: c, cr: b.cred(), bin: b}), nil
}

func account(b binding) connector.Account[binding] {
	return connector.Account[binding]{Binding: b, DisplayName: b.Name, AccountHint: connector.Hint(b.AppID)}
}

// signInError turns a failed token request into a secret-free error.
func (c *Connector) signInError(err error) error {
	c.log.Info("feishu: sign-in refused", "err", err)
	var ae *APIError
	if errors.As(err, &ae) && !ae.Temporary() && ae.Status == http.StatusOK {
		return protocol.Errorf(protocol.CodeInvalidAuthInput,
			"Feishu refused the app credentials (code %d: %s): check the App ID and App Secret of a self-built app", ae.Code, ae.Msg)
	}
	if errors.As(err, &ae) && ae.Temporary() {
		return &protocol.Error{Code: connector.CodeTargetUnreachable, Retryable: true,
			Message: fmt.Sprintf("Feishu cannot answer the token request now (HTTP %d code %d): try again later", ae.Status, ae.Code)}
	}
	if errors.As(err, &ae) {
		return &protocol.Error{Code: protocol.CodeConnectorChannelUnavailable,
			Message: fmt.Sprintf("Feishu answered the token request with HTTP %d code %d", ae.Status, ae.Code)}
	}
	return &protocol.Error{Code: connector.CodeTargetUnreachable, Retryable: true,
		Message: "the Feishu Open Platform cannot be reached (check the network and --feishu-api-url)"}
}

// newClient checks that the app still gets a tenant token: on restore,
// and on a QR sign-in (the form sign-in hands over the client it
// checked); refused credentials make a restored channel expired.
func (c *Connector) newClient(ctx context.Context, _ *connector.Channel, b binding, _ connector.ClientReason) (*appClient, error) {
	if _, err := c.api.tenantToken(ctx, b.cred(), false); err != nil {
		var ae *APIError
		if errors.As(err, &ae) && !ae.Temporary() && ae.Status == http.StatusOK {
			return nil, fmt.Errorf("feishu: app %s: %w", b.AppID, connector.ErrBindingExpired)
		}
		return nil, c.signInError(err)
	}
	return &appClient{c: c, cr: b.cred(), bin: b}, nil
}
