package connector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/xconn/xconn/internal/signurl"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// lease is the runtime state of one connector_id (section 8.2).
type lease struct {
	pmu        sync.Mutex // serialises persistLease
	sockets    int        // hello-completed sockets
	until      time.Time  // grace deadline while sockets == 0
	negotiated *protocol.Negotiated
	client     string // host of the socket that created it ("" when restored), for logs
}

func (sess *session) handleHello(env *protocol.Envelope) {
	s := sess.srv
	var p protocol.HelloPayload
	if err := env.DecodePayload(&p); err != nil {
		sess.reject(env, protocol.Errorf(protocol.CodeInvalidPacket, "connector.hello payload: malformed"))
		return
	}
	if sess.helloDone.Load() {
		cur := sess.connector()
		if p.ConnectorID != "" && p.ConnectorID != cur {
			sess.sendError(env, protocol.Errorf(protocol.CodeConnectorIDMismatch, "this connection completed hello as another connector_id"))
			return
		}
		sess.reply(env, protocol.TypeHelloAck, protocol.HelloAckPayload{
			ConnectorCardID: s.card.ConnectorCardID, ConnectorID: cur, ProtocolVersion: s.card.ProtocolVersion,
		})
		return
	}
	switch {
	case p.ConnectorCardID != s.card.ConnectorCardID:
		sess.reject(env, protocol.Errorf(protocol.CodeConnectorCardIDMismatch,
			"connector_card_id %q does not match this Connector", p.ConnectorCardID))
		return
	case admitHelloVersion(p.ProtocolVersion) != nil:
		sess.reject(env, admitHelloVersion(p.ProtocolVersion))
		return
	case len(p.SupportedProfiles) == 0:
		sess.reject(env, protocol.Errorf(protocol.CodeInvalidPacket, "supported_profiles is required"))
		return
	}
	neg := protocol.Negotiate(s.card, p.SupportedProfiles)
	if neg.Empty() {
		sess.reject(env, protocol.Errorf(protocol.CodeInvalidPacket,
			"no profile in supported_profiles is declared by this Connector"))
		return
	}
	id, err := s.admitInstance(sess.ctx, p.ConnectorID, sess.client, neg)
	switch {
	case errors.Is(err, errInstanceTableFull):
		sess.rejectWith(env, protocol.Errorf(protocol.CodeCapacityExceeded,
			"this Connector holds its maximum of connector_ids, each within its one-hour reconnection grace: "+
				"reconnect with a connector_id it issued, or retry after a grace ends"), websocket.StatusTryAgainLater)
		return
	case err != nil:
		s.log.Error("connector: admit instance", "err", err)
		sess.reject(env, protocol.Errorf(protocol.CodeInternal, "cannot register the connector_id"))
		return
	}
	sess.mu.Lock()
	sess.connectorID, sess.neg = id, neg
	sess.mu.Unlock()
	sess.helloDone.Store(true)
	sess.reply(env, protocol.TypeHelloAck, protocol.HelloAckPayload{
		ConnectorCardID: s.card.ConnectorCardID, ConnectorID: id, ProtocolVersion: s.card.ProtocolVersion,
	})
	s.log.Info("connector: hello", "connector_id", id, "profiles", neg.Profiles())
}

// admitHelloVersion checks xAgent's protocol_version in connector.hello.
// Section 8.1: "A current Connector must reject a hello that omits a version
// or is below the supported version"; section 12: hello "does not exchange
// version lists or negotiate another version", each peer declares its own.
// So a missing, malformed or lower version is refused and a newer one (3.1,
// 4.0) is admitted: the ack answers with the Connector's own version, and
// the [minimum, current] window is xAgent's catalog admission, not ours.
func admitHelloVersion(s string) *protocol.Error {
	if strings.TrimSpace(s) == "" {
		return protocol.Errorf(protocol.CodeUnsupportedProtocolVersion,
			"protocol_version is missing (parsed as 1.0, below %s)", protocol.MinimumVersion())
	}
	v, err := protocol.ParseVersion(s)
	if err != nil {
		return &protocol.Error{Code: protocol.CodeUnsupportedProtocolVersion, Message: err.Error()}
	}
	if v.Less(protocol.MinimumVersion()) {
		return protocol.Errorf(protocol.CodeUnsupportedProtocolVersion,
			"protocol version %s is below the supported minimum %s", v, protocol.MinimumVersion())
	}
	return nil
}

// admitInstance restores a known connector_id or issues a new one, takes a
// socket reference on its lease and persists it.
//
// When the store's instance table is full (store.ErrLimit) it first
// unregisters the instances whose one-hour grace has passed (what the
// janitor does at its next wake) and tries once more; it never evicts an
// instance within its grace, since section 8.2 lets a reconnect with that
// connector_id during the grace cancel its expiry. A table still full is
// a refusal of the new instance: errInstanceTableFull, which the hello
// answers with capacity_exceeded. A known connector_id is always admitted
// (its row exists), so an xAgent that reconnects with its id is never
// locked out by a full table.
func (s *Server) admitInstance(ctx context.Context, want, client string, neg *protocol.Negotiated) (string, error) {
	id, err := s.admitOnce(ctx, want, client, neg)
	if err == nil || !errors.Is(err, store.ErrLimit) {
		return id, err
	}
	if s.expireLeases() > 0 {
		id, err = s.admitOnce(ctx, want, client, neg)
		if err == nil || !errors.Is(err, store.ErrLimit) {
			return id, err
		}
	}
	s.metrics.instancesRefused.Inc()
	s.logLimited("instance_table_full", "connector: instance table full: a hello for a new connector_id refused (every connector_id is within its grace)",
		"client", client)
	return "", fmt.Errorf("%w: %w", errInstanceTableFull, err)
}

// errInstanceTableFull marks a hello refused because every row of the
// instance table holds a connector_id within its grace (section 8.2).
var errInstanceTableFull = errors.New("connector: instance table full")

func (s *Server) admitOnce(ctx context.Context, want, client string, neg *protocol.Negotiated) (string, error) {
	s.mu.Lock()
	id := want
	l, known := s.leases[id]
	if id == "" || !known {
		id = signurl.RandomID("conn_")
		l = &lease{client: client}
		s.leases[id] = l
	}
	l.sockets++
	l.until = time.Time{}
	l.negotiated = neg
	s.mu.Unlock()
	s.wakeJanitor()
	if err := s.persistLease(ctx, id); err != nil {
		if id != want || !known {
			s.mu.Lock()
			delete(s.leases, id) // a new id that was never stored leaves nothing behind
			s.mu.Unlock()
		} else {
			s.releaseInstance(id)
		}
		return "", err
	}
	return id, nil
}

// persistLease writes the current in-memory lease state of id to the
// store. Writes of one lease are serialised and each writes the state as it
// is when it runs, so the store ends with the latest state whatever the
// order of the socket events.
func (s *Server) persistLease(ctx context.Context, id string) error {
	s.mu.Lock()
	l, ok := s.leases[id]
	s.mu.Unlock()
	if !ok {
		return nil // expired meanwhile; unregister owns the record
	}
	l.pmu.Lock()
	defer l.pmu.Unlock()
	in, err := s.opts.Store.GetInstance(ctx, s.card.ConnectorCardID, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		in = store.Instance{CardID: s.card.ConnectorCardID, ConnectorID: id, CreatedAt: s.now()}
	case err != nil:
		return fmt.Errorf("load instance: %w", err)
	}
	s.mu.Lock()
	if s.leases[id] != l {
		s.mu.Unlock()
		return nil
	}
	in.GraceUntil = time.Time{}
	if l.sockets == 0 {
		in.GraceUntil = l.until
	}
	s.mu.Unlock()
	if err := s.opts.Store.PutInstance(ctx, in); err != nil {
		return fmt.Errorf("persist instance: %w", err)
	}
	return nil
}

// releaseInstance drops a socket reference; the last one starts the grace
// period, persisted so that a restart keeps the deadline.
func (s *Server) releaseInstance(id string) {
	s.mu.Lock()
	l, ok := s.leases[id]
	if !ok {
		s.mu.Unlock()
		return
	}
	l.sockets--
	if l.sockets > 0 {
		s.mu.Unlock()
		return
	}
	l.sockets = 0
	l.until = s.now().Add(s.opts.LeaseGrace)
	s.mu.Unlock()
	s.wakeJanitor()

	ctx, cancel := s.bgContext()
	defer cancel()
	if err := s.persistLease(ctx, id); err != nil {
		s.log.Warn("connector: persist lease grace", "connector_id", id, "err", err)
	}
}

// detach unregisters a closed socket: its channels are no longer open and
// its connector_id loses a socket reference.
func (s *Server) detach(sess *session) {
	s.mu.Lock()
	delete(s.sockets, sess)
	for _, cs := range s.channels {
		if cs.open == sess {
			cs.open = nil
			s.metrics.openChannels.Dec()
		}
	}
	s.mu.Unlock()
	if sess.helloDone.Load() {
		s.releaseInstance(sess.connector())
	}
}

// bgContext is a bounded context that survives the server's cancellation,
// for bookkeeping writes during shutdown.
func (s *Server) bgContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(s.ctx), 5*time.Second)
}
