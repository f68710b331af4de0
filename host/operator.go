package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/xconn/xconn/delivery"
)

// ChannelQueue is the depth of one user channel's queues at one moment,
// for an operator's view.
type ChannelQueue struct {
	// Inbound counts the chat packets received on the channel and waiting
	// for its ordered worker (in memory; at most Options.InboundQueue).
	Inbound int
	// Outbox counts the assistant finals of the channel waiting in the
	// durable outbox to be sent, counted up to the limit passed.
	Outbox int
	// OutboxCapped reports that the count stopped at the limit: there may
	// be more.
	OutboxCapped bool
}

// outboxWalker is the delivery storage that can read one channel's pending
// entries in order (*store.DB and *delivery.MemoryStorage).
type outboxWalker interface {
	delivery.OutboxHeadStorage
	delivery.OutboxAfterStorage
}

// ChannelQueue returns the queue depths of the user channel with id
// userChannelID, counting at most limit outbox entries (limit <= 0: 100).
// The outbox count fails with errors.ErrUnsupported when Options.Delivery
// cannot read a channel's pending entries in order.
func (h *Host) ChannelQueue(ctx context.Context, userChannelID string, limit int) (ChannelQueue, error) {
	if limit <= 0 {
		limit = 100
	}
	uc, err := h.st.GetUserChannel(ctx, userChannelID)
	if err != nil {
		return ChannelQueue{}, fmt.Errorf("host: channel queue %s: %w", userChannelID, err)
	}
	var q ChannelQueue
	if rt := h.runtime(uc.CardID); rt != nil {
		if s := rt.session(); s != nil {
			s.mu.Lock()
			if w := s.workers[uc.ChannelID]; w != nil {
				q.Inbound = len(w)
			}
			s.mu.Unlock()
		}
	}
	w, ok := h.opts.Delivery.(outboxWalker)
	if !ok {
		return q, fmt.Errorf("host: channel queue %s: outbox count: %w", userChannelID, errors.ErrUnsupported)
	}
	queue := h.outbox.Queue()
	e, ok, err := w.OutboxHead(ctx, queue, userChannelID)
	for ; err == nil && ok; e, ok, err = w.OutboxAfter(ctx, queue, userChannelID, e.Seq) {
		if q.Outbox == limit {
			q.OutboxCapped = true
			break
		}
		q.Outbox++
	}
	if err != nil {
		return q, fmt.Errorf("host: channel queue %s: %w", userChannelID, err)
	}
	return q, nil
}

// UserID returns the user the sign-in is for.
func (s *Signin) UserID() string { return s.userID }

// CardID returns the connector the sign-in runs on.
func (s *Signin) CardID() string { return s.rt.cardID }
