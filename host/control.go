package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/xconn/xconn/protocol"
)

// statusError is a control-plane HTTP answer outside the expected statuses.
type statusError struct {
	Path   string
	Status int
}

func (e *statusError) Error() string {
	return fmt.Sprintf("GET %s: HTTP %d", e.Path, e.Status)
}

// endpoint joins a fixed endpoint path to a Base URL, keeping its prefix.
func endpoint(base *url.URL, path string) string {
	return base.JoinPath(path).String()
}

// get performs a GET with an optional bearer key and returns the status and
// at most limit bytes of the body (more is an error).
func (h *Host) get(ctx context.Context, base *url.URL, path, apiKey string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint(base, path), nil)
	if err != nil {
		return 0, nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := h.opts.HTTPClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("GET %s: %w", path, redactURLError(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, h.opts.MaxCardBytes+1))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("GET %s: read body: %w", path, err)
	}
	if int64(len(body)) > h.opts.MaxCardBytes {
		return resp.StatusCode, nil, fmt.Errorf("GET %s: body exceeds %d bytes", path, h.opts.MaxCardBytes)
	}
	return resp.StatusCode, body, nil
}

// redactURLError drops the URL from a *url.Error (it names the Base URL
// only, but a download URL may hold a one-time token).
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// fetchCard fetches and validates the Card; the error is an *AdmissionError.
func (h *Host) fetchCard(ctx context.Context, base *url.URL) (*protocol.Card, []byte, *AdmissionError) {
	status, body, err := h.get(ctx, base, protocol.PathCard, "")
	if err != nil {
		return nil, nil, refuse(ReasonCardUnavailable, err)
	}
	if status != http.StatusOK {
		return nil, nil, refuse(ReasonCardUnavailable, &statusError{protocol.PathCard, status})
	}
	card, vs := protocol.ValidateCardJSON(body)
	if card != nil {
		if err := protocol.AdmitVersionString(card.ProtocolVersion); err != nil {
			return nil, nil, refuse(ReasonUnsupportedVersion, err, vs...)
		}
	}
	if len(vs) > 0 || card == nil {
		return nil, nil, &AdmissionError{Reason: ReasonInvalidCard, Violations: vs}
	}
	return card, body, nil
}

// fetchSkill fetches the primary Skill: 200 (validated), or 204/404 (nil).
func (h *Host) fetchSkill(ctx context.Context, base *url.URL, card *protocol.Card) ([]byte, *AdmissionError) {
	status, body, err := h.get(ctx, base, protocol.PathSkill, "")
	if err != nil {
		return nil, refuse(ReasonSkillUnavailable, err)
	}
	switch status {
	case http.StatusOK:
		if vs := protocol.ValidateSkill(body, card); len(vs) > 0 {
			return nil, &AdmissionError{Reason: ReasonInvalidSkill, Violations: vs}
		}
		return body, nil
	case http.StatusNoContent, http.StatusNotFound:
		return nil, nil
	}
	return nil, refuse(ReasonSkillUnavailable, &statusError{protocol.PathSkill, status})
}

// healthResult is one /health probe.
type healthResult struct {
	resp      *protocol.HealthResponse
	authFail  bool
	err       error
	mismatch  protocol.Violations // against the Card
	refetch   bool                // version, protocol or build differs from the Card
	cardIDBad bool
}

// probeHealth performs GET /health and compares it with card.
func (h *Host) probeHealth(ctx context.Context, base *url.URL, apiKey string, card *protocol.Card) healthResult {
	status, body, err := h.get(ctx, base, protocol.PathHealth, apiKey)
	if err != nil {
		return healthResult{err: err}
	}
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		return healthResult{authFail: true, err: &statusError{protocol.PathHealth, status}}
	}
	if status < 200 || status > 299 {
		return healthResult{err: &statusError{protocol.PathHealth, status}}
	}
	// 2xx means available (section 4.3). The body is compared with the Card
	// when it is a health object; anything else is only worth a warning.
	var hr protocol.HealthResponse
	if len(body) > 0 {
		if err := json.Unmarshal(body, &hr); err != nil {
			h.log.Warn("host: /health answered 2xx with a body that is not a health object; counted as available",
				"card_id", card.ConnectorCardID, "status", status, "err", err)
			return healthResult{resp: &protocol.HealthResponse{}}
		}
	}
	r := healthResult{resp: &hr}
	if hr.ConnectorCardID != "" && hr.ConnectorCardID != card.ConnectorCardID {
		r.cardIDBad = true
		r.mismatch = append(r.mismatch, protocol.Violation{Path: "connector_card_id",
			Reason: fmt.Sprintf("health reports %q, the Card %q", hr.ConnectorCardID, card.ConnectorCardID)})
	}
	if hr.ProtocolVersion != "" && hr.ProtocolVersion != card.ProtocolVersion {
		r.refetch = true
		r.mismatch = append(r.mismatch, protocol.Violation{Path: "protocol_version",
			Reason: fmt.Sprintf("health reports %q, the Card %q", hr.ProtocolVersion, card.ProtocolVersion)})
	}
	if hr.ConnectorCardVersion != "" && hr.ConnectorCardVersion != card.Connector.Version {
		r.refetch = true
		r.mismatch = append(r.mismatch, protocol.Violation{Path: "connector_card_version",
			Reason: fmt.Sprintf("health reports %q, the Card %q", hr.ConnectorCardVersion, card.Connector.Version)})
	}
	if hr.Build != nil && !sameBuild(*hr.Build, card.Build) {
		r.refetch = true
		r.mismatch = append(r.mismatch, protocol.Violation{Path: "build",
			Reason: "health build differs from the Card build"})
	}
	return r
}

func sameBuild(a, b protocol.Build) bool {
	return a.Version == b.Version && a.GitTag == b.GitTag && a.GitRev == b.GitRev && a.BuildTime == b.BuildTime
}
