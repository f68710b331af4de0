package host

import (
	"context"
	"slices"
	"time"

	"github.com/xconn/xconn/protocol"
)

// linkLoop keeps the data plane of one connector up: dial, hello, reopen the
// persisted channels, serve until the socket ends, then reconnect with a
// capped exponential backoff. After MaxReconnectFailures consecutive
// failures it stops until recover. It does not connect while the health
// monitor says the connector is incompatible.
func (rt *runtime) linkLoop(ctx context.Context) {
	defer rt.setLink(LinkClosed, "")
	for ctx.Err() == nil {
		if rt.blocked() {
			select {
			case <-ctx.Done():
				return
			case <-rt.kick:
			}
			continue
		}
		rt.setLink(LinkConnecting, "")
		s, err := rt.connect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			fails := rt.linkFailed(err)
			if fails >= rt.h.opts.MaxReconnectFailures {
				continue // blocked until recover
			}
			rt.sleep(ctx, rt.backoff(fails))
			continue
		}
		rt.serve(ctx, s)
		if ctx.Err() == nil {
			rt.setLink(LinkBackoff, "data plane closed")
			rt.sleep(ctx, rt.h.opts.ReconnectMin)
		}
	}
}

func (rt *runtime) blocked() bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.link == LinkStopped || rt.health == HealthIncompatible
}

func (rt *runtime) linkFailed(err error) int {
	rt.mu.Lock()
	rt.lfails++
	n := rt.lfails
	rt.mu.Unlock()
	st := LinkBackoff
	if n >= rt.h.opts.MaxReconnectFailures {
		st = LinkStopped
	}
	rt.h.log.Info("host: data plane connection failed", "card_id", rt.cardID, "attempt", n, "err", err)
	rt.setLink(st, err.Error())
	return n
}

func (rt *runtime) backoff(fails int) time.Duration {
	d := rt.h.opts.ReconnectMin
	for i := 1; i < fails && d < rt.h.opts.ReconnectMax; i++ {
		d *= 2
	}
	return min(d, rt.h.opts.ReconnectMax)
}

func (rt *runtime) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-rt.kick:
	}
}

// connect dials and completes hello; on failure the session is closed.
func (rt *runtime) connect(ctx context.Context) (*session, error) {
	s, err := rt.dial(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.hello(ctx); err != nil {
		s.close("hello failed")
		return nil, err
	}
	return s, nil
}

// serve installs a hello-completed session (replacing any previous one
// atomically), reopens the persisted channels, resumes their pending finals
// and waits for the socket to end.
func (rt *runtime) serve(ctx context.Context, s *session) {
	rt.mu.Lock()
	old := rt.sess
	newID := rt.entry.ConnectorID != s.connectorID
	rt.entry.ConnectorID = s.connectorID
	rt.sess = s
	rt.lfails = 0
	close(rt.online)
	rt.mu.Unlock()
	if old != nil {
		old.close("replaced")
	}
	if newID {
		rt.persist(ctx) // same record, new runtime instance id
	}
	rt.setLink(LinkOnline, "")
	rt.reopenAll(ctx, s)

	select {
	case <-s.done:
	case <-ctx.Done():
		s.stop()
	}
	rt.mu.Lock()
	if rt.sess == s {
		rt.sess = nil
		rt.online = make(chan struct{})
	}
	rt.mu.Unlock()
}

// dropSession closes the current session (for an incompatible connector).
func (rt *runtime) dropSession(reason string) {
	if s := rt.session(); s != nil {
		s.close(reason)
	}
}

// healthLoop probes /health every HealthInterval.
func (rt *runtime) healthLoop(ctx context.Context) {
	t := time.NewTicker(rt.h.opts.HealthInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rt.checkHealth(ctx)
		}
	}
}

// checkHealth runs one probe and moves the health state (section 4.3).
func (rt *runtime) checkHealth(ctx context.Context) {
	base, key, card := rt.view()
	r := rt.h.probeHealth(ctx, base, key, card)
	if ctx.Err() != nil {
		return
	}
	switch {
	case r.authFail:
		rt.setHealth(HealthAuthFailed, r.err.Error(), nil)
	case r.err != nil:
		rt.mu.Lock()
		rt.hfails++
		n := rt.hfails
		rt.mu.Unlock()
		st := HealthDegraded
		if n >= 3 {
			st = HealthOffline
		}
		rt.setHealth(st, r.err.Error(), nil)
	case r.cardIDBad:
		rt.setHealth(HealthIncompatible, r.mismatch.Error(), r.resp)
		rt.dropSession("incompatible connector")
	case r.refetch:
		rt.refetch(ctx)
	default:
		rt.setHealth(HealthOK, "", r.resp)
	}
	rt.persist(ctx)
}

// refetch reloads the Card and Skill after /health reported another
// version, protocol or build, then checks health against the new Card.
func (rt *runtime) refetch(ctx context.Context) {
	base, key, _ := rt.view()
	card, cardJSON, aerr := rt.h.fetchCard(ctx, base)
	if aerr == nil && card.ConnectorCardID != rt.cardID {
		aerr = refuse(ReasonHealthMismatch, nil, protocol.Violation{Path: "connector_card_id", Reason: "refetched Card has another connector_card_id"})
	}
	var skill []byte
	if aerr == nil {
		skill, aerr = rt.h.fetchSkill(ctx, base, card)
	}
	if aerr != nil {
		switch aerr.Reason {
		case ReasonUnsupportedVersion, ReasonInvalidCard, ReasonHealthMismatch, ReasonInvalidSkill:
			rt.setHealth(HealthIncompatible, aerr.Error(), nil)
			rt.dropSession("incompatible connector")
		default:
			rt.mu.Lock()
			rt.hfails++
			n := rt.hfails
			rt.mu.Unlock()
			st := HealthDegraded
			if n >= 3 {
				st = HealthOffline
			}
			rt.setHealth(st, aerr.Error(), nil)
		}
		return
	}
	rt.mu.Lock()
	e := rt.entry
	e.Card, e.Skill = cardJSON, skill
	oldProfiles := rt.card.Supports.Profiles
	rt.setEntry(e, card)
	rt.mu.Unlock()
	if !slices.Equal(oldProfiles, card.Supports.Profiles) {
		rt.dropSession("card profiles changed") // hello negotiates again
	}
	rt.h.emit(Event{Kind: EventCardRefresh, CardID: rt.cardID, Detail: "card version " + card.Connector.Version})
	r := rt.h.probeHealth(ctx, base, key, card)
	switch {
	case r.authFail:
		rt.setHealth(HealthAuthFailed, r.err.Error(), nil)
	case r.err != nil:
		rt.setHealth(HealthDegraded, r.err.Error(), nil)
	case len(r.mismatch) > 0:
		rt.setHealth(HealthIncompatible, r.mismatch.Error(), r.resp)
		rt.dropSession("incompatible connector")
	default:
		rt.setHealth(HealthOK, "", r.resp)
	}
}
