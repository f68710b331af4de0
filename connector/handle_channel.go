package connector

import (
	"time"

	"github.com/xconn/xconn/protocol"
)

// handleOpen answers channel.open (section 8.3). A known channel of this
// connector_id is reused: the open only moves its route to this socket,
// nothing durable changes, so nothing is written. Any other open creates
// and persists a new channel (see openNew).
func (sess *session) handleOpen(env *protocol.Envelope) {
	s := sess.srv
	cid := sess.connector()
	id := env.ConnectorChannelID
	s.mu.Lock()
	cs, ok := s.channels[id]
	reuse := ok && id != "" && cs.rec.ConnectorID == cid
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
	if !reuse {
		sess.openNew(env)
		return
	}
	sess.ackOpen(env, id)
	if resume {
		s.resumeDelivery(id)
	}
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
