package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// SigninCanceled is the terminal status of a sign-in canceled by the host.
const SigninCanceled protocol.AuthStatus = "canceled"

// SigninState is a snapshot of one sign-in. It is a value.
type SigninState struct {
	// Status is a protocol.AuthStatus (pending, scanned, authenticated,
	// unauthenticated, expired, qr_refresh_required, failed) or
	// SigninCanceled.
	Status        protocol.AuthStatus
	FlowID        string
	AuthSessionID string
	// ChannelID is the connector_channel_id the sign-in runs on.
	ChannelID    string
	QRCodeText   string
	QRCodeImage  string
	ExpiresAt    time.Time
	PollInterval time.Duration
	Message      string
	// UserChannel is the persisted channel once authenticated.
	UserChannel *store.UserChannel
	// Err is the terminal error of a sign-in that did not authenticate.
	Err error
	// Done reports a terminal state.
	Done bool
}

// Signin is one running sign-in of a user to a connector: auth.start, then
// auth.status polled at the connector's poll_interval_millis until a
// terminal state. Its goroutine is owned by the Host. Safe for concurrent use.
type Signin struct {
	h       *Host
	rt      *runtime
	sess    *session
	userID  string
	uc      *store.UserChannel // nil for a first-time sign-in
	flowID  string
	updates chan SigninState
	done    chan struct{}
	refresh chan struct{}
	cancel  context.CancelFunc

	mu    sync.Mutex
	state SigninState
	// ackSeq is the arrival number (session.seq) of the latest auth ack;
	// a Descriptor pushed before it is older than the ack's.
	ackSeq atomic.Uint64
}

// State returns the current state.
func (s *Signin) State() SigninState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Updates delivers state changes; it is bounded and keeps the latest state
// when the reader is slow, and it is closed after the terminal state.
func (s *Signin) Updates() <-chan SigninState { return s.updates }

// Done is closed when the sign-in reached a terminal state.
func (s *Signin) Done() <-chan struct{} { return s.done }

// Wait waits for the terminal state and returns the persisted channel, or
// the reason the sign-in did not authenticate.
func (s *Signin) Wait(ctx context.Context) (store.UserChannel, error) {
	select {
	case <-s.done:
	case <-ctx.Done():
		return store.UserChannel{}, ctx.Err()
	}
	st := s.State()
	if st.UserChannel != nil {
		return *st.UserChannel, nil
	}
	return store.UserChannel{}, st.Err
}

// Refresh asks the connector for new authentication material (a new QR
// code) with auth.status refresh=true.
func (s *Signin) Refresh(ctx context.Context) error {
	select {
	case s.refresh <- struct{}{}:
		return nil
	case <-s.done:
		return errors.New("host: sign-in already finished")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Cancel stops the sign-in: auth.cancel, and for a first-time sign-in
// channel.close of the temporary channel (no record is created). It waits
// for the terminal state.
func (s *Signin) Cancel(ctx context.Context) error {
	s.cancel()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Connect starts a first-time sign-in of userID to connector cardID with
// auth flow flowID ("" = the Card's first flow) and form input (nil for a QR
// flow). It opens a temporary channel, sends auth.start and returns once
// the connector answered it (so a QR code is available in State), then
// polls auth.status in the background. The user channel is persisted only
// when the connector reports authenticated with a valid Descriptor.
// A Card with user_channel_mode single allows one channel per user; use
// [Host.Reauthenticate] for an existing one.
func (h *Host) Connect(ctx context.Context, userID, cardID, flowID string, input map[string]string) (*Signin, error) {
	rt := h.runtime(cardID)
	if rt == nil {
		return nil, fmt.Errorf("host: connect %s: %w", cardID, ErrUnknownConnector)
	}
	if userID == "" {
		return nil, errors.New("host: connect: user id is required")
	}
	_, _, card := rt.view()
	if card.Supports.UserChannelMode != protocol.UserChannelMultiple {
		existing, err := h.userCards(ctx, userID, cardID)
		if err != nil {
			return nil, fmt.Errorf("host: connect: %w", err)
		}
		if len(existing.list) > 0 {
			return nil, &protocol.Error{Code: CodeChannelLimit, Message: "connector " + cardID + " allows one channel per user; reauthenticate " + existing.list[0].uc.ID}
		}
	}
	return h.signin(ctx, rt, userID, nil, flowID, input)
}

// Reauthenticate signs an existing user channel in again (for instance
// after Logout or an expired binding), on the same record.
func (h *Host) Reauthenticate(ctx context.Context, userChannelID, flowID string, input map[string]string) (*Signin, error) {
	uc, rt, err := h.channelRuntime(ctx, userChannelID)
	if err != nil {
		return nil, err
	}
	return h.signin(ctx, rt, uc.UserID, &uc, flowID, input)
}

func (h *Host) signin(ctx context.Context, rt *runtime, userID string, uc *store.UserChannel, flowID string, input map[string]string) (*Signin, error) {
	_, _, card := rt.view()
	if flowID == "" && len(card.AuthFlows) > 0 {
		flowID = card.AuthFlows[0].ID
	}
	if flowID != "" {
		flow, ok := card.AuthFlow(flowID)
		if !ok {
			return nil, protocol.Errorf(protocol.CodeAuthFlowNotFound, "connector %s has no auth flow %q", rt.cardID, flowID)
		}
		for _, fld := range flow.Fields {
			if fld.IsSecret() {
				h.secret(input[fld.Name])
			}
		}
	}
	sess, err := rt.waitOnline(ctx)
	if err != nil {
		return nil, fmt.Errorf("host: data plane: %w", err)
	}
	var r *route
	if uc != nil {
		r = sess.route(uc.ChannelID)
		if r == nil {
			r, err = sess.openChannel(ctx, uc.ChannelID, uc.ID, uc.UserID)
		}
	} else {
		r, err = sess.openChannel(ctx, "", "", userID)
	}
	if err != nil {
		return nil, fmt.Errorf("host: channel.open: %w", err)
	}
	h.mu.Lock()
	switch {
	case h.state != stateStarted:
		h.mu.Unlock()
		return nil, ErrClosed
	case h.signins >= h.opts.MaxSignins:
		h.mu.Unlock()
		if uc == nil {
			sess.closeChannel(ctx, r.channelID)
		}
		return nil, &protocol.Error{Code: protocol.CodeChannelBusy, Message: "too many sign-ins in progress", Retryable: true}
	}
	h.signins++
	sctx, cancel := context.WithCancel(h.ctx)
	h.wg.Add(1)
	h.mu.Unlock()
	s := &Signin{h: h, rt: rt, sess: sess, userID: userID, uc: uc, flowID: flowID, cancel: cancel,
		updates: make(chan SigninState, 16), done: make(chan struct{}), refresh: make(chan struct{}, 1)}
	s.state = SigninState{FlowID: flowID, ChannelID: r.channelID, Status: protocol.AuthPending}

	started := make(chan error, 1)
	go func() {
		defer h.wg.Done()
		defer func() {
			h.mu.Lock()
			h.signins--
			h.mu.Unlock()
		}()
		defer cancel()
		s.run(sctx, r, input, started)
	}()
	select {
	case err := <-started:
		if err != nil {
			<-s.done
			return nil, fmt.Errorf("host: %s: %w", protocol.TypeAuthStart, err)
		}
		return s, nil
	case <-ctx.Done():
		cancel()
		<-s.done
		return nil, ctx.Err()
	}
}

// run drives one sign-in to its terminal state.
func (s *Signin) run(ctx context.Context, r *route, input map[string]string, started chan<- error) {
	defer close(s.done)
	defer close(s.updates)
	defer s.sess.endBind(r.channelID)
	var binds func(*protocol.Envelope)
	if s.uc == nil {
		binds = s.sess.authAckBinds(r.channelID)
	}
	onAck := func(env *protocol.Envelope) {
		s.ackSeq.Store(s.sess.seq.Add(1))
		if binds != nil {
			binds(env)
		}
	}
	timeout := time.NewTimer(s.h.opts.SigninTimeout)
	defer timeout.Stop()

	// A form flow with no flow at all: the channel may already be bound.
	var st protocol.AuthStatePayload
	if s.flowID == "" {
		st = protocol.AuthStatePayload{Status: protocol.AuthUnauthenticated, ConnectionDescriptor: r.desc}
		if r.desc.Authenticated() {
			st.Status = protocol.AuthAuthenticated
			if s.uc == nil {
				s.sess.beginBind(r.channelID)
			}
		}
	} else {
		env, err := s.sess.request(ctx, protocol.TypeAuthStart, r.channelID, protocol.AuthStartPayload{FlowID: s.flowID, Input: input}, reqOpts{onAck: onAck})
		if err == nil {
			err = env.DecodePayload(&st)
		}
		if err != nil {
			started <- err
			s.finish(ctx, r, SigninState{Status: protocol.AuthFailed, Err: err}, true)
			return
		}
	}
	started <- nil
	for {
		if s.apply(ctx, r, st) {
			return
		}
		interval := s.State().PollInterval
		poll := time.NewTimer(interval)
		refresh := st.Status == protocol.AuthQRRefreshRequired
		select {
		case <-ctx.Done():
			poll.Stop()
			s.abort(r, SigninState{Status: SigninCanceled, Err: errors.New("sign-in canceled")})
			return
		case <-timeout.C:
			poll.Stop()
			s.abort(r, SigninState{Status: protocol.AuthExpired, Err: errors.New("sign-in timed out")})
			return
		case <-s.refresh:
			refresh = true
		case <-poll.C:
		}
		poll.Stop()
		env, err := s.sess.request(ctx, protocol.TypeAuthStatus, r.channelID,
			protocol.AuthStatusPayload{FlowID: s.flowID, AuthSessionID: s.State().AuthSessionID, Refresh: refresh}, reqOpts{onAck: onAck})
		if err == nil {
			st = protocol.AuthStatePayload{}
			err = env.DecodePayload(&st)
		}
		if err != nil {
			if ctx.Err() != nil {
				s.abort(r, SigninState{Status: SigninCanceled, Err: errors.New("sign-in canceled")})
				return
			}
			s.finish(ctx, r, SigninState{Status: protocol.AuthFailed, Err: err}, true)
			return
		}
	}
}

// apply records one auth state and reports whether it is terminal.
func (s *Signin) apply(ctx context.Context, r *route, p protocol.AuthStatePayload) bool {
	s.mu.Lock()
	st := s.state
	st.Status, st.Message = p.Status, p.Message
	if p.AuthSessionID != "" {
		st.AuthSessionID = p.AuthSessionID
	}
	if p.QRCodeText != "" || p.QRCodeImage != "" {
		st.QRCodeText, st.QRCodeImage = p.QRCodeText, p.QRCodeImage
	}
	if p.ExpiresAt > 0 {
		st.ExpiresAt = time.UnixMilli(p.ExpiresAt)
	}
	st.PollInterval = DefaultPollInterval
	if p.PollIntervalMillis > 0 {
		st.PollInterval = min(max(time.Duration(p.PollIntervalMillis)*time.Millisecond, MinPollInterval), MaxPollInterval)
	}
	s.state = st
	s.mu.Unlock()

	switch p.Status {
	case protocol.AuthAuthenticated:
		uc, err := s.persist(ctx, r, p.ConnectionDescriptor)
		if err != nil {
			s.finish(ctx, r, SigninState{Status: protocol.AuthFailed, Err: err}, true)
			return true
		}
		s.finish(ctx, r, SigninState{Status: protocol.AuthAuthenticated, UserChannel: &uc}, false)
		return true
	case protocol.AuthFailed, protocol.AuthExpired, protocol.AuthUnauthenticated:
		msg := p.Message
		if msg == "" {
			msg = "sign-in " + p.Status
		}
		s.finish(ctx, r, SigninState{Status: p.Status, Err: &protocol.Error{Code: protocol.CodeConnectionNotAuthenticated, Message: msg}}, true)
		return true
	case protocol.AuthPending, protocol.AuthScanned, protocol.AuthQRRefreshRequired:
		s.publish()
		return false
	}
	s.finish(ctx, r, SigninState{Status: protocol.AuthFailed, Err: protocol.Errorf(protocol.CodeInvalidPacket, "unknown auth status %q", p.Status)}, true)
	return true
}

// persist stores the user channel after authentication (section 8.3, 8.10).
func (s *Signin) persist(ctx context.Context, r *route, d *protocol.Descriptor) (store.UserChannel, error) {
	if d == nil {
		env, err := s.sess.request(ctx, protocol.TypeDescriptorGet, r.channelID, protocol.EmptyPayload{}, reqOpts{})
		if err != nil {
			return store.UserChannel{}, fmt.Errorf("connection.descriptor.get: %w", err)
		}
		var p protocol.DescriptorPayload
		if err := env.DecodePayload(&p); err != nil {
			return store.UserChannel{}, protocol.Errorf(protocol.CodeInvalidPacket, "descriptor payload: %v", err)
		}
		d = p.ConnectionDescriptor
	}
	_, _, card := s.rt.view()
	if vs := validateDescriptor(d, card, r.channelID, s.sess.connectorID); len(vs) > 0 {
		return store.UserChannel{}, fmt.Errorf("authenticated descriptor: %w", vs)
	}
	descJSON, err := json.Marshal(d)
	if err != nil {
		return store.UserChannel{}, fmt.Errorf("encode descriptor: %w", err)
	}
	uc, err := s.storeRecord(ctx, r, d, descJSON)
	s.sess.endBind(r.channelID) // the route is bound (or the sign-in failed)
	if err != nil {
		return store.UserChannel{}, err
	}
	s.h.emit(Event{Kind: EventChannel, CardID: uc.CardID, UserChannelID: uc.ID, ChannelID: uc.ChannelID, Detail: "authenticated"})
	_ = s.h.outbox.Resume(ctx, uc.ID)
	return uc, nil
}

// storeRecord writes the authenticated record and binds the route to it, both
// under the record's lock (see onDescriptorPush); events and the
// outbox are left to the caller, outside the lock.
func (s *Signin) storeRecord(ctx context.Context, r *route, d *protocol.Descriptor, descJSON []byte) (store.UserChannel, error) {
	now := time.Now().UTC()
	var uc store.UserChannel
	if s.uc != nil {
		uc = *s.uc
	} else {
		uc = store.UserChannel{ID: newID("uch_"), UserID: s.userID, CardID: s.rt.cardID, CreatedAt: now}
	}
	unlock := s.h.chans.lockRecord(uc.ID)
	defer unlock()
	if s.uc != nil {
		if fresh, err := s.h.st.GetUserChannel(ctx, uc.ID); err == nil {
			uc = fresh
		}
	}
	uc.ChannelID, uc.Authenticated, uc.Descriptor, uc.UpdatedAt = r.channelID, d.Authenticated(), descJSON, now
	if uc.SessionID == "" {
		// Section 6.3: the authenticated channel gets its dedicated session
		// (a binding the embedder set with BindSession is kept).
		uc.SessionID = uc.ID
	}
	if err := s.h.putUserChannel(ctx, uc); err != nil {
		return store.UserChannel{}, fmt.Errorf("store user channel: %w", err)
	}
	// Bind the route to the record; a Descriptor pushed after the ack
	// arrived is newer than the ack's and is kept, one pushed before it
	// (for instance "authenticating" at the start of a QR sign-in) is not.
	ack := s.ackSeq.Load()
	n := s.sess.updateRoute(r.channelID, func(n *route) {
		n.ucID, n.userID = uc.ID, uc.UserID
		if n.desc == r.desc || (ack != 0 && n.descSeq < ack) {
			s.sess.withDescriptor(n, d)
			n.descSeq = ack
		}
	})
	switch {
	case n == nil:
		s.sess.setRoute(s.sess.newRoute(r.channelID, uc.ID, uc.UserID, d))
	case n.desc != d: // the newer pushed Descriptor goes to the record too
		if b, err := json.Marshal(n.desc); err == nil {
			uc.Descriptor, uc.Authenticated = b, n.desc.Authenticated()
			if err := s.h.putUserChannel(ctx, uc); err != nil {
				return store.UserChannel{}, fmt.Errorf("store user channel: %w", err)
			}
		}
	}
	return uc, nil
}

// abort cancels the connector-side session (auth.cancel) and finishes.
func (s *Signin) abort(r *route, st SigninState) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.h.ctx), s.h.opts.RequestTimeout)
	defer cancel()
	if id := s.State().AuthSessionID; id != "" {
		_, _ = s.sess.request(ctx, protocol.TypeAuthCancel, r.channelID, protocol.AuthCancelPayload{AuthSessionID: id}, reqOpts{})
	}
	s.finish(ctx, r, st, true)
}

// finish records the terminal state; a failed first-time sign-in closes its
// temporary channel.
func (s *Signin) finish(ctx context.Context, r *route, final SigninState, failed bool) {
	if failed && s.uc == nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.h.opts.RequestTimeout)
		s.sess.closeChannel(cctx, r.channelID)
		cancel()
	}
	s.mu.Lock()
	st := s.state
	st.Status, st.Err, st.UserChannel, st.Done = final.Status, final.Err, final.UserChannel, true
	s.state = st
	s.mu.Unlock()
	s.publish()
}

// publish offers the current state to Updates, dropping the oldest queued
// state when the reader is slow (only this goroutine writes).
func (s *Signin) publish() {
	st := s.State()
	for {
		select {
		case s.updates <- st:
			return
		default:
		}
		select {
		case <-s.updates:
		default:
		}
	}
}
