package connector

import (
	"errors"
	"time"

	"github.com/xconn/xconn/protocol"
)

// handleOpen answers channel.open (section 8.3). A known channel of this
// connector_id is reused: the open only moves its route to this socket,
// nothing durable changes, so nothing is written. A known channel of
// another connector_id is re-adopted or refused (see openAdopt). Any other
// open creates and persists a new channel (see openNew).
func (sess *session) handleOpen(env *protocol.Envelope) {
	s := sess.srv
	cid := sess.connector()
	id := env.ConnectorChannelID
	s.mu.Lock()
	cs, ok := s.channels[id]
	known := ok && id != ""
	reuse := known && cs.rec.ConnectorID == cid
	resume := false
	if reuse {
		if cs.open != sess {
			if cs.open == nil {
				s.metrics.openChannels.Inc()
			}
			cs.open = sess
		}
		resume = cs.takeDeferred()
	}
	s.mu.Unlock()
	switch {
	case known && !reuse:
		sess.openAdopt(env)
		return
	case !reuse:
		sess.openNew(env)
		return
	}
	sess.ackOpen(env, id)
	if resume {
		s.resumeDelivery(id)
	}
}

// Re-adopting a channel of a replaced runtime instance.
//
// connector_channel_id is persistent and "does not change when
// connector_id changes. After the runtime instance is replaced, xAgent
// restores routing with the original Channel ID" (architecture section 5),
// and the Connector owns "the current connector_id ownership of those
// channels" (architecture section 10). A hello that gets a new connector_id
// from the same API key and Card is such a replacement: xAgent keeps one
// ConnectorClient per connector_card_id (section 8.2) and "MUST atomically
// replace the whole ConnectorClient and close the old instance"
// (architecture section 4). So a channel.open naming a channel of another
// connector_id moves the channel to this socket's connector_id, binding,
// status, tool overrides and pending messages intact, and persists the new
// owner - but only while that is what the spec describes:
//
//   - the old connector_id still has a socket that completed hello: it is a
//     live instance, not a replaced one, and its channels are not ours
//     ("connector_channel_connector_mismatch: connector_channel_id does not
//     belong to the current Connector Card or Tool source", section 8.23;
//     "Connector must validate connector_id, connector_channel_id ... on the
//     server", section 3). Refused with that error; nothing changes.
//   - the old connector_id's lease expired: "One continuous offline hour
//     must unregister the connector_id", cascading "to every Channel"
//     (section 8.2); its channels are being deleted, so the id is no longer
//     recognised and, as "If Connector cannot recognize the old channel, it
//     can assign a new connector_channel_id" (section 8.3), a new channel is
//     created.
//   - otherwise (the old instance is in its grace period, or was restored
//     at start and nobody said hello for it) the channel is re-adopted.
//
// The trust boundary is the system API key and the Card: the socket passed
// the key and completed hello for this connector_card_id, which is what
// makes it xAgent; connector_channel_id itself is never a credential
// (section 3), it only names which of this Card's channels to route.
// Only channel.open re-adopts: any other packet on a channel of another
// connector_id is still answered connector_channel_connector_mismatch
// (checkChannel), as the channel must first be restored with channel.open.
//
// Adoption and the lease expiry exclude each other: the move happens under
// Server.mu together with the check that the old lease still exists, and
// expireLeases removes the lease under Server.mu before unregister collects
// the channels of the expired connector_id, so a channel is either moved
// (and never collected) or collected (and never moved).

// errAdoptExpired reports that the channel's connector_id lease expired.
var errAdoptExpired = errors.New("connector: the channel's connector_id lease expired")

// openAdopt answers a channel.open naming a known channel of another
// connector_id: re-adopted, refused or, when that instance expired, a new
// channel (see above).
func (sess *session) openAdopt(env *protocol.Envelope) {
	s := sess.srv
	id, cid := env.ConnectorChannelID, sess.connector()
	var old string
	resume := false
	_, err := s.update(sess.ctx, id, func(cs *chanState) error {
		// Checked again here, under the locks: another socket of ours
		// may have adopted it meanwhile.
		if cs.rec.ConnectorID != cid {
			if err := s.adoptable(cs, id, sess); err != nil {
				return err
			}
		}
		old = cs.rec.ConnectorID
		cs.rec.ConnectorID = cid
		if cs.open != sess {
			if cs.open == nil {
				s.metrics.openChannels.Inc()
			}
			cs.open = sess
		}
		resume = cs.takeDeferred()
		return nil
	})
	var perr *protocol.Error
	switch {
	case errors.Is(err, errAdoptExpired) || isChannelNotFound(err):
		sess.openNew(env) // no longer recognised (section 8.3)
		return
	case errors.As(err, &perr) && perr.Code == protocol.CodeConnectorChannelConnectorMismatch:
		sess.sendError(env, perr)
		return
	case err != nil:
		// The move stands in memory (the route is open here) but its
		// durable copy failed: answer so that xAgent opens again.
		s.log.Error("connector: persist re-adopted channel", "channel", id, "err", err)
		sess.sendError(env, protocol.Errorf(protocol.CodeInternal, "cannot move channel %s to this connector_id", id))
		return
	}
	if old != cid {
		s.log.Info("connector: channel re-adopted by a new connector_id", "channel", id, "from", old, "connector_id", cid)
	}
	sess.ackOpen(env, id)
	if resume {
		s.resumeDelivery(id)
	}
}

// adoptable reports whether channel id (cs) may move to the connector_id
// of sess: errAdoptExpired when its own lease expired, a
// connector_channel_connector_mismatch error when its instance is live.
// The caller holds Server.mu.
func (s *Server) adoptable(cs *chanState, id string, sess *session) error {
	l := s.leases[cs.rec.ConnectorID]
	switch {
	case l == nil:
		return errAdoptExpired
	case l.sockets > 0 || (cs.open != nil && cs.open != sess):
		return protocol.Errorf(protocol.CodeConnectorChannelConnectorMismatch,
			"channel %s belongs to another connector_id that is still connected", id)
	}
	return nil
}

// isChannelNotFound reports a connection_not_found error (the channel was
// deleted).
func isChannelNotFound(err error) bool {
	var perr *protocol.Error
	return errors.As(err, &perr) && perr.Code == protocol.CodeConnectionNotFound
}

// ackOpen sends channel.open.ack with the channel's Descriptor.
func (sess *session) ackOpen(env *protocol.Envelope, id string) {
	s := sess.srv
	d, err := s.descriptor(sess.ctx, id)
	if err != nil {
		s.log.Error("connector: descriptor", "channel", id, "err", err)
		sess.sendError(env, protocol.Errorf(protocol.CodeInternal, "cannot compute the descriptor"))
		return
	}
	// The usual Descriptor: the whole frame in one pass (open_encode.go).
	var frame []byte
	ok := !hasExtensions(d)
	if ok {
		frame, ok = encodeOpenAckFrame(env, sess.packetID(), time.Now().UnixMilli(), id, d)
	}
	if !ok {
		ack := env.Reply(protocol.TypeChannelOpenAck)
		ack.ConnectorChannelID = id
		sess.replyEnv(ack, protocol.ChannelOpenAckPayload{ConnectorChannelID: id, ConnectionDescriptor: d})
		return
	}
	if err := sess.conn.SendRaw(sess.ctx, frame); err != nil {
		s.log.Debug("connector: send failed", "type", protocol.TypeChannelOpenAck, "err", err)
		return
	}
	s.metrics.packetOut(protocol.TypeChannelOpenAck)
}

func (sess *session) handleClose(env *protocol.Envelope) {
	s := sess.srv
	s.mu.Lock()
	if cs, ok := s.channels[env.ConnectorChannelID]; ok && cs.open == sess {
		cs.open = nil
		s.metrics.openChannels.Dec()
	}
	s.mu.Unlock()
	sess.reply(env, protocol.TypeChannelCloseAck, protocol.StatusPayload{Status: "ok"})
}

func (sess *session) handleDescriptorGet(env *protocol.Envelope) {
	s := sess.srv
	d, err := s.descriptor(sess.ctx, env.ConnectorChannelID)
	if err != nil {
		s.log.Error("connector: descriptor", "channel", env.ConnectorChannelID, "err", err)
		sess.replyError(env, protocol.TypeDescriptorGetAck, protocol.Errorf(protocol.CodeInternal, "cannot compute the descriptor"))
		return
	}
	sess.reply(env, protocol.TypeDescriptorGetAck, protocol.DescriptorPayload{ConnectionDescriptor: d})
}
