package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/xconn/xconn/protocol"
)

// probeSkill fetches the Skill without an API key and checks its name.
func probeSkill(ctx context.Context, s *session, r *recorder) {
	res, err := s.get(ctx, protocol.PathSkill, "")
	if err != nil {
		r.fail("skill.http", "200, 204 or 404", err.Error(), "")
		r.skipRest("the Skill could not be fetched")
		return
	}
	s.skill = skillState{fetched: true, status: res.status}
	r.check("skill.http", oneOf(fmt.Sprint(res.status), "200", "204", "404"), "200, 204 or 404 without an API key", res.String(), "")
	if res.status != 200 {
		r.skipRest("the Connector serves no Skill")
		return
	}
	if !needCard(s, r) {
		return
	}
	hdr, err := protocol.ParseSkillHeader(res.body)
	if err != nil {
		r.fail("skill.name", "a front-matter header with a name", err.Error(), truncate(s.redact(string(res.body)), 300))
		r.skipRest("the Skill has no name")
		return
	}
	s.skill.name = hdr.Name
	want := protocol.PrimarySkillName(s.card.ConnectorCardID)
	vs := protocol.ValidateSkillName(hdr.Name, s.card.ConnectorCardID)
	r.check("skill.name", hdr.Name == want && len(vs) == 0, "name "+want, fmt.Sprintf("name %q %s", hdr.Name, vs.Error()), "")
	var bad []string
	for i, t := range s.card.Tools {
		for j, id := range t.RelatedSkillIDs {
			if id != hdr.Name && !strings.HasPrefix(id, hdr.Name+"-") || len(protocol.ValidateSkillName(id, s.card.ConnectorCardID)) > 0 {
				bad = append(bad, fmt.Sprintf("tools[%d].related_skill_ids[%d] %q", i, j, id))
			}
		}
	}
	r.check("card.related-skill-ids", len(bad) == 0, hdr.Name+" or "+hdr.Name+"-<purpose>", strings.Join(bad, "; "), "")
}

// probeHealth checks /health against the Card.
func probeHealth(ctx context.Context, s *session, r *recorder) {
	if !needCard(s, r) {
		return
	}
	res, err := s.get(ctx, protocol.PathHealth, s.opts.APIKey)
	if err != nil {
		r.fail("health.http", "2xx with a JSON object", err.Error(), "")
		r.skipRest("/health failed")
		return
	}
	var h protocol.HealthResponse
	if res.status/100 != 2 || json.Unmarshal(res.body, &h) != nil {
		r.fail("health.http", "2xx with a JSON object", res.String(), "")
		r.skipRest("/health failed")
		return
	}
	r.pass("health.http")
	body := s.redact(string(res.body))
	c := s.card
	r.check("health.card-id", h.ConnectorCardID == "" || h.ConnectorCardID == c.ConnectorCardID,
		"connector_card_id "+c.ConnectorCardID, "connector_card_id "+h.ConnectorCardID, body)
	// Two values compared are both required: equal absences are no match.
	r.check("health.protocol-version", h.ProtocolVersion != "" && h.ProtocolVersion == c.ProtocolVersion,
		fmt.Sprintf("protocol_version %q, equal to the Card's (both present)", c.ProtocolVersion),
		fmt.Sprintf("/health protocol_version %s, Card protocol_version %s", present(h.ProtocolVersion), present(c.ProtocolVersion)), body)
	want, _ := json.Marshal(c.Build)
	got := []byte("null")
	if h.Build != nil {
		got, _ = json.Marshal(h.Build)
	}
	r.check("health.build", h.Build != nil && string(want) == string(got), "build "+string(want), "build "+string(got), body)
	r.check("health.card-version", h.ConnectorCardVersion != "" && h.ConnectorCardVersion == c.Connector.Version,
		fmt.Sprintf("connector_card_version %q, equal to the Card's connector.version (both present)", c.Connector.Version),
		fmt.Sprintf("/health connector_card_version %s, Card connector.version %s", present(h.ConnectorCardVersion), present(c.Connector.Version)), body)
}

// probeAPIKey checks that /health and /ws refuse a missing or wrong key.
func probeAPIKey(ctx context.Context, s *session, r *recorder) {
	wrong := "xconn-conformance-wrong-key"
	missing, err1 := s.get(ctx, protocol.PathHealth, "")
	bad, err2 := s.get(ctx, protocol.PathHealth, wrong)
	if err1 != nil || err2 != nil {
		r.fail("apikey.health", "401 or 403", fmt.Sprint(err1, err2), "")
	} else {
		refused := func(st int) bool { return st == http.StatusUnauthorized || st == http.StatusForbidden }
		r.check("apikey.health", refused(missing.status) && refused(bad.status), "401 or 403 for a missing and a wrong key",
			fmt.Sprintf("missing key: HTTP %d, wrong key: HTTP %d", missing.status, bad.status), "")
		// Section 4.3: "401 or 403 means system API key authentication
		// failed"; the text prescribes neither for either case.
		r.check("apikey.status-codes", refused(missing.status) && refused(bad.status),
			"401 or 403 for a missing key and for a wrong key", fmt.Sprintf("missing key: HTTP %d, wrong key: HTTP %d", missing.status, bad.status), "")
	}
	if r.want("apikey.ws") {
		var got []string
		ok := true
		for _, key := range []string{"", wrong} {
			c, resp, err := s.dial(ctx, []string{protocol.Subprotocol}, key)
			switch {
			case err == nil:
				s.track(c)
				ok = false
				got = append(got, "handshake accepted")
			case resp == nil:
				ok = false
				got = append(got, err.Error())
			default:
				ok = ok && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden)
				got = append(got, fmt.Sprintf("HTTP %d", resp.StatusCode))
			}
		}
		r.check("apikey.ws", ok, "401 or 403 for a missing and a wrong key", "missing key: "+got[0]+", wrong key: "+got[1], "")
	}
}

// probePrefix checks that the fixed endpoints answer under the path prefix.
func probePrefix(ctx context.Context, s *session, r *recorder) {
	var bad []string
	for _, p := range []string{protocol.PathCard, protocol.PathSkill, protocol.PathHealth} {
		res, err := s.get(ctx, p, s.opts.APIKey)
		switch {
		case err != nil:
			bad = append(bad, err.Error())
		case p == protocol.PathSkill && (res.status == 204 || res.status == 404):
		case res.status/100 != 2:
			bad = append(bad, fmt.Sprintf("%s%s: HTTP %d", s.base.Path, p, res.status))
		}
	}
	r.check("baseurl.prefix", len(bad) == 0, "2xx under "+s.base.Path, strings.Join(bad, "; "), "")
}

// probeSubprotocol checks the WebSocket subprotocol negotiation.
func probeSubprotocol(ctx context.Context, s *session, r *recorder) {
	c, resp, err := s.dial(ctx, []string{protocol.Subprotocol}, s.opts.APIKey)
	if err != nil {
		actual := err.Error()
		if resp != nil {
			actual = fmt.Sprintf("HTTP %d", resp.StatusCode)
		}
		r.fail("ws.subprotocol", "101 with Sec-WebSocket-Protocol "+protocol.Subprotocol, actual, "")
		r.skipRest("the /ws handshake failed")
		return
	}
	s.track(c).close()
	r.check("ws.subprotocol", c.c.Subprotocol() == protocol.Subprotocol, "subprotocol "+protocol.Subprotocol,
		fmt.Sprintf("subprotocol %q", c.c.Subprotocol()), "")
	c2, resp, err := s.dial(ctx, nil, s.opts.APIKey)
	if err == nil {
		s.track(c2).close()
		r.fail("ws.subprotocol-required", "the handshake is refused", "handshake accepted without a subprotocol", "")
		return
	}
	actual := err.Error()
	if resp != nil {
		actual = fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	r.check("ws.subprotocol-required", resp != nil && resp.StatusCode != http.StatusSwitchingProtocols, "the handshake is refused", actual, "")
}

// present quotes v, or says it is missing.
func present(v string) string {
	if v == "" {
		return "missing"
	}
	return fmt.Sprintf("%q", v)
}
