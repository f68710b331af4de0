package dingtalk

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Login is the dingtalk_app_binding form.
type Login struct {
	ClientID     string `json:"client_id" label:"Client ID (AppKey)" input:"text" placeholder:"ding..." help:"DingTalk developer console → your app → Credentials & Basic Info (凭证与基础信息): Client ID, formerly AppKey."`
	ClientSecret string `json:"client_secret" label:"Client Secret (AppSecret)" secret:"true" input:"password" help:"The app's Client Secret, from the same page."`
	RobotCode    string `json:"robot_code,omitempty" label:"Robot code" input:"text" help:"Optional: the robot's RobotCode (robot configuration page); leave empty when it is the Client ID, as for an internal app's robot."`
}

// binding is what a channel keeps: its app's credentials (the SDK seals
// it and redacts the secret everywhere).
type binding struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret" secret:"true"`
	RobotCode    string `json:"robot_code"`
	// Name is how the Descriptor shows the app.
	Name string `json:"name"`
}

func (b binding) cred() cred {
	return cred{ClientID: b.ClientID, Secret: b.ClientSecret, RobotCode: b.RobotCode}
}

// appClient is a channel's client: its app.
type appClient struct {
	c   *Connector
	cr  cred
	bin binding
}

// Close forgets the app's cached access token.
func (cl *appClient) Close() error {
	cl.c.api.forget(cl.cr.ClientID)
	return nil
}

// idPattern is a Client ID or robot code: DingTalk's are "ding" and
// letters and digits; suite keys of third-party apps "suite...".
var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{6,128}$`)

// signIn verifies the credentials with a fresh access token (§2) before
// the channel is authenticated.
func (c *Connector) signIn(ctx context.Context, _ *connector.Channel, in Login) (connector.Account[binding], error) {
	id, secret, robot := strings.TrimSpace(in.ClientID), strings.TrimSpace(in.ClientSecret), strings.TrimSpace(in.RobotCode)
	if !idPattern.MatchString(id) {
		return connector.Account[binding]{}, protocol.Errorf(protocol.CodeInvalidAuthInput,
			"client_id must be a DingTalk Client ID (AppKey) such as dingxxxxxxxxxxxxxxxx (Credentials & Basic Info of the app)")
	}
	if secret == "" {
		return connector.Account[binding]{}, protocol.Errorf(protocol.CodeInvalidAuthInput, "client_secret must not be empty")
	}
	if robot == "" {
		robot = id
	} else if !idPattern.MatchString(robot) {
		return connector.Account[binding]{}, protocol.Errorf(protocol.CodeInvalidAuthInput,
			"robot_code must be the robot's RobotCode (letters and digits), or empty for the Client ID")
	}
	b := binding{ClientID: id, ClientSecret: secret, RobotCode: robot, Name: "DingTalk app " + id}
	if _, err := c.api.accessToken(ctx, b.cred(), true); err != nil {
		return connector.Account[binding]{}, c.signInError(err)
	}
	// The token was just granted: the channel's client needs no check.
	return c.clients.With(account(b), &appClient{c: c, cr: b.cred(), bin: b}), nil
}

func account(b binding) connector.Account[binding] {
	return connector.Account[binding]{Binding: b, DisplayName: b.Name, AccountHint: connector.Hint(b.ClientID)}
}

// refused reports an access token request DingTalk answered with a
// client error: the credentials are wrong (§2; the code itself is not
// documented, so the status decides).
func refused(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && !ae.Temporary() && ae.Status >= 400 && ae.Status < 500
}

// signInError turns a failed token request into a secret-free error.
func (c *Connector) signInError(err error) error {
	c.log.Info("dingtalk: sign-in refused", "err", err)
	var ae *APIError
	switch {
	case refused(err) && errors.As(err, &ae):
		return protocol.Errorf(protocol.CodeInvalidAuthInput,
			"DingTalk refused the app credentials (HTTP %d %s): check the Client ID and Client Secret", ae.Status, ae.Code)
	case errors.As(err, &ae) && ae.Temporary():
		return &protocol.Error{Code: connector.CodeTargetUnreachable, Retryable: true,
			Message: fmt.Sprintf("DingTalk cannot answer the token request now (HTTP %d %s): try again later", ae.Status, ae.Code)}
	case errors.As(err, &ae):
		return &protocol.Error{Code: protocol.CodeConnectorChannelUnavailable,
			Message: fmt.Sprintf("DingTalk answered the token request with HTTP %d %s", ae.Status, ae.Code)}
	}
	return &protocol.Error{Code: connector.CodeTargetUnreachable, Retryable: true,
		Message: "the DingTalk Open Platform cannot be reached (check the network, --proxy and --dingtalk-api-url)"}
}

// newClient checks that the app still gets an access token, on restore;
// refused credentials make a restored channel expired.
func (c *Connector) newClient(ctx context.Context, _ *connector.Channel, b binding, _ connector.ClientReason) (*appClient, error) {
	if _, err := c.api.accessToken(ctx, b.cred(), false); err != nil {
		if refused(err) {
			return nil, fmt.Errorf("dingtalk: app %s: %w", b.ClientID, connector.ErrBindingExpired)
		}
		return nil, c.signInError(err)
	}
	return &appClient{c: c, cr: b.cred(), bin: b}, nil
}
