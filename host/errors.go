package host

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xconn/xconn/protocol"
)

// RefusalReason says why [Host.Admit] refused a connector.
type RefusalReason string

// Refusal reasons of catalog admission.
const (
	// ReasonInvalidBaseURL: the Base URL breaks section 3 (scheme, host,
	// userinfo, query or fragment).
	ReasonInvalidBaseURL RefusalReason = "invalid_base_url"
	// ReasonCardUnavailable: GET /connector-card.json failed or was not 200.
	ReasonCardUnavailable RefusalReason = "card_unavailable"
	// ReasonInvalidCard: the Card breaks the schema or a hard rule.
	ReasonInvalidCard RefusalReason = "invalid_card"
	// ReasonUnsupportedVersion: the Card's protocol_version is outside the
	// admission window [protocol.MinimumVersion, protocol.Current].
	ReasonUnsupportedVersion RefusalReason = "unsupported_protocol_version"
	// ReasonSkillUnavailable: GET /skill.md answered neither 200 nor 204/404.
	ReasonSkillUnavailable RefusalReason = "skill_unavailable"
	// ReasonInvalidSkill: the Skill header name or its Card references are wrong.
	ReasonInvalidSkill RefusalReason = "invalid_skill"
	// ReasonUnauthorized: /health answered 401 or 403 with the given API key.
	ReasonUnauthorized RefusalReason = "unauthorized"
	// ReasonHealthFailed: /health failed or was not 2xx.
	ReasonHealthFailed RefusalReason = "health_failed"
	// ReasonHealthMismatch: /health reports another connector_card_id,
	// protocol_version or build than the Card.
	ReasonHealthMismatch RefusalReason = "health_mismatch"
	// ReasonDuplicateCard: another Base URL is already admitted with the same
	// connector_card_id (one connector per connector_card_id).
	ReasonDuplicateCard RefusalReason = "duplicate_card"
	// ReasonAPIKeyRequired: the Card says security.api_key_required but no
	// API key was given.
	ReasonAPIKeyRequired RefusalReason = "api_key_required"
)

// AdmissionError is the typed refusal of [Host.Admit]: the reason, every
// violation found (paths into the Card, Skill or health body) and the
// underlying error, if any. Its text never contains the API key.
type AdmissionError struct {
	Reason     RefusalReason
	Violations protocol.Violations
	Err        error
}

func (e *AdmissionError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "connector refused: %s", e.Reason)
	if e.Err != nil {
		msg := e.Err.Error()
		// A protocol error whose code is the reason: say the code once.
		if pe := protocol.AsError(e.Err); pe != nil && string(pe.Code) == string(e.Reason) {
			msg = strings.TrimPrefix(strings.TrimPrefix(msg, string(pe.Code)), ": ")
		}
		if msg != "" {
			fmt.Fprintf(&b, ": %s", msg)
		}
	}
	for _, v := range e.Violations {
		fmt.Fprintf(&b, "\n  %s", v.String())
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *AdmissionError) Unwrap() error { return e.Err }

func refuse(reason RefusalReason, err error, vs ...protocol.Violation) *AdmissionError {
	return &AdmissionError{Reason: reason, Err: err, Violations: vs}
}

// Codes the host uses beyond the protocol package's.
const (
	// CodeFileDownloadFailed rejects an inbound chat.message whose file could
	// not be fetched (retryable).
	CodeFileDownloadFailed protocol.Code = "file_download_failed"
	// CodeFileTooLarge rejects an inbound chat.message whose file exceeds
	// [Options.MaxFileBytes] (not retryable).
	CodeFileTooLarge protocol.Code = "file_too_large"
	// CodeToolDenied: the governance hook refused the tool.
	CodeToolDenied protocol.Code = "tool_denied"
	// CodeOffline: the connector has no open data plane right now.
	CodeOffline protocol.Code = "connector_offline"
	// CodeFileUploadFailed: a file could not be uploaded to the connector
	// (POST /files/uploads) for a tool argument (retryable).
	CodeFileUploadFailed protocol.Code = "file_upload_failed"
	// CodeTimeout: no ack arrived in time.
	CodeTimeout protocol.Code = "timeout"
	// CodeChannelLimit: the Card's user_channel_mode (single) forbids
	// another channel for this user.
	CodeChannelLimit protocol.Code = "channel_limit"
)

// Sentinel errors of the host.
var (
	// ErrClosed is returned once the host is closed.
	ErrClosed = errors.New("host: closed")
	// ErrNotStarted is returned by operations that need [Host.Start].
	ErrNotStarted = errors.New("host: not started")
	// ErrUnknownConnector: no connector with that connector_card_id is admitted.
	ErrUnknownConnector = errors.New("host: unknown connector")
	// ErrUnknownChannel: no user channel with that id.
	ErrUnknownChannel = errors.New("host: unknown user channel")
)
