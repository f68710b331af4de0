package slack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	slackapi "github.com/slack-go/slack"

	"github.com/xconn/xconn/connector"
)

// APIError is a refusal of the Slack Web API: the method and Slack's
// error code ("invalid_auth", "channel_not_found", ...), or the HTTP
// status of an answer that was not the API's JSON. It never holds a token.
type APIError struct {
	Method string
	// Code is the "error" of {"ok":false,...}; "" for a bare HTTP status.
	Code string
	// Status is the HTTP status of a non-200 answer (0 for Slack's own
	// errors, which come with 200).
	Status int
}

func (e *APIError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("slack: %s: HTTP %d %s", e.Method, e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("slack: %s: %s", e.Method, e.Code)
}

// revokedCodes are the errors of a token Slack no longer accepts
// (https://api.slack.com/methods/auth.test#errors).
var revokedCodes = []string{"invalid_auth", "token_revoked", "account_inactive", "token_expired", "not_authed"}

// temporaryCodes are Slack's errors worth a retry
// (https://api.slack.com/web#errors, https://api.slack.com/apis/rate-limits).
var temporaryCodes = []string{"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}

// Revoked reports a token Slack does not accept any more.
func (e *APIError) Revoked() bool { return slices.Contains(revokedCodes, e.Code) }

// Temporary reports whether a later retry may succeed: a rate limit,
// Slack's internal errors, an HTTP 5xx.
func (e *APIError) Temporary() bool {
	return slices.Contains(temporaryCodes, e.Code) || e.Status >= 500 || e.Status == http.StatusTooManyRequests
}

// transportError is a request that got no Web API answer (network, proxy,
// TLS, timeout). The Web API carries tokens in headers and bodies, never in
// URLs, so the text of net/http's error holds none; it is kept whole.
type transportError struct {
	method string
	err    error
}

func (e *transportError) Error() string { return "slack: " + e.method + ": " + e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// wrap turns a slack-go error into the connector's: *APIError,
// *connector.RateLimitError around one for a 429, or *transportError.
func wrap(method string, err error) error {
	if err == nil {
		return nil
	}
	var rl *slackapi.RateLimitedError
	var se slackapi.SlackErrorResponse
	var sc slackapi.StatusCodeError
	var ue *url.Error
	switch {
	case errors.As(err, &rl):
		return &connector.RateLimitError{RetryAfter: min(rl.RetryAfter, connector.MaxRetryAfter), Err: &APIError{Method: method, Code: "ratelimited", Status: http.StatusTooManyRequests}}
	case errors.As(err, &se):
		return &APIError{Method: method, Code: se.Err}
	case errors.As(err, &sc):
		return &APIError{Method: method, Status: sc.Code}
	case errors.As(err, &ue), errors.Is(err, context.DeadlineExceeded):
		return &transportError{method: method, err: err}
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return err
	}
	return &transportError{method: method, err: err}
}

// call runs one Web API call of method: it waits while Slack holds the
// method (a recent 429), bounds it by the request timeout, waits out a
// 429's Retry-After of at most MaxRetryWait and calls again, and returns
// the connector's error types.
func (c *Connector) call(ctx context.Context, method string, fn func(ctx context.Context) error) error {
	return c.rl.Do(ctx, func(ctx context.Context) error {
		if err := c.holds.Wait(ctx, method, c.rl.MaxWait); err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		err := wrap(method, fn(cctx))
		c.holds.HoldFor(method, err)
		return err
	})
}

// isTemporary classifies a Web API failure.
func isTemporary(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Temporary()
	}
	var te *transportError
	return errors.As(err, &te) || connector.IsTemporary(err)
}

// isRevoked reports a token Slack no longer accepts.
func isRevoked(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Revoked()
}

// codeOf returns Slack's error code of err ("" when it has none).
func codeOf(err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}
