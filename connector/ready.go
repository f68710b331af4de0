package connector

import (
	"context"
	"errors"
	"fmt"
)

// ErrStoreUnavailable is what Ready wraps when the store does not answer.
var ErrStoreUnavailable = errors.New("connector: store unavailable")

// Ready reports whether the server can serve, for a readiness probe (an
// orchestrator's or load balancer's /readyz): nil once Start has run and
// until Close, while its store answers and its schema is the one this
// binary expects. It returns ErrNotStarted or ErrClosed outside that
// span; when the store has a Ping(ctx) error method it must answer, and
// when it has a CheckSchema(ctx) error method (as *store.DB has both) its
// schema must be applied. A store failure is wrapped without the store's
// address or credentials. It costs at most two store round trips and is
// safe for concurrent use.
//
// Ready says nothing about the targets a connector talks to: a target
// that is down makes tool calls fail, not the connector unready, since a
// standby would fare no better.
func (s *Server) Ready(ctx context.Context) error {
	if err := s.liveErr(); err != nil {
		return err
	}
	s.mu.Lock()
	st := any(s.opts.Store)
	s.mu.Unlock()
	if p, ok := st.(interface{ Ping(context.Context) error }); ok {
		if err := p.Ping(ctx); err != nil {
			return fmt.Errorf("%w: ping failed", ErrStoreUnavailable)
		}
	}
	if c, ok := st.(interface{ CheckSchema(context.Context) error }); ok {
		if err := c.CheckSchema(ctx); err != nil {
			return err
		}
	}
	return nil
}
