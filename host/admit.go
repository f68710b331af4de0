package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// Admit adds the connector at baseURL to the catalog, or edits it when the
// same Base URL is admitted again (a new API key, a refetched Card). It
// validates the Base URL (section 3), fetches and validates the Card
// (schema, hard rules, protocol version inside the admission window),
// fetches the Skill (200, or 204/404 for none; header name checked against
// the Card), probes /health with apiKey (2xx, same card id, protocol version
// and build as the Card), then persists the entry (API key encrypted at rest
// by the store) and starts its health monitor and data-plane client.
//
// Admissions are serialised. A second Base URL with a connector_card_id
// already admitted is refused with ReasonDuplicateCard. Every refusal is an
// *AdmissionError.
func (h *Host) Admit(ctx context.Context, baseURL, apiKey string) (*Connector, error) {
	h.admitMu.Lock()
	defer h.admitMu.Unlock()
	h.mu.Lock()
	state := h.state
	h.mu.Unlock()
	switch state {
	case stateNew:
		return nil, ErrNotStarted
	case stateClosed:
		return nil, ErrClosed
	}

	h.secret(apiKey)
	base, vs := protocol.ValidateBaseURL(baseURL)
	if len(vs) > 0 || base == nil {
		return nil, &AdmissionError{Reason: ReasonInvalidBaseURL, Violations: vs}
	}
	card, cardJSON, aerr := h.fetchCard(ctx, base)
	if aerr != nil {
		return nil, aerr
	}
	if card.Security != nil && card.Security.APIKeyRequired && apiKey == "" {
		return nil, refuse(ReasonAPIKeyRequired, errors.New("the Card requires a system API key"))
	}
	skill, aerr := h.fetchSkill(ctx, base, card)
	if aerr != nil {
		return nil, aerr
	}
	hr := h.probeHealth(ctx, base, apiKey, card)
	switch {
	case hr.authFail:
		return nil, refuse(ReasonUnauthorized, hr.err)
	case hr.err != nil:
		return nil, refuse(ReasonHealthFailed, hr.err)
	case len(hr.mismatch) > 0:
		return nil, &AdmissionError{Reason: ReasonHealthMismatch, Violations: hr.mismatch}
	}

	now := time.Now().UTC()
	entry := store.CatalogEntry{CardID: card.ConnectorCardID, BaseURL: base.String(), APIKey: apiKey,
		Card: cardJSON, Skill: skill, Health: string(HealthOK), CreatedAt: now, UpdatedAt: now}
	old, err := h.st.GetCatalog(ctx, card.ConnectorCardID)
	switch {
	case err == nil:
		if old.BaseURL != entry.BaseURL {
			return nil, refuse(ReasonDuplicateCard, fmt.Errorf("connector_card_id %q is already admitted from another Base URL", card.ConnectorCardID))
		}
		entry.ConnectorID, entry.CreatedAt = old.ConnectorID, old.CreatedAt
		if err := h.st.UpdateCatalog(ctx, entry); err != nil {
			return nil, fmt.Errorf("host: admit %s: %w", card.ConnectorCardID, err)
		}
	case errors.Is(err, store.ErrNotFound):
		if err := h.st.InsertCatalog(ctx, entry); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return nil, refuse(ReasonDuplicateCard, fmt.Errorf("connector_card_id %q is already admitted", card.ConnectorCardID))
			}
			return nil, fmt.Errorf("host: admit %s: %w", card.ConnectorCardID, err)
		}
	default:
		return nil, fmt.Errorf("host: admit %s: %w", card.ConnectorCardID, err)
	}
	rt, err := h.startRuntime(entry, card)
	if err != nil {
		return nil, err
	}
	rt.setHealth(HealthOK, "", hr.resp)
	return rt.snapshot(), nil
}
