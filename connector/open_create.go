package connector

import (
	"context"
	"errors"

	"github.com/xconn/xconn/internal/signurl"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// Creating channels concurrently.
//
// A first channel.open (empty connector_channel_id) has no channel yet, so
// the read loop routes it to the socket's control queue, whose one worker
// runs packets one after the other. Each creation is a durable write; run
// one by one, every write pays a commit of its own. So the control worker
// only starts the creation: it runs on a goroutine of its own that takes a
// channel-worker slot (Options.Workers bounds them per socket, like any
// channel work) and the store's group committer turns the writes that are
// in flight at the same moment into one transaction. When every slot is
// busy the control worker creates the channel itself, as before: it never
// waits for a slot, so channel work cannot starve the control queue, and a
// flood of opens is held back by the control queue's bound.
//
// First opens carry no order among themselves (each answer is routed by
// its request_id), and a new channel is known to nobody before its ack, so
// no packet of the channel can overtake its creation.

// openNew creates a channel for env, concurrently when env came through the
// control queue and a worker slot is free.
func (sess *session) openNew(env *protocol.Envelope) {
	if env.ConnectorChannelID == "" {
		select {
		case sess.sem <- struct{}{}:
			// The caller is a worker of sess, so sess.wg is above zero
			// and serveWS waits for this goroutine before it detaches.
			sess.wg.Go(func() {
				defer func() { <-sess.sem }()
				sess.createChannel(env)
			})
			return
		default:
		}
	}
	sess.createChannel(env)
}

// createChannel assigns, persists and registers a new channel of this
// socket's connector_id and answers env with its created Descriptor. A
// panic is answered as process answers one.
func (sess *session) createChannel(env *protocol.Envelope) {
	s := sess.srv
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("connector: packet handler panicked", "type", typeOf(env))
			sess.sendError(env, protocol.Errorf(protocol.CodeInternal, "internal error"))
		}
	}()
	now := s.now()
	rec := store.Channel{
		CardID: s.card.ConnectorCardID, ChannelID: signurl.RandomID("cch_"), ConnectorID: sess.connector(),
		Status: protocol.StatusCreated, CreatedAt: now, UpdatedAt: now,
	}
	if err := s.persistNew(sess, rec); err != nil {
		code := protocol.CodeInternal
		if errors.Is(err, store.ErrLimit) {
			// A full channel table refuses every open alike: one line
			// every logEvery, not one per refused open.
			code = protocol.CodeConnectorChannelUnavailable
			s.logLimited("channel_limit", "connector: channel.open refused: the store's channel table is full", "err", err)
		} else {
			s.log.Error("connector: persist channel", "err", err)
		}
		sess.sendError(env, protocol.Errorf(code, "cannot create a channel"))
		return
	}
	s.mu.Lock()
	s.channels[rec.ChannelID] = &chanState{rec: rec, open: sess}
	s.mu.Unlock()
	s.metrics.openChannels.Inc()
	s.metrics.channelsCreated.Inc()
	// A new connector_channel_id has no outbox entries: no delivery to resume.
	sess.ackOpen(env, rec.ChannelID)
}

// channelCreator is the optional interface of a store that inserts a new
// channel in one step (*store.DB does): cheaper than PutChannel, which
// first tries to update an existing record.
type channelCreator interface {
	CreateChannel(ctx context.Context, ch store.Channel) error
}

// persistNew stores the new channel rec.
func (s *Server) persistNew(sess *session, rec store.Channel) error {
	if cc, ok := s.opts.Store.(channelCreator); ok {
		return cc.CreateChannel(sess.ctx, rec)
	}
	return s.opts.Store.PutChannel(sess.ctx, rec)
}
