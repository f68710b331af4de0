package connector

import (
	"encoding/json"
	"time"

	"github.com/xconn/xconn/protocol"
)

// replyTrusted sends the ack typ of req with a payload known to be valid
// JSON (encoded here, not taken from a peer): the frame is written in one
// pass, without MarshalJSON's second check of the payload.
func (sess *session) replyTrusted(req *protocol.Envelope, typ string, payload json.RawMessage) {
	env := req.Reply(typ)
	env.PacketID, env.Time, env.Payload = sess.packetID(), time.Now().UnixMilli(), payload
	frame, ok := env.AppendTrusted(nil)
	if !ok {
		_ = sess.send(sess.ctx, env)
		return
	}
	if err := sess.conn.SendRaw(sess.ctx, frame); err != nil {
		sess.srv.log.Debug("connector: send failed", "type", env.Type, "err", err)
		return
	}
	sess.srv.metrics.packetOut(env.Type)
}
