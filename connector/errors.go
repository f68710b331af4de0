package connector

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/xconn/xconn/protocol"
)

// CodeTargetUnreachable is the SDK's code for a target system that cannot
// be reached now (network failure, DNS, timeout, a 5xx outage): nothing
// says the credentials are wrong, and the same request may succeed later.
// The protocol leaves the code to implementations (section 8.23 lists no
// such case), so the SDK fixes it for every connector built on it.
//
// A sign-in handler or a client constructor returns it as a
// *protocol.Error with Retryable set and a secret-free message naming the
// target:
//
//	return &protocol.Error{Code: connector.CodeTargetUnreachable, Retryable: true,
//		Message: "the Telegram Bot API cannot be reached (check the network and the proxy)"}
//
// A form sign-in that fails with it (or with a network error or a deadline
// that is not a *protocol.Error, which the SDK classifies the same way) is
// answered with an auth.start.ack error carrying the code, as
// invalid_auth_input is, rather than with status failed: the sign-in did
// not happen, the channel keeps its status, and xAgent may offer a retry.
const CodeTargetUnreachable protocol.Code = "target_unreachable"

// ErrRevoked, wrapped by a Consumer's Run error (or a client constructor's
// error on restore), says the target refused the credential for good: a
// revoked bot token (Telegram 401, Slack token_revoked or invalid_auth,
// Discord close code 4004), an uninstalled app, a DingTalk or WeCom
// refusal of the app's secret. The SDK then marks every channel of the
// consumer's key revoked (each keeps its binding and gets its Descriptor
// pushed) and parks the consumer instead of restarting it: Run is called
// again only when a channel signs in anew with that credential (a revoked
// channel is not restored at Start either).
//
//	if resp.Error == "token_revoked" || resp.Error == "invalid_auth" {
//		return fmt.Errorf("slack: apps.connections.open: %w", connector.ErrRevoked)
//	}
var ErrRevoked = errors.New("connector: the target revoked the credential")

// TerminalError ends a Consumer's Run for good with the connection status
// its channels take, for a refusal that is neither [ErrRevoked] nor
// [ErrBindingExpired]: the SDK sets Status on every channel of the key,
// parks the consumer as it does for ErrRevoked, and logs Err (redacted).
// A client constructor may return it on restore too. Construct it with a
// pointer: &connector.TerminalError{Status: protocol.StatusError, Err: err}.
type TerminalError struct {
	// Status is what the channels become: protocol.StatusRevoked,
	// StatusExpired or StatusError (a refusal the connector cannot
	// classify, such as a fatal configuration error of the target's app;
	// channels in error stay signed in). Any other value means StatusError.
	Status protocol.ConnectionStatus
	// Err is the cause; it is logged, never sent.
	Err error
}

// Error returns the status and the cause.
func (e *TerminalError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("connector: terminal target failure (%s)", e.status())
	}
	return fmt.Sprintf("connector: terminal target failure (%s): %v", e.status(), e.Err)
}

// Unwrap returns the cause.
func (e *TerminalError) Unwrap() error { return e.Err }

func (e *TerminalError) status() protocol.ConnectionStatus {
	switch e.Status {
	case protocol.StatusRevoked, protocol.StatusExpired, protocol.StatusError:
		return e.Status
	}
	return protocol.StatusError
}

// TerminalStatus reports whether err is a terminal target failure and the
// status it means: revoked for [ErrRevoked], expired for
// [ErrBindingExpired], the Status of a [*TerminalError]. The SDK applies it
// to a Consumer's Run error and to a client constructor's error on
// restore; connectors may use it to classify their own errors the same
// way.
func TerminalStatus(err error) (protocol.ConnectionStatus, bool) {
	var te *TerminalError
	switch {
	case err == nil:
		return "", false
	case errors.As(err, &te):
		return te.status(), true
	case errors.Is(err, ErrRevoked):
		return protocol.StatusRevoked, true
	case errors.Is(err, ErrBindingExpired):
		return protocol.StatusExpired, true
	}
	return "", false
}

// signInError turns an attach or bind failure into the secret-free error a
// sign-in reports: a *protocol.Error keeps its code and message; a network
// failure or a deadline becomes CodeTargetUnreachable; anything else a
// generic failure.
func signInError(err error) error {
	if perr := protocol.AsError(err); perr != nil {
		return perr
	}
	if perr := unreachableError(err); perr != nil {
		return perr
	}
	return protocol.Errorf(protocol.CodeInternal, "sign-in failed: the target refused or could not check these credentials")
}

// unreachableError returns the CodeTargetUnreachable error of a network
// failure or a deadline, and nil for any other error.
func unreachableError(err error) *protocol.Error {
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
		return &protocol.Error{Code: CodeTargetUnreachable, Retryable: true,
			Message: "sign-in failed: the target could not be reached; try again later"}
	}
	return nil
}
