package connector

import (
	"context"

	"github.com/xconn/xconn/delivery"
)

// Resuming delivery on (re)open, only when there is something to resume.
//
// Outbox.Resume moves a channel's pending entries that wait for a later
// attempt (next_attempt in the future) back to now and wakes the delivery
// loop; it is a store write and a read of every due head. Only a
// temporary failure of an attempt gives an entry a future attempt time
// (the outbox records it with OutboxRetry): Enqueue makes an entry due at
// once and tells the loop, and only a channel's head is ever attempted, so
// the entries behind it are due when they become the head. A channel
// therefore needs a Resume on open only while the last attempt of its head
// failed temporarily, or, once, when it was restored at Start while the
// outboxes held entries of the previous run.
//
// The outboxes' send functions are wrapped (trackSend) to keep that state
// per channel and queue: a temporary failure sets the queue's mark before
// the outbox records the retry; a delivery or a terminal failure (the head
// is finished) clears it. An open does not clear it: while the head keeps
// failing, every open resumes, exactly as every open used to, so a retry
// recorded after an open's Resume is caught by the next open as before.

// Marks of chanState.deferred.
const (
	deferIMv2     uint8 = 1 << iota // the IM v2 head's last attempt failed temporarily
	deferIMv1                       // the IM v1 head's last attempt failed temporarily
	deferRestored                   // restored at Start with entries pending in the store
)

// takeDeferred reports whether the channel needs its delivery resumed. It
// clears the restored mark, which one Resume settles. The caller holds
// Server.mu.
func (cs *chanState) takeDeferred() bool {
	need := cs.deferred != 0
	cs.deferred &^= deferRestored
	return need
}

// trackSend wraps an outbox's send function to keep the channel's mark
// for the outbox's queue (see above). The result is safe for concurrent
// use as send is.
func (s *Server) trackSend(mark uint8, send delivery.SendFunc) delivery.SendFunc {
	return func(ctx context.Context, e delivery.Entry) error {
		err := send(ctx, e)
		s.mu.Lock()
		if cs := s.channels[e.Channel]; cs != nil {
			if err != nil && delivery.IsTemporary(err) {
				cs.deferred |= mark
			} else {
				cs.deferred &^= mark
			}
		}
		s.mu.Unlock()
		return err
	}
}

// outboxesEmpty reports whether both outboxes have no pending entry, so
// that no channel restored at Start needs its delivery resumed. A failed
// count reports false (resume on the first open, as always).
func (s *Server) outboxesEmpty(ctx context.Context) bool {
	for _, q := range []string{queueIMv2, queueIMv1} {
		if n, err := s.dstore.OutboxPending(ctx, q); err != nil || n > 0 {
			return false
		}
	}
	return true
}
