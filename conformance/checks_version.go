package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/xconn/xconn/protocol"
)

// versionState is the version verdict of a run: the protocol version the
// Connector speaks, read from the Card, /health and connector.hello.ack.
type versionState struct {
	decided bool
	// outside is true when a version the Connector declares lies outside
	// the admission window [protocol.MinimumVersion, protocol.Current].
	outside  bool
	version  string // the version the headline names ("1.0" for a missing one)
	headline string
}

// versionSource is one place the Connector declares its version.
type versionSource struct {
	where string // "Card", "/health", "connector.hello.ack"
	raw   string // as declared; "" when missing
}

// versionDependent are the requirements that hold only for a Connector
// within the 3.0 window: how a 3.0 Connector treats a 3.0 hello. Outside the
// window they are skipped with the version verdict as the reason.
var versionDependent = map[string]bool{
	"ws.hello-version-missing":       true,
	"ws.hello-version-old":           true,
	"ws.hello-version-newer":         true,
	"ws.hello-profiles-required":     true,
	"descriptor.profiles-negotiated": true,
}

// probeVersion decides the version verdict first: protocol_version of the
// Card, of /health and of connector.hello.ack, a missing one being 1.0
// (section 12); outside the window it sets the report's headline.
func probeVersion(ctx context.Context, s *session, r *recorder) {
	if !needCard(s, r) {
		return
	}
	sources := []versionSource{{where: "Card", raw: s.card.ProtocolVersion}}
	if res, err := s.get(ctx, protocol.PathHealth, s.opts.APIKey); err == nil && res.status/100 == 2 {
		var h struct {
			ProtocolVersion *string `json:"protocol_version"`
		}
		if json.Unmarshal(res.body, &h) == nil {
			v := ""
			if h.ProtocolVersion != nil {
				v = *h.ProtocolVersion
			}
			sources = append(sources, versionSource{where: "/health", raw: v})
		}
	}
	if c, err := s.openHello(ctx, ""); err == nil {
		sources = append(sources, versionSource{where: "connector.hello.ack", raw: c.helloAck.ProtocolVersion})
		c.close()
	}
	min, cur := protocol.MinimumVersion(), protocol.Current()
	window := fmt.Sprintf("[%s, %s]", min, cur)
	var parts, bad []string
	var first *versionSource
	for i, src := range sources {
		v, err := protocol.ParseVersion(src.raw)
		desc := src.where + " " + fmt.Sprintf("%q", src.raw)
		switch {
		case err != nil:
			desc += " (does not parse)"
		case src.raw == "":
			desc = src.where + " " + v.String() + " (protocol_version missing: 1.0 by §12)"
		default:
			desc = src.where + " " + v.String()
		}
		parts = append(parts, desc)
		if err != nil || protocol.Admit(v, min, cur) != nil {
			bad = append(bad, desc)
			if first == nil {
				first = &sources[i]
			}
		}
	}
	s.version.decided = true
	actual := strings.Join(parts, ", ")
	if first == nil {
		v, _ := protocol.ParseVersion(sources[0].raw)
		s.version.version = v.String()
		s.version.headline = fmt.Sprintf("Protocol %s, within the %s window of xAgent 3.0 (§12): %s.", v, window, actual)
		r.pass("version.window")
		return
	}
	v, err := protocol.ParseVersion(first.raw)
	s.version.outside = true
	s.version.version = v.String()
	if err != nil {
		s.version.version = first.raw
	}
	how := ""
	if first.raw == "" {
		how = " (no protocol_version, which §12 reads as 1.0)"
	}
	s.version.headline = fmt.Sprintf("This Connector speaks protocol %s%s, outside the %s window of xAgent 3.0 (§12): "+
		"xAgent would not admit it; only the checks that still apply to it were run.", s.version.version, how, window)
	r.fail("version.window", "protocol_version within "+window+" in the Card, /health and connector.hello.ack", actual, "")
}

// versionSkip is the reason a version-dependent requirement is skipped.
func (s *session) versionSkip() string {
	return fmt.Sprintf("the Connector speaks protocol %s, outside the 3.0 window (see version.window, §12): this 3.0 rule does not apply to it", s.version.version)
}
