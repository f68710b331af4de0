package connector

import (
	"context"
	"time"

	"github.com/xconn/xconn/protocol"
)

// janitor is the server's one background loop: lease deadlines and the
// periodic sweep of sign-in sessions, files, tool-call records and the
// inbox. It runs until the server context ends.
func (s *Server) janitor() {
	ticker := time.NewTicker(s.opts.SweepInterval)
	defer ticker.Stop()
	for {
		var timer *time.Timer
		var timerC <-chan time.Time
		if next, ok := s.nextLeaseDeadline(); ok {
			timer = time.NewTimer(max(time.Until(next), 0))
			timerC = timer.C
		}
		select {
		case <-s.ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-ticker.C:
			s.sweep()
		case <-timerC:
		case <-s.wake:
		}
		if timer != nil {
			timer.Stop()
		}
		s.expireLeases()
	}
}

func (s *Server) nextLeaseDeadline() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next time.Time
	for _, l := range s.leases {
		if l.sockets == 0 && !l.until.IsZero() && (next.IsZero() || l.until.Before(next)) {
			next = l.until
		}
	}
	return next, !next.IsZero()
}

func (s *Server) sweep() {
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	s.sweepAuth(ctx)
	s.reclaimUnsigned(ctx)
	s.sweepFiles(ctx)
	if _, err := s.opts.Store.PruneToolCalls(ctx, s.card.ConnectorCardID, s.now().Add(-s.opts.ToolCallRetention), s.opts.MaxToolCalls); err != nil {
		s.log.Debug("connector: prune tool calls", "err", err)
	}
	if _, err := s.inbox.Prune(ctx); err != nil {
		s.log.Debug("connector: prune inbox", "err", err)
	}
}

// expireLeases unregisters every connector_id whose grace period passed
// and returns how many it unregistered.
func (s *Server) expireLeases() int {
	now := s.now()
	s.mu.Lock()
	var expired []string
	for id, l := range s.leases {
		if l.sockets == 0 && !l.until.IsZero() && !now.Before(l.until) {
			expired = append(expired, id)
			delete(s.leases, id) // a hello from now on gets a new connector_id
		}
	}
	s.mu.Unlock()
	for _, id := range expired {
		s.unregister(id)
	}
	return len(expired)
}

// unregister cascades a lease expiry: every channel of the connector_id
// signs out of its target (unbind hook), loses its sign-in sessions,
// pending messages and records, and is deleted; then the instance is.
func (s *Server) unregister(connectorID string) {
	ctx, cancel := s.bgContext()
	defer cancel()
	s.mu.Lock()
	var ids []string
	for id, cs := range s.channels {
		if cs.rec.ConnectorID == connectorID {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.deleteChannel(ctx, id)
	}
	if err := s.opts.Store.DeleteInstance(ctx, s.card.ConnectorCardID, connectorID); err != nil {
		s.log.Warn("connector: delete instance", "err", err)
	}
	s.metrics.leases.Inc()
	s.log.Info("connector: connector_id lease expired", "connector_id", connectorID, "channels", len(ids))
}

// deleteChannel removes one channel with everything it holds.
func (s *Server) deleteChannel(ctx context.Context, id string) {
	snap, err := s.channelState(id)
	if err != nil {
		return
	}
	if isAuthenticated(snap.rec.Status) || len(snap.rec.Binding) > 0 {
		s.runUnbind(ctx, &Channel{srv: s, id: id}, snap.binding, UnbindLeaseExpired)
	}
	s.auth.dropChannel(id)
	for _, ob := range []interface {
		DeleteChannel(context.Context, string) (int, error)
	}{s.outbox, s.outv1, s.inbox} {
		if _, err := ob.DeleteChannel(ctx, id); err != nil {
			s.log.Warn("connector: drop delivery state", "channel", id, "err", err)
		}
	}
	s.asm.DropChannel(id)
	if err := s.opts.Store.DeleteChannel(ctx, s.card.ConnectorCardID, id); err != nil {
		s.log.Warn("connector: delete channel", "channel", id, "err", err)
	}
	s.removeChannelFiles(id)
	s.mu.Lock()
	if cs, ok := s.channels[id]; ok && cs.open != nil {
		s.metrics.openChannels.Dec()
	}
	delete(s.channels, id)
	s.mu.Unlock()
}

// reclaimUnsigned deletes the channels without a sign-in (created or
// authenticating, no binding) whose last change is older than
// Options.UnsignedChannelTTL: a flood of channel.open that never signs in
// cannot fill the store's channel table for as long as its lease lives.
// Each is taken out of the channel table under Server.mu after its
// condition is checked again, so a sign-in that starts meanwhile either
// finds the channel gone (and fails as for any unknown channel) or keeps
// it.
func (s *Server) reclaimUnsigned(ctx context.Context) {
	cutoff := s.now().Add(-s.opts.UnsignedChannelTTL)
	stale := func(cs *chanState) bool {
		st := cs.rec.Status
		return (st == protocol.StatusCreated || st == protocol.StatusAuthenticating) &&
			len(cs.rec.Binding) == 0 && cs.rec.UpdatedAt.Before(cutoff)
	}
	s.mu.Lock()
	var ids []string
	for id, cs := range s.channels {
		if stale(cs) {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	n := 0
	for _, id := range ids {
		if ctx.Err() != nil {
			break
		}
		s.mu.Lock()
		cs, ok := s.channels[id]
		if !ok || !stale(cs) {
			s.mu.Unlock()
			continue
		}
		if cs.open != nil {
			s.metrics.openChannels.Dec()
		}
		delete(s.channels, id)
		s.mu.Unlock()
		s.auth.dropChannel(id)
		for _, ob := range []interface {
			DeleteChannel(context.Context, string) (int, error)
		}{s.outbox, s.outv1, s.inbox} {
			if _, err := ob.DeleteChannel(ctx, id); err != nil {
				s.log.Debug("connector: drop delivery state", "channel", id, "err", err)
			}
		}
		s.asm.DropChannel(id)
		if err := s.opts.Store.DeleteChannel(ctx, s.card.ConnectorCardID, id); err != nil {
			s.logLimited("reclaim_failed", "connector: delete a channel without sign-in", "err", err)
		}
		s.removeChannelFiles(id)
		s.metrics.unsignedReclaimed.Inc()
		n++
	}
	if n > 0 {
		s.log.Info("connector: channels without a sign-in reclaimed", "channels", n, "ttl", s.opts.UnsignedChannelTTL.String())
	}
}
