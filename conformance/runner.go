package conformance

import (
	"context"
	"fmt"
	"strings"
)

// probe is one scenario of the suite. It decides the requirements in ids;
// it runs only when at least one of them is selected and its capability is
// present.
type probe struct {
	ids []string
	// always runs the probe even when none of its requirements is selected,
	// because later probes need what it fetches.
	always bool
	run    func(ctx context.Context, s *session, r *recorder)
}

// recorder collects the results of one probe.
type recorder struct {
	s       *session
	wanted  map[string]bool
	results map[string]Result
}

// want reports whether id is still to be decided by the running probe.
func (r *recorder) want(id string) bool {
	if !r.wanted[id] {
		return false
	}
	_, done := r.results[id]
	return !done
}

func (r *recorder) any(ids ...string) bool {
	for _, id := range ids {
		if r.want(id) {
			return true
		}
	}
	return false
}

func (r *recorder) set(id string, res Result) {
	if r.want(id) {
		res.ID = id
		r.results[id] = res
	}
}

// note attaches what the suite adapted to to the verdict of id.
func (r *recorder) note(id, note string) {
	if res, ok := r.results[id]; ok {
		res.Note = note
		r.results[id] = res
	}
}

func (r *recorder) pass(id string) { r.set(id, Result{Status: Pass}) }

func (r *recorder) fail(id, expected, actual, packet string) {
	r.set(id, Result{Status: Fail, Expected: expected, Actual: r.s.redact(actual), Packet: packet})
}

func (r *recorder) skip(id, reason string) { r.set(id, Result{Status: Skip, Reason: reason}) }

// check records pass when ok, else a failure.
func (r *recorder) check(id string, ok bool, expected, actual, packet string) {
	if ok {
		r.pass(id)
	} else {
		r.fail(id, expected, actual, packet)
	}
}

// skipRest skips every undecided requirement of the probe.
func (r *recorder) skipRest(reason string) {
	for id := range r.wanted {
		r.skip(id, reason)
	}
}

// Check runs the suite against the Connector Server at baseURL and returns
// the report. It fails only when the run itself cannot start (a malformed
// Base URL or pattern, a canceled context); what the Connector does wrong is
// in the report. Concurrent calls share nothing and are safe.
func Check(ctx context.Context, baseURL string, opts Options) (*Report, error) {
	reqs, err := Select(opts.Only, opts.Skip)
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	s, err := newSession(baseURL, opts)
	if err != nil {
		return nil, err
	}
	s.ctx = ctx
	defer s.finish()
	if err := s.preflight(ctx); err != nil {
		return nil, err
	}
	selected := map[string]Requirement{}
	for _, rq := range reqs {
		selected[rq.ID] = rq
	}
	results := map[string]Result{}
	for _, p := range probes() {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("conformance: %w", err)
		}
		rec := &recorder{s: s, wanted: map[string]bool{}, results: map[string]Result{}}
		deferred := map[string]bool{}
		for _, id := range p.ids {
			rq, ok := selected[id]
			if !ok {
				continue
			}
			if !s.decidable(rq.Capability) {
				rec.wanted[id] = true // decided after the probe fetched what it depends on
				deferred[id] = true
				continue
			}
			if ok, why := s.has(rq.Capability); !ok {
				results[id] = Result{ID: id, Status: Skip, Reason: why}
				continue
			}
			if versionDependent[id] && s.version.outside {
				results[id] = Result{ID: id, Status: Skip, Reason: s.versionSkip()}
				continue
			}
			rec.wanted[id] = true
		}
		if len(rec.wanted) == 0 && !p.always {
			continue
		}
		p.run(ctx, s, rec)
		rec.skipRest("not reached: the scenario ended early" + s.lostReason())
		for id, res := range rec.results {
			if deferred[id] {
				if ok, why := s.has(selected[id].Capability); !ok {
					res = Result{ID: id, Status: Skip, Reason: why}
				}
			}
			results[id] = res
		}
	}
	rep := &Report{BaseURL: s.base.Redacted(), Strict: opts.Strict,
		ProtocolVersion: s.version.version, Headline: s.scrub(s.version.headline)}
	for _, rq := range reqs {
		res, ok := results[rq.ID]
		if !ok {
			res = Result{ID: rq.ID, Status: Skip, Reason: "no check implements this requirement"}
		}
		res.Section, res.Level, res.Statement = rq.Section, rq.Level, rq.Statement
		// Tokens learned late in the run (a download_url's sig, a QR
		// code) are redacted from what was recorded before.
		res.Expected, res.Actual, res.Packet = s.scrub(res.Expected), s.scrub(res.Actual), s.scrub(res.Packet)
		res.Reason, res.Note = s.scrub(res.Reason), s.scrub(res.Note)
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

// probes lists the scenarios in run order: HTTP first, then the data plane
// without and with a signed-in channel, then the requirements that hold for
// everything observed.
func probes() []probe {
	return []probe{
		{ids: cardIDs(), run: probeCard, always: true},
		{ids: []string{"skill.http", "skill.name", "card.related-skill-ids"}, run: probeSkill, always: true},
		{ids: []string{"version.window"}, run: probeVersion, always: true},
		{ids: []string{"health.http", "health.card-id", "health.protocol-version", "health.build", "health.card-version"}, run: probeHealth},
		{ids: []string{"apikey.health", "apikey.status-codes", "apikey.ws"}, run: probeAPIKey},
		{ids: []string{"baseurl.prefix"}, run: probePrefix},
		{ids: []string{"ws.subprotocol", "ws.subprotocol-required"}, run: probeSubprotocol},
		{ids: []string{"ws.first-packet-hello", "ws.hello-required-code"}, run: probeBeforeHello},
		{ids: []string{"ws.hello-version-missing", "ws.hello-version-old", "ws.hello-version-newer", "ws.hello-card-id-mismatch",
			"ws.hello-card-id-mismatch-code", "ws.hello-profiles-required", "ws.hello-connector-id-mismatch",
			"ws.hello-connector-id-mismatch-code"}, run: probeHelloRejections},
		{ids: mainIDs(), run: probeMain, always: true},
		{ids: []string{"envelope.invalid-json", "envelope.invalid-json-code", "envelope.missing-fields",
			"envelope.channel-id-required", "envelope.channel-id-required-code", "envelope.unsupported-type",
			"ping.pong", "ping.request-id"}, run: probeEnvelope},
		{ids: []string{"channel.unknown", "channel.unknown-code", "channel.close", "ws.hello-reconnect",
			"ws.hello-reconnect-same-id", "channel.reuse", "channel.not-owned", "channel.foreign-instance", "ws.hello-unknown-connector-id"}, run: probeChannels},
		{ids: []string{"auth.unknown-flow", "auth.not-open", "auth.unknown-session", "auth.qr-start", "auth.qr-refresh", "auth.cancel"}, run: probeAuthBasics},
		{ids: []string{"tool.unknown", "tool.unauthenticated", "tool.unauthenticated-code"}, run: probeToolsUnauth},
		{ids: []string{"imv2.channel-not-open"}, run: probeIMv2NotOpen},
		{ids: []string{"auth.authenticated"}, run: probeAuthenticate, always: true},
		{ids: []string{"transfer.download-unknown", "transfer.upload", "transfer.upload-channel", "apikey.uploads"}, run: probeTransfer},
		{ids: []string{"tool.invoke", "tool.progress-push", "tool.idempotency", "tool.idempotency-request-id"}, run: probeToolInvoke},
		{ids: []string{"imv2.ack-accepted", "imv2.ack-request-id", "imv2.ack-duplicate", "imv2.ack-conflict", "imv2.ack-invalid-payload",
			"imv2.final-with-file", "imv2.delta-final", "imv2.delta-gap"}, run: probeIMv2Chat},
		{ids: inboundIDs(), run: probeInbound},
		{ids: aggregateIDs(), run: probeAggregates},
		{ids: []string{"auth.logout"}, run: probeLogout},
	}
}

func mainIDs() []string {
	return []string{"ws.hello-ack", "channel.open-new", "channel.open-created", "descriptor.get"}
}

// needCard skips the probe when the Card could not be read; it reports
// whether the probe may go on.
func needCard(s *session, r *recorder) bool {
	if s.card == nil {
		r.skipRest("no usable Card: " + s.cardError)
		return false
	}
	return true
}

// needPrimary skips the probe when the main connection is not up.
func needPrimary(s *session, r *recorder) bool {
	if !needCard(s, r) {
		return false
	}
	if s.primary == nil || s.channelID == "" {
		r.skipRest(s.noPrimaryReason())
		return false
	}
	return true
}

// noPrimaryReason names why the main connection or channel is missing:
// what lost it, or the main probe's verdicts when it was never set up.
func (s *session) noPrimaryReason() string {
	if s.primaryLost != "" {
		return "no main channel: " + s.primaryLost
	}
	return "no hello-completed connection with an open channel (see ws.hello-ack and channel.open-new)"
}

// lostReason is ": <why>" when the main channel was lost during the run.
func (s *session) lostReason() string {
	if s.primaryLost != "" {
		return ": " + s.primaryLost
	}
	return ""
}

// describe renders an answer for a failure message.
func describe(f frame, err error) string {
	switch {
	case err != nil:
		return err.Error()
	case f.env == nil:
		return "a frame that is not a packet"
	case f.env.Error != nil:
		return fmt.Sprintf("%s with error %q", f.env.Type, f.env.Error.Code)
	}
	return f.env.Type
}

// rejection classifies the answer to a request that must be refused: an
// error packet or an ack with an error (code returned), or a closed
// connection (code ""). ok is false when the Connector accepted or stayed
// silent.
func rejection(f frame, err error) (code string, ok bool) {
	if err != nil {
		if _, closed := err.(*closedError); closed {
			return "", true
		}
		return "", false
	}
	if f.env == nil {
		return "", false
	}
	if f.env.Error != nil {
		return f.env.Error.Code, true
	}
	if f.env.Type == "error" {
		return "", true
	}
	return "", false
}

func oneOf(v string, set ...string) bool {
	for _, s := range set {
		if v == s {
			return true
		}
	}
	return false
}

func quoteList(xs []string) string { return strings.Join(xs, ", ") }
