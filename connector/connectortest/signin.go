package connectortest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/xconn/xconn/protocol"
)

// MaxPollInterval caps the wait between two auth.status polls of
// [Client.SignInForm] and [Client.SignInQR]: they poll at the connector's
// poll_interval_millis, but at least this often, so that a test does not
// wait the 2 s a user interface would.
const MaxPollInterval = 100 * time.Millisecond

// SignInError reports a sign-in that ended without being authenticated:
// State is the last auth state, whose Status is failed, expired or
// unauthenticated (or qr_refresh_required for a flow that is not a QR
// flow) and whose Message says why.
type SignInError struct {
	State *protocol.AuthStatePayload
}

func (e *SignInError) Error() string {
	if e.State.Message != "" {
		return fmt.Sprintf("connectortest: sign-in %s: %s", e.State.Status, e.State.Message)
	}
	return "connectortest: sign-in " + e.State.Status
}

// SignInForm signs channel in with the form flow flowID, as a host does after
// the user filled the form: auth.start with input (field name to value),
// then, while the status is pending or scanned, auth.status polls until it
// is authenticated. It returns the authenticated state (with the channel's
// Connection Descriptor). A refused start (unknown flow, invalid input) is a
// *protocol.Error; a sign-in that ends otherwise is a *SignInError. ctx
// bounds the whole sign-in.
func (c *Client) SignInForm(ctx context.Context, channel, flowID string, input map[string]string) (*protocol.AuthStatePayload, error) {
	st, err := c.authRequest(ctx, protocol.TypeAuthStart, channel, protocol.AuthStartPayload{FlowID: flowID, Input: input})
	if err != nil {
		return nil, err
	}
	return c.awaitAuth(ctx, channel, flowID, st, nil)
}

// SignInQR signs channel in with the QR flow flowID, as a host does while a
// user scans the code: auth.start, then confirm with the code's text (a
// login URL or token, as the connector made it), then auth.status polls
// until the status is authenticated. confirm plays the user: it opens the
// login URL, or tells the connector's fake target that the code was scanned
// and confirmed; it should start the confirmation and return, since polling
// happens after it returns. confirm is called again with the new text after
// each refresh that an expired code (qr_refresh_required) triggers. Errors
// are as for [Client.SignInForm]; an error from confirm is returned wrapped.
func (c *Client) SignInQR(ctx context.Context, channel, flowID string, confirm func(ctx context.Context, qrText string) error) (*protocol.AuthStatePayload, error) {
	if confirm == nil {
		return nil, errors.New("connectortest: SignInQR needs a confirm function")
	}
	st, err := c.authRequest(ctx, protocol.TypeAuthStart, channel, protocol.AuthStartPayload{FlowID: flowID})
	if err != nil {
		return nil, err
	}
	return c.awaitAuth(ctx, channel, flowID, st, confirm)
}

// AuthStatus sends one auth.status for the sign-in session sessionID on
// channel (refresh asks for a new QR code) and returns the state.
func (c *Client) AuthStatus(ctx context.Context, channel, sessionID string, refresh bool) (*protocol.AuthStatePayload, error) {
	return c.authRequest(ctx, protocol.TypeAuthStatus, channel, protocol.AuthStatusPayload{AuthSessionID: sessionID, Refresh: refresh})
}

func (c *Client) authRequest(ctx context.Context, typ, channel string, payload any) (*protocol.AuthStatePayload, error) {
	env, err := c.Request(ctx, typ, channel, payload)
	if err != nil {
		return nil, err
	}
	if err := AckError(env); err != nil {
		return nil, err
	}
	var st protocol.AuthStatePayload
	if err := env.DecodePayload(&st); err != nil {
		return nil, fmt.Errorf("connectortest: %s: %w", env.Type, err)
	}
	return &st, nil
}

// awaitAuth polls from st until a final status; confirm is nil for a form.
func (c *Client) awaitAuth(ctx context.Context, channel, flowID string, st *protocol.AuthStatePayload,
	confirm func(context.Context, string) error) (*protocol.AuthStatePayload, error) {
	sid, lastQR := st.AuthSessionID, ""
	for {
		refresh := false
		switch st.Status {
		case protocol.AuthAuthenticated:
			return st, nil
		case protocol.AuthFailed, protocol.AuthExpired, protocol.AuthUnauthenticated:
			return st, &SignInError{State: st}
		case protocol.AuthQRRefreshRequired:
			if confirm == nil {
				return st, &SignInError{State: st}
			}
			refresh = true
		default: // pending, scanned
			if confirm != nil && st.QRCodeText != "" && st.QRCodeText != lastQR {
				lastQR = st.QRCodeText
				if err := confirm(ctx, lastQR); err != nil {
					return st, fmt.Errorf("connectortest: confirm %s: %w", flowID, err)
				}
			}
		}
		if st.AuthSessionID != "" {
			sid = st.AuthSessionID
		}
		if sid == "" {
			return st, fmt.Errorf("connectortest: sign-in %s is %s without an auth_session_id", flowID, st.Status)
		}
		if err := sleep(ctx, pollInterval(st)); err != nil {
			return st, fmt.Errorf("connectortest: sign-in %s still %s: %w", flowID, st.Status, err)
		}
		next, err := c.AuthStatus(ctx, channel, sid, refresh)
		if err != nil {
			return st, err
		}
		st = next
	}
}

func pollInterval(st *protocol.AuthStatePayload) time.Duration {
	d := time.Duration(st.PollIntervalMillis) * time.Millisecond
	if d <= 0 || d > MaxPollInterval {
		d = MaxPollInterval
	}
	return d
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
