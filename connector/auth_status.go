package connector

import (
	"context"

	"github.com/xconn/xconn/protocol"
)

func (sess *session) handleAuthStatus(env *protocol.Envelope) {
	s := sess.srv
	var p protocol.AuthStatusPayload
	if err := env.DecodePayload(&p); err != nil {
		sess.replyError(env, protocol.TypeAuthStatusAck, protocol.AsError(err))
		return
	}
	if !s.sessionOnChannel(p.AuthSessionID, env.ConnectorChannelID) {
		sess.replyError(env, protocol.TypeAuthStatusAck, protocol.Errorf(protocol.CodeAuthSessionNotFound, "sign-in session not found"))
		return
	}
	ctx, cancel := context.WithTimeout(sess.ctx, s.opts.ToolTimeout)
	defer cancel()
	push, err := s.advance(ctx, p.AuthSessionID, p.Refresh, true)
	if err != nil {
		s.log.Warn("connector: sign-in status", "err", err.Error())
	}
	sess.reply(env, protocol.TypeAuthStatusAck, s.authState(ctx, p.AuthSessionID, nil))
	if push {
		s.pushDescriptor(ctx, env.ConnectorChannelID)
	}
}

// sessionOnChannel reports whether a live session exists on the channel.
func (s *Server) sessionOnChannel(id, channelID string) bool {
	found := false
	s.auth.with(id, func(a *authSession) { found = a.channelID == channelID })
	return found
}

// advance brings a session up to date: expiry, QR refresh, QR code expiry
// and the flow's Poll. push reports a channel status change whose
// Descriptor the caller pushes.
func (s *Server) advance(ctx context.Context, id string, refresh, poll bool) (push bool, err error) {
	now := s.now()
	var (
		f         qrFlow
		isQR      bool
		status    protocol.AuthStatus
		snapshot  authSession
		terminate bool
	)
	s.auth.with(id, func(a *authSession) {
		f, isQR = a.flow.(qrFlow)
		if a.status != protocol.AuthAuthenticated && a.status != protocol.AuthFailed && now.After(a.expiresAt) {
			a.status, a.message = protocol.AuthExpired, "sign-in session expired"
			terminate = true
		}
		if isQR && (a.status == protocol.AuthPending || a.status == protocol.AuthScanned) && now.After(a.codeExpires) {
			a.status, a.message = protocol.AuthQRRefreshRequired, "the QR code expired; refresh it"
		}
		status = a.status
		snapshot = *a
	})
	if terminate {
		return s.endAuthenticating(ctx, snapshot.channelID, snapshot.prevStatus), nil
	}
	if !isQR {
		return false, nil
	}
	if refresh && status != protocol.AuthAuthenticated && status != protocol.AuthExpired && status != protocol.AuthFailed {
		if err := s.issueQR(ctx, &snapshot, f); err != nil {
			s.auth.with(id, func(a *authSession) { a.status, a.message = protocol.AuthFailed, "cannot issue a QR code" })
			return s.endAuthenticating(ctx, snapshot.channelID, snapshot.prevStatus), err
		}
		s.persistAuth(ctx, &snapshot)
		return false, nil
	}
	if !poll || f.cfg.Poll == nil || (status != protocol.AuthPending && status != protocol.AuthScanned) {
		return false, nil
	}
	qs := &QRSession{ID: id, Token: snapshot.token, Channel: &Channel{srv: s, id: snapshot.channelID}, data: snapshot.data,
		FlowID: snapshot.flowID, ExpiresAt: snapshot.codeExpires}
	var st QRState
	err = safeCall(func() error {
		var err error
		st, err = f.cfg.Poll(ctx, qs)
		return err
	})
	if err != nil {
		return false, err
	}
	return s.applyQRState(ctx, id, st)
}

// applyQRState moves a session to st (from Poll or the Auth* methods). push
// reports a channel change whose Descriptor the caller pushes.
func (s *Server) applyQRState(ctx context.Context, id string, st QRState) (push bool, err error) {
	var a0 authSession
	// A client handed over with the binding and not installed (the session
	// is gone or finished, the code expired) is closed.
	defer func() { s.dropHandoff(ctx, a0.channelID, st.Binding) }()
	busy := false
	terminal := st.Status == protocol.AuthAuthenticated || st.Status == protocol.AuthFailed || st.Status == protocol.AuthExpired
	ok := s.auth.with(id, func(a *authSession) {
		a0, busy = *a, a.finishing
		if terminal && !busy {
			a.finishing = true // one terminal transition at a time
		}
	})
	if !ok {
		return false, protocol.Errorf(protocol.CodeAuthSessionNotFound, "sign-in session not found")
	}
	if busy || a0.status == protocol.AuthAuthenticated || a0.status == protocol.AuthFailed || a0.status == protocol.AuthExpired {
		return false, protocol.Errorf(protocol.CodeAuthSessionNotFound, "sign-in session already finished (%s)", a0.status)
	}
	if terminal {
		defer s.auth.with(id, func(a *authSession) { a.finishing = false })
	}
	if s.now().After(a0.expiresAt) || (s.now().After(a0.codeExpires) && st.Status != protocol.AuthFailed) {
		return false, protocol.Errorf(protocol.CodeAuthSessionNotFound, "the QR code expired")
	}
	msg := s.secrets.Scrub(st.Message)
	switch st.Status {
	case protocol.AuthPending, "":
		return false, nil
	case protocol.AuthScanned:
		s.auth.with(id, func(a *authSession) {
			a.status, a.message = protocol.AuthScanned, orDefault(msg, "scanned; confirm on the device")
		})
	case protocol.AuthAuthenticated:
		if st.Binding == nil {
			return false, protocol.Errorf(protocol.CodeInternal, "authenticated state without a binding")
		}
		if err := s.bind(ctx, a0.channelID, a0.flowID, *st.Binding); err != nil {
			msg := "sign-in failed: cannot store the binding"
			if perr := protocol.AsError(err); perr != nil && perr.Message != "" {
				msg = s.secrets.Scrub(perr.Message)
			}
			s.auth.with(id, func(a *authSession) { a.status, a.message = protocol.AuthFailed, msg })
			s.metrics.signinFailures.Inc()
			s.persistAuth(ctx, &a0)
			return s.endAuthenticating(ctx, a0.channelID, a0.prevStatus), err
		}
		s.auth.with(id, func(a *authSession) { a.status, a.message = protocol.AuthAuthenticated, orDefault(msg, "signed in") })
		push = true
	case protocol.AuthQRRefreshRequired:
		// The target expired the code before the SDK's TTL: the session
		// waits for auth.status refresh=true, which issues a new code.
		s.auth.with(id, func(a *authSession) {
			a.status, a.message = protocol.AuthQRRefreshRequired, orDefault(msg, "the QR code expired; refresh it")
		})
	case protocol.AuthFailed, protocol.AuthExpired:
		s.auth.with(id, func(a *authSession) { a.status, a.message = st.Status, orDefault(msg, "sign-in "+st.Status) })
		s.metrics.signinFailures.Inc()
		push = s.endAuthenticating(ctx, a0.channelID, a0.prevStatus)
	default:
		return false, protocol.Errorf(protocol.CodeInternal, "unsupported QR state %q", st.Status)
	}
	s.persistAuth(ctx, &a0)
	return push, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (sess *session) handleAuthCancel(env *protocol.Envelope) {
	s := sess.srv
	var p protocol.AuthCancelPayload
	if err := env.DecodePayload(&p); err != nil {
		sess.replyError(env, protocol.TypeAuthCancelAck, protocol.AsError(err))
		return
	}
	id := env.ConnectorChannelID
	if !s.sessionOnChannel(p.AuthSessionID, id) {
		sess.reply(env, protocol.TypeAuthCancelAck, protocol.AuthCancelAckPayload{
			ConnectorChannelID: id, AuthSessionID: p.AuthSessionID, Status: protocol.CancelNotFound,
			Message: "sign-in session not found",
		})
		return
	}
	var a0 authSession
	s.auth.with(p.AuthSessionID, func(a *authSession) { a0 = *a })
	if a0.status == protocol.AuthAuthenticated {
		d, _ := s.descriptor(sess.ctx, id)
		sess.reply(env, protocol.TypeAuthCancelAck, protocol.AuthCancelAckPayload{
			ConnectorChannelID: id, AuthSessionID: p.AuthSessionID, Status: protocol.CancelIgnored,
			AuthStatus: protocol.AuthAuthenticated, Message: "sign-in already completed", ConnectionDescriptor: d,
		})
		return
	}
	s.auth.remove(p.AuthSessionID)
	if err := s.opts.Store.DeleteAuthSession(sess.ctx, s.card.ConnectorCardID, p.AuthSessionID); err != nil {
		s.log.Debug("connector: delete sign-in session", "err", err)
	}
	push := s.endAuthenticating(sess.ctx, id, a0.prevStatus)
	sess.reply(env, protocol.TypeAuthCancelAck, protocol.AuthCancelAckPayload{
		ConnectorChannelID: id, AuthSessionID: p.AuthSessionID, Status: protocol.CancelCanceled,
		AuthStatus: protocol.AuthUnauthenticated, Message: "sign-in canceled",
	})
	if push {
		s.pushDescriptor(sess.ctx, id)
	}
}

func (sess *session) handleAuthLogout(env *protocol.Envelope) {
	s := sess.srv
	id := env.ConnectorChannelID
	before, _ := s.channelState(id)
	if _, err := s.logout(sess.ctx, id, UnbindLogout); err != nil {
		s.log.Error("connector: logout", "channel", id, "err", err)
		sess.replyError(env, protocol.TypeAuthLogoutAck, protocol.Errorf(protocol.CodeInternal, "logout failed"))
		return
	}
	d, err := s.descriptor(sess.ctx, id)
	if err != nil {
		sess.replyError(env, protocol.TypeAuthLogoutAck, protocol.Errorf(protocol.CodeInternal, "cannot compute the descriptor"))
		return
	}
	sess.reply(env, protocol.TypeAuthLogoutAck, protocol.AuthLogoutAckPayload{Status: "ok", ConnectionDescriptor: d})
	if before.rec.Status != protocol.StatusCreated {
		s.pushDescriptor(sess.ctx, id)
	}
}

// AuthLookup returns the sign-in session holding a QR token.
func (s *Server) AuthLookup(token string) (AuthInfo, error) {
	id, ok := s.auth.byToken(token)
	if !ok {
		return AuthInfo{}, protocol.Errorf(protocol.CodeAuthSessionNotFound, "unknown or replaced QR token")
	}
	var info AuthInfo
	found := s.auth.with(id, func(a *authSession) {
		info = AuthInfo{SessionID: a.id, ChannelID: a.channelID, FlowID: a.flowID, Status: a.status, ExpiresAt: a.codeExpires}
	})
	if !found {
		return AuthInfo{}, protocol.Errorf(protocol.CodeAuthSessionNotFound, "unknown or replaced QR token")
	}
	return info, nil
}

// AuthScanned marks the QR session of token scanned (the user opened the
// connector's login page). It fails with auth_session_not_found for an
// unknown, replaced, expired or finished token.
func (s *Server) AuthScanned(ctx context.Context, token string) error {
	return s.authByToken(ctx, token, QRState{Status: protocol.AuthScanned})
}

// AuthComplete signs the channel of the QR session in with b, stores the
// binding, runs the bind hook and pushes the Descriptor.
func (s *Server) AuthComplete(ctx context.Context, token string, b Binding) error {
	return s.authByToken(ctx, token, QRState{Status: protocol.AuthAuthenticated, Binding: &b})
}

// AuthFail ends the QR session of token as failed with a secret-free
// message.
func (s *Server) AuthFail(ctx context.Context, token, message string) error {
	return s.authByToken(ctx, token, QRState{Status: protocol.AuthFailed, Message: message})
}

func (s *Server) authByToken(ctx context.Context, token string, st QRState) error {
	id, ok := s.auth.byToken(token)
	if !ok {
		return protocol.Errorf(protocol.CodeAuthSessionNotFound, "unknown or replaced QR token")
	}
	var channelID string
	s.auth.with(id, func(a *authSession) { channelID = a.channelID })
	push, err := s.applyQRState(ctx, id, st)
	if push {
		s.pushDescriptor(ctx, channelID)
	}
	return err
}

// sweepAuth expires sign-in sessions: unfinished ones past their deadline
// are marked expired (their channel leaves authenticating), and every
// session is dropped one sweep interval after its deadline.
func (s *Server) sweepAuth(ctx context.Context) {
	for _, id := range s.auth.ids() {
		var channelID string
		s.auth.with(id, func(a *authSession) { channelID = a.channelID })
		if push, _ := s.advance(ctx, id, false, false); push {
			s.pushDescriptor(ctx, channelID)
		}
	}
	for _, a := range s.auth.expired(s.now(), s.opts.SweepInterval) {
		if err := s.opts.Store.DeleteAuthSession(ctx, s.card.ConnectorCardID, a.id); err != nil {
			s.log.Debug("connector: delete sign-in session", "err", err)
		}
	}
	if _, err := s.opts.Store.DeleteExpiredAuthSessions(ctx, s.card.ConnectorCardID, s.now().Add(-s.opts.SweepInterval)); err != nil {
		s.log.Debug("connector: delete expired sign-in sessions", "err", err)
	}
}
