package connector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/internal/signurl"
	"github.com/xconn/xconn/internal/xtrace"
	"github.com/xconn/xconn/protocol"
)

// Outbox queue names inside the delivery storage.
const (
	queueIMv2 = "connector.im.v2"
	queueIMv1 = "connector.im.v1"
)

func (s *Server) publish(ctx context.Context, id string, m UserMessage) (isNew bool, err error) {
	if s.tracer != nil {
		var span trace.Span
		ctx, span = s.tracer.Start(ctx, "connector.publish", trace.SpanKindProducer, attrChannel.String(id))
		defer func() { xtrace.End(span, err) }()
	}
	if err := s.liveErr(); err != nil {
		return false, err
	}
	if !s.card.DeclaresProfile(protocol.ProfileIMv2) {
		return false, fmt.Errorf("connector: Publish needs a Card that declares %s", protocol.ProfileIMv2)
	}
	if err := s.signedIn(id, "Publish"); err != nil {
		return false, err
	}
	if m.Text == "" && len(m.Files) == 0 {
		return false, errors.New("connector: a message needs text or files")
	}
	msgID := m.MessageID
	if msgID == "" {
		msgID = signurl.RandomID("msg_")
	}
	created := m.CreatedAt
	if created.IsZero() {
		created = s.now()
	}
	if m.ReplyContext != nil {
		// Before the message is stored: its answer may come at once.
		if err := (&Channel{srv: s, id: id}).saveReplyContext(ctx, msgID, m.ReplyContext, false); err != nil {
			s.log.Warn("connector: reply context not recorded; the answer goes to the connector's default place",
				"channel", id, "err", err)
		}
	}
	p := protocol.ChatMessagePayload{MessageID: msgID, Text: m.Text, CreatedAt: created.UnixMilli()}
	for i, f := range m.Files {
		cf, err := s.cacheFile(ctx, id, f)
		if err != nil {
			return false, fmt.Errorf("connector: file %d: %w", i, err)
		}
		p.Files = append(p.Files, cf)
	}
	payload, err := json.Marshal(p)
	if err != nil {
		return false, fmt.Errorf("connector: encode message: %w", err)
	}
	res, err := s.enqueueTraced(ctx, id, msgID, payload)
	if err != nil {
		return false, fmt.Errorf("connector: publish: %w", err)
	}
	if res.Status == delivery.Enqueued {
		s.metrics.published.Inc()
		return true, nil
	}
	return false, nil
}

// signedIn checks that channel id exists and is signed in before op
// (Publish, PushMessage) stores anything: a message of a channel without a
// target binding (created, authenticating, expired, revoked) has no user it
// could come from, and xAgent keeps no channel before its sign-in (section
// 6.3). It returns connection_not_found or connection_not_authenticated,
// each naming the channel.
func (s *Server) signedIn(id, op string) error {
	s.mu.Lock()
	cs, ok := s.channels[id]
	var status protocol.ConnectionStatus
	if ok {
		status = cs.rec.Status
	}
	s.mu.Unlock()
	switch {
	case !ok:
		return notFound(id)
	case !isAuthenticated(status):
		return protocol.Errorf(protocol.CodeConnectionNotAuthenticated,
			"connector: %s: channel %s is not signed in (status %s); nothing was stored", op, id, status)
	}
	return nil
}

// cacheFile stores an inbound file on the transfer plane and describes it
// with a signed, short-lived download_url. The file outlives the message's
// delivery window (max of FileTTL and OutboxTTL).
func (s *Server) cacheFile(ctx context.Context, id string, f OutgoingFile) (protocol.ChatFile, error) {
	if err := s.liveErr(); err != nil {
		return protocol.ChatFile{}, err
	}
	if f.Content == nil {
		return protocol.ChatFile{}, errors.New("connector: file has no content")
	}
	if _, err := s.channelState(id); err != nil {
		return protocol.ChatFile{}, err
	}
	rec, err := s.saveFile(ctx, id, "download", f.Name, f.MimeType, f.Type, f.Content, max(s.opts.FileTTL, s.opts.OutboxTTL))
	if err != nil {
		return protocol.ChatFile{}, err
	}
	return protocol.ChatFile{
		Type: rec.FileType, FileRef: rec.Ref, Filename: rec.Filename, MimeType: rec.MimeType,
		ByteSize: rec.Size, ExpiresAt: rec.ExpiresAt.UnixMilli(),
		DownloadURL: s.downloadURL(rec.Ref, id, rec.ExpiresAt),
	}, nil
}

func (s *Server) pushMessage(ctx context.Context, id string, m protocol.MessagePushPayload) error {
	if err := s.liveErr(); err != nil {
		return err
	}
	if !s.card.DeclaresProfile(protocol.ProfileIMv1) {
		return fmt.Errorf("connector: PushMessage needs a Card that declares %s", protocol.ProfileIMv1)
	}
	if err := s.signedIn(id, "PushMessage"); err != nil {
		return err
	}
	if m.Provider == "" {
		tt := ""
		if len(s.card.Supports.TargetTypes) > 0 {
			tt = s.card.Supports.TargetTypes[0]
		}
		m.Provider, _ = targetOf(s.card, tt)
	}
	if m.Profile == "" {
		m.Profile = protocol.ProfileIMv1
	}
	if m.EventKind == "" {
		m.EventKind = protocol.IMv1EventMessageReceived
	}
	if m.MessageType == "" {
		m.MessageType = "text"
	}
	if m.MessageID == "" {
		m.MessageID = signurl.RandomID("msg_")
	}
	payload, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("connector: encode message.push: %w", err)
	}
	if err := checkPush(id, &m, payload); err != nil {
		return err
	}
	if _, err := s.outv1.Enqueue(ctx, id, m.MessageID, payload); err != nil {
		return fmt.Errorf("connector: push message: %w", err)
	}
	return nil
}

// checkPush holds a message.push to IM v1 section 5 before it is stored:
// the rules of protocol.ValidatePayload (sender_id, message_type, at most
// one target Session reference, a file_ref per file...), the user-visible
// content in text or content (IM v1 lists only those; the main text's
// message is accepted from peers, not emitted) and an address per file
// (section 9: xAgent reads download_url or url). It returns an
// invalid_packet *protocol.Error naming every broken rule.
func checkPush(channel string, m *protocol.MessagePushPayload, payload json.RawMessage) error {
	env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: "check", ConnectorChannelID: channel,
		Type: protocol.TypeMessagePush, Payload: payload}
	vs := protocol.ValidatePayload(env, protocol.ToHost)
	if m.Text == "" && m.Content == "" {
		vs = append(vs, protocol.Violation{Path: "payload.text", Reason: "text or content must carry the user-visible content (IM v1 section 5)"})
	}
	for i := range m.Files {
		if m.Files[i].SourceURL() == "" {
			vs = append(vs, protocol.Violation{Path: fmt.Sprintf("payload.files[%d].download_url", i),
				Reason: "download_url or url is required: xAgent reads the file from it (IM v1 section 9)"})
		}
	}
	if len(vs) > 0 {
		return &protocol.Error{Code: protocol.CodeInvalidPacket, Message: "PushMessage: " + vs.Error()}
	}
	return nil
}

// openSession returns the socket a channel is open on, with a temporary
// error when none (the outbox keeps the entry) and a terminal one when the
// channel is gone.
func (s *Server) openSession(channel string, profile protocol.Profile) (*session, error) {
	s.mu.Lock()
	cs, ok := s.channels[channel]
	var sess *session
	if ok {
		sess = cs.open
	}
	s.mu.Unlock()
	if !ok {
		return nil, &protocol.Error{Code: protocol.CodeConnectionNotFound, Message: "channel was deleted"}
	}
	if sess == nil {
		return nil, &protocol.Error{Code: protocol.CodeChannelNotOpen, Message: "channel is not open", Retryable: true}
	}
	if !sess.negotiated().Has(profile) {
		return nil, &protocol.Error{Code: protocol.CodeChannelNotOpen, Message: profile + " is not negotiated on the open connection", Retryable: true}
	}
	return sess, nil
}

// sendChat is the IM v2 outbox's SendFunc: one chat.message and its ack.
func (s *Server) sendChat(ctx context.Context, e delivery.Entry) (err error) {
	sess, err := s.openSession(e.Channel, protocol.ProfileIMv2)
	if err != nil {
		return err
	}
	env := sess.newPacket(protocol.TypeChatMessage, e.Channel)
	env.Payload = e.Payload
	if s.tracer != nil {
		var span trace.Span
		ctx, span = s.tracer.StartLinked(ctx, s.links.Get(e.Channel, e.MessageID), "chat.message send", trace.SpanKindProducer,
			attrChannel.String(e.Channel), attrMessage.String(e.MessageID), attrPacketID.String(env.PacketID))
		s.tracer.Inject(ctx, env)
		defer func() { s.endSend(span, e, err) }()
	}
	wait, ok := sess.addWaiter(env.PacketID)
	if !ok {
		return &protocol.Error{Code: protocol.CodeChannelBusy, Message: "too many messages awaiting an ack", Retryable: true}
	}
	defer sess.dropWaiter(env.PacketID)
	// The payload is the outbox's, encoded by Publish with encoding/json:
	// the frame is written in one pass, without checking it once more.
	var sendErr error
	if frame, ok := env.AppendTrusted(nil); ok {
		sendErr = sess.sendFrame(ctx, env.Type, frame)
	} else {
		sendErr = sess.send(ctx, env)
	}
	if sendErr != nil {
		return &protocol.Error{Code: protocol.CodeChannelNotOpen, Message: "connection closed", Retryable: true}
	}
	timer := time.NewTimer(s.opts.AckTimeout)
	defer timer.Stop()
	select {
	case ack := <-wait:
		if ack.MessageID != e.MessageID {
			return &protocol.Error{Code: protocol.CodeInvalidPacket, Message: "ack names another message_id", Retryable: true}
		}
		s.metrics.chatAcksIn.WithLabelValues(metricStatus(ack.Status)).Inc()
		return delivery.AckResult(ack)
	case <-timer.C:
		return &protocol.Error{Code: protocol.CodeChannelBusy, Message: "ack timeout", Retryable: true}
	case <-sess.ctx.Done():
		return &protocol.Error{Code: protocol.CodeChannelNotOpen, Message: "connection closed", Retryable: true}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sendPush is the IM v1 outbox's SendFunc. message.push has no ack: the
// entry is delivered once its frame is written to the socket of an open,
// IM v1 connection (IM v1 section 7.1), not when it is queued for the
// socket's writer. A socket that dies first, or a write that does not
// happen within AckTimeout, keeps the entry for a later attempt.
func (s *Server) sendPush(ctx context.Context, e delivery.Entry) error {
	sess, err := s.openSession(e.Channel, protocol.ProfileIMv1)
	if err != nil {
		return err
	}
	env := sess.newPacket(protocol.TypeMessagePush, e.Channel)
	env.Payload = e.Payload
	frame, err := env.MarshalJSON()
	if err != nil {
		return fmt.Errorf("connector: encode message.push: %w", err)
	}
	var fw *frameWatch
	if sess.watch != nil {
		fw = sess.watch.add(env.PacketID, frame)
	}
	if fw == nil { // not watchable (see writeWatch): queued is all we can know
		s.log.Debug("connector: message.push completes when queued", "channel", e.Channel)
		if err := sess.sendFrame(ctx, env.Type, frame); err != nil {
			return &protocol.Error{Code: protocol.CodeChannelNotOpen, Message: "connection closed", Retryable: true}
		}
		return nil
	}
	defer sess.watch.remove(fw)
	if err := sess.sendFrame(ctx, env.Type, frame); err != nil {
		return &protocol.Error{Code: protocol.CodeChannelNotOpen, Message: "connection closed", Retryable: true}
	}
	timer := time.NewTimer(s.opts.AckTimeout)
	defer timer.Stop()
	var failed error
	select {
	case <-fw.done:
		return nil
	case <-timer.C:
		failed = &protocol.Error{Code: protocol.CodeChannelBusy, Message: "message.push not written within the ack timeout", Retryable: true}
	case <-sess.ctx.Done():
		failed = &protocol.Error{Code: protocol.CodeChannelNotOpen, Message: "connection closed before message.push was written", Retryable: true}
	case <-ctx.Done():
		failed = fmt.Errorf("connector: waiting for the write of message.push: %w", ctx.Err())
	}
	select {
	case <-fw.done: // written after all: it is delivered
		return nil
	default:
		return failed
	}
}

// resumeDelivery makes a reopened channel's pending messages due now.
func (s *Server) resumeDelivery(id string) {
	ctx, cancel := s.bgContext()
	defer cancel()
	for _, ob := range []*delivery.Outbox{s.outbox, s.outv1} {
		if err := ob.Resume(ctx, id); err != nil {
			s.log.Warn("connector: resume delivery", "channel", id, "err", err)
		}
	}
}
