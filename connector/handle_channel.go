package connector

import (
	"errors"

	"github.com/xconn/xconn/internal/signurl"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

func (sess *session) handleOpen(env *protocol.Envelope) {
	s := sess.srv
	cid := sess.connector()
	id := env.ConnectorChannelID
	s.mu.Lock()
	cs, ok := s.channels[id]
	reuse := ok && id != "" && cs.rec.ConnectorID == cid
	if reuse {
		if cs.open != sess {
			if cs.open == nil {
				s.metrics.openChannels.Inc()
			}
			cs.open = sess
		}
	}
	s.mu.Unlock()
	if !reuse {
		now := s.now()
		rec := store.Channel{
			CardID: s.card.ConnectorCardID, ChannelID: signurl.RandomID("cch_"), ConnectorID: cid,
			Status: protocol.StatusCreated, CreatedAt: now, UpdatedAt: now,
		}
		if err := s.opts.Store.PutChannel(sess.ctx, rec); err != nil {
			code := protocol.CodeInternal
			if errors.Is(err, store.ErrLimit) {
				code = protocol.CodeConnectorChannelUnavailable
			}
			s.log.Error("connector: persist channel", "err", err)
			sess.sendError(env, protocol.Errorf(code, "cannot create a channel"))
			return
		}
		id = rec.ChannelID
		s.mu.Lock()
		s.channels[id] = &chanState{rec: rec, open: sess}
		s.mu.Unlock()
		s.metrics.openChannels.Inc()
		s.metrics.channelsCreated.Inc()
	}
	d, err := s.descriptor(sess.ctx, id)
	if err != nil {
		s.log.Error("connector: descriptor", "channel", id, "err", err)
		sess.sendError(env, protocol.Errorf(protocol.CodeInternal, "cannot compute the descriptor"))
		return
	}
	ack := env.Reply(protocol.TypeChannelOpenAck)
	ack.ConnectorChannelID = id
	sess.replyEnv(ack, protocol.ChannelOpenAckPayload{ConnectorChannelID: id, ConnectionDescriptor: d})
	s.resumeDelivery(id)
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
