package feishu

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// The QR one-click app registration (feishu_qr_create_app, fact sheet
// §2.1): a device-code style begin/poll at the accounts host. Issue
// begins a registration and returns its verification URL, with the app's
// name, scopes and event in "addons", as the QR text; the user scans it
// with the Feishu app and confirms the new bot app; Poll asks the
// accounts host, and once it hands out client_id and client_secret (the
// App ID and App Secret) verifies them with a tenant token and binds them
// as feishu_app_binding does.

// Settings of the registered app (§2.1; the scopes and event are the
// reference's, which the connector needs: direct and @-group messages,
// sending as the bot, and resources both ways).
var (
	// RegistrationScopes are the tenant scopes asked for the new app.
	RegistrationScopes = []string{"im:message.p2p_msg:readonly", "im:message.group_at_msg:readonly", "im:message:send_as_bot", "im:resource"}
	// RegistrationEvents are the tenant events subscribed for it.
	RegistrationEvents = []string{"im.message.receive_v1"}
)

const (
	registrationPath = "/oauth/v1/app/registration"
	// registrationSource goes into the QR's source parameter.
	registrationSource = "xconn-feishu-connector"
	// DefaultRegistrationName is the new app's name (Options.AppName).
	DefaultRegistrationName = "xAgent助手"
	// DefaultQRTTL is one registration's lifetime: the default expire_in
	// of §2.1 (600 s).
	DefaultQRTTL = 10 * time.Minute
	// slowDownStep is what a slow_down answer adds to the interval.
	slowDownStep = 5 * time.Second
)

// regState is the accounts side of one sign-in session, kept by the SDK
// with the session (connector.WithQRData).
type regState struct {
	deviceCode string
	base       string // accounts host polled (Lark after a switch)
	switched   bool
	interval   time.Duration
	next       time.Time
	expires    time.Time
}

// regAnswer is a begin or poll answer (§2.1).
type regAnswer struct {
	DeviceCode              string `json:"device_code"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	Interval                int    `json:"interval"`
	ExpireIn                int    `json:"expire_in"`
	ClientID                string `json:"client_id"`
	ClientSecret            string `json:"client_secret" secret:"true"`
	UserInfo                struct {
		OpenID      string `json:"open_id"`
		TenantBrand string `json:"tenant_brand"`
	} `json:"user_info"`
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

// registration posts one form-encoded registration request to base.
func (c *Connector) registration(ctx context.Context, base string, form url.Values) (*regAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, c.api.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+registrationPath, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := c.api.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("feishu app registration: %w", scrubURL(err))
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<16))
	if err != nil {
		return nil, fmt.Errorf("feishu app registration: %w", err)
	}
	var out regAnswer
	if err := json.Unmarshal(raw, &out); err != nil {
		if res.StatusCode >= 500 {
			return nil, &APIError{Op: "app registration", Status: res.StatusCode, Msg: "server error"}
		}
		return nil, fmt.Errorf("feishu app registration: HTTP %d, answer is not JSON", res.StatusCode)
	}
	if out.ClientSecret != "" {
		c.srv.Redact(out.ClientSecret)
	}
	if res.StatusCode >= 500 {
		return nil, &APIError{Op: "app registration", Status: res.StatusCode, Msg: out.Error}
	}
	return &out, nil
}

// addons is the QR's addons parameter: base64url (no padding) of the
// gzipped JSON of the app's scopes and events (§2.1).
func addons() (string, error) {
	v := map[string]any{
		"preset":    false,
		"scopes":    map[string][]string{"tenant": RegistrationScopes, "user": {}},
		"events":    map[string]any{"items": map[string][]string{"tenant": RegistrationEvents, "user": {}}},
		"callbacks": map[string][]string{"items": {}},
	}
	js, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(js); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(buf.Bytes()), nil
}

// issueQR begins a registration (§2.1 begin) and returns the QR text: the
// verification URL with the SDK's parameters, the app's name and addons.
func (c *Connector) issueQR(ctx context.Context, s *connector.QRSession) (string, error) {
	out, err := c.registration(ctx, c.accounts, url.Values{"action": {"begin"}, "archetype": {"PersonalAgent"},
		"auth_method": {"client_secret"}, "request_user_info": {"open_id"}})
	if err != nil {
		return "", err
	}
	if out.DeviceCode == "" || out.VerificationURIComplete == "" {
		return "", fmt.Errorf("feishu app registration: begin answered without device_code or verification_uri_complete (error %q)", out.Error)
	}
	u, err := url.Parse(out.VerificationURIComplete)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", errors.New("feishu app registration: verification_uri_complete is not an http(s) URL")
	}
	add, err := addons()
	if err != nil {
		return "", fmt.Errorf("feishu app registration: addons: %w", err)
	}
	q := u.Query()
	q.Set("from", "sdk")
	q.Set("tp", "sdk")
	q.Set("source", "go-sdk/"+registrationSource)
	q.Set("name", c.appName)
	q.Set("addons", add)
	q.Set("createOnly", "true")
	u.RawQuery = q.Encode()
	interval := time.Duration(out.Interval) * time.Second
	if interval <= 0 {
		interval = 5 * time.Second
	}
	expire := time.Duration(out.ExpireIn) * time.Second
	if expire <= 0 {
		expire = 600 * time.Second
	}
	now := time.Now()
	connector.WithQRData(s, func(r *regState) {
		*r = regState{deviceCode: out.DeviceCode, base: c.accounts, interval: interval, next: now, expires: now.Add(expire)}
	})
	return u.String(), nil
}

// Messages of the registration states that need one.
const (
	msgRegDenied  = "the app registration was refused in Feishu; start the sign-in again"
	msgRegExpired = "the app registration code expired; refresh it to get a new one"
)

// pollQR asks the accounts host how the registration is doing (§2.1
// poll), at most every interval, and maps its answer onto the protocol:
// authorization_pending, slow_down and an empty answer are pending
// (there is no scanned signal), access_denied is failed, expired_token
// and the code's end are expired, credentials are verified and bound.
func (c *Connector) pollQR(ctx context.Context, s *connector.QRSession) (connector.QRResult[binding], error) {
	var r regState
	now := time.Now()
	connector.WithQRData(s, func(st *regState) { r = *st })
	switch {
	case r.deviceCode == "":
		return connector.QRResult[binding]{}, errors.New("feishu: no app registration for this sign-in session")
	case now.After(r.expires):
		return connector.QRResult[binding]{Status: protocol.AuthExpired, Message: msgRegExpired}, nil
	case now.Before(r.next):
		return connector.QRResult[binding]{Status: protocol.AuthPending}, nil
	}
	for {
		connector.WithQRData(s, func(st *regState) { st.next = now.Add(st.interval) })
		out, err := c.registration(ctx, r.base, url.Values{"action": {"poll"}, "device_code": {r.deviceCode}})
		if err != nil {
			if isTemporary(err) && ctx.Err() == nil {
				return connector.QRResult[binding]{Status: protocol.AuthPending}, nil
			}
			return connector.QRResult[binding]{}, err
		}
		if out.ClientID != "" && out.ClientSecret != "" {
			return c.registered(ctx, out), nil
		}
		switch out.Error {
		case "", "authorization_pending":
			// Lark tenants finish at Lark's accounts host: switch once and
			// poll again at once (§2.1). Only from the default Feishu host,
			// so a configured (or fake) host is never left.
			if out.UserInfo.TenantBrand == "lark" && !r.switched && c.accounts == DefaultAccountsURL {
				r.base, r.switched = LarkAccountsURL, true
				connector.WithQRData(s, func(st *regState) { st.base, st.switched = r.base, true })
				continue
			}
			return connector.QRResult[binding]{Status: protocol.AuthPending}, nil
		case "slow_down":
			connector.WithQRData(s, func(st *regState) { st.interval += slowDownStep; st.next = now.Add(st.interval) })
			return connector.QRResult[binding]{Status: protocol.AuthPending}, nil
		case "access_denied":
			return connector.QRResult[binding]{Status: protocol.AuthFailed, Message: msgRegDenied}, nil
		case "expired_token":
			return connector.QRResult[binding]{Status: protocol.AuthExpired, Message: msgRegExpired}, nil
		default:
			// Not in the fact sheet: a device-code flow's other errors
			// are final (RFC 8628 §3.5).
			c.log.Info("feishu: app registration failed", "error", out.Error)
			return connector.QRResult[binding]{Status: protocol.AuthFailed,
				Message: fmt.Sprintf("Feishu ended the app registration (%s); start the sign-in again", out.Error)}, nil
		}
	}
}

// registered verifies a registered app's credentials with a tenant token
// and returns the account to bind.
func (c *Connector) registered(ctx context.Context, out *regAnswer) connector.QRResult[binding] {
	b := binding{AppID: out.ClientID, AppSecret: out.ClientSecret, Name: c.appName + " (" + out.ClientID + ")"}
	if _, err := c.api.tenantToken(ctx, b.cred(), true); err != nil {
		msg := "the app was created, but Feishu refused its credentials: bind it with feishu_app_binding once it is ready"
		if out.UserInfo.TenantBrand == "lark" && !strings.Contains(c.api.base, "larksuite") {
			msg = "the app was created in Lark: run the connector with --feishu-api-url " + LarkAPIURL + " and bind it with feishu_app_binding"
		}
		var perr *protocol.Error
		if errors.As(c.signInError(err), &perr) && perr.Code != protocol.CodeInvalidAuthInput {
			msg = perr.Message
		}
		return connector.QRResult[binding]{Status: protocol.AuthFailed, Message: msg}
	}
	a := account(b)
	return connector.QRResult[binding]{Status: protocol.AuthAuthenticated, Account: &a}
}
