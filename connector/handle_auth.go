package connector

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/xconn/xconn/internal/qr"
	"github.com/xconn/xconn/internal/redact"
	"github.com/xconn/xconn/internal/signurl"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// authStartRaw decodes auth.start with the input kept raw, so that a
// mistyped field is an invalid_auth_input and not a malformed packet.
type authStartRaw struct {
	FlowID string                     `json:"flow_id"`
	Input  map[string]json.RawMessage `json:"input,omitempty"`
}

func (sess *session) handleAuthStart(env *protocol.Envelope) {
	s := sess.srv
	var p authStartRaw
	if err := env.DecodePayload(&p); err != nil {
		sess.replyError(env, protocol.TypeAuthStartAck, protocol.Errorf(protocol.CodeInvalidPacket, "auth.start payload is malformed"))
		return
	}
	cardFlow, inCard := s.card.AuthFlow(p.FlowID)
	flow, registered := s.flows[p.FlowID]
	if !inCard || !registered {
		sess.replyError(env, protocol.TypeAuthStartAck, protocol.Errorf(protocol.CodeAuthFlowNotFound, "auth flow %q is not declared", p.FlowID))
		return
	}
	id := env.ConnectorChannelID
	switch f := flow.(type) {
	case formFlow:
		sess.startForm(env, id, cardFlow, f, p.Input)
	case qrFlow:
		sess.startQR(env, id, p.FlowID, f)
	default:
		sess.replyError(env, protocol.TypeAuthStartAck, protocol.Errorf(protocol.CodeAuthFlowNotFound, "auth flow %q has no handler", p.FlowID))
	}
}

// checkFormInput checks input against the Card's fields: unknown fields,
// non-string values (form fields are text and password inputs; typed forms
// parse numbers from the text), values longer than Options.MaxAuthValueBytes
// and missing required fields. It returns the values of secret fields
// apart (longest first) without registering them: startForm adds them to
// the redaction set only once the flow accepted them, so refused input
// never grows the set. Reasons never quote values.
func (s *Server) checkFormInput(flow *protocol.AuthFlow, input map[string]json.RawMessage) (map[string]string, []string, protocol.Violations) {
	values := map[string]string{}
	var vs protocol.Violations
	fields := map[string]protocol.AuthField{}
	for _, f := range flow.Fields {
		fields[f.Name] = f
	}
	names := make([]string, 0, len(input))
	for name := range input {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		var v string
		if err := json.Unmarshal(input[name], &v); err != nil {
			vs = append(vs, protocol.Violation{Path: "input." + name, Reason: "must be a string"})
			continue
		}
		if !known(fields, name) {
			vs = append(vs, protocol.Violation{Path: "input." + name, Reason: "is not a field of this flow"})
			continue
		}
		if len(v) > s.opts.MaxAuthValueBytes {
			vs = append(vs, protocol.Violation{Path: "input." + name, Reason: fmt.Sprintf("is longer than %d bytes", s.opts.MaxAuthValueBytes)})
			continue
		}
		values[name] = v
	}
	for _, f := range flow.Fields {
		if _, ok := values[f.Name]; !ok && f.DefaultValue != nil {
			values[f.Name] = *f.DefaultValue
		}
		if f.Required && values[f.Name] == "" && !slices.ContainsFunc(vs, func(v protocol.Violation) bool { return v.Path == "input."+f.Name }) {
			vs = append(vs, protocol.Violation{Path: "input." + f.Name, Reason: "is required"})
		}
	}
	var secrets []string
	if len(vs) == 0 {
		for name, v := range values {
			if fields[name].IsSecret() && v != "" {
				secrets = append(secrets, v)
			}
		}
		slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	}
	return values, secrets, vs
}

// scrubWith replaces the values of secrets (longest first) in msg, then
// every registered secret.
func (s *Server) scrubWith(secrets []string, msg string) string {
	for _, v := range secrets {
		msg = strings.ReplaceAll(msg, v, redact.Redacted)
	}
	return s.secrets.Scrub(msg)
}

func known(fields map[string]protocol.AuthField, name string) bool {
	_, ok := fields[name]
	return ok
}

func (sess *session) startForm(env *protocol.Envelope, id string, cardFlow *protocol.AuthFlow, f formFlow, input map[string]json.RawMessage) {
	s := sess.srv
	values, secrets, vs := s.checkFormInput(cardFlow, input)
	if len(vs) > 0 {
		sess.replyError(env, protocol.TypeAuthStartAck, protocol.Errorf(protocol.CodeInvalidAuthInput, "%s", vs.Error()))
		return
	}
	ctx, cancel := context.WithTimeout(sess.ctx, s.opts.ToolTimeout)
	defer cancel()
	ch := &Channel{srv: s, id: id}
	var b Binding
	err := safeCall(func() error {
		var err error
		b, err = f.fn(ctx, ch, Input{values: values})
		return err
	})
	if err == nil {
		s.secrets.Add(secrets...) // accepted by the flow: now a credential to keep out of logs
		err = s.bind(ctx, id, cardFlow.ID, b)
	}
	sid := signurl.RandomID("auth_")
	if err != nil {
		perr := protocol.AsError(err)
		if perr == nil {
			perr = unreachableError(err)
		}
		if perr != nil && (perr.Code == protocol.CodeInvalidAuthInput || perr.Code == CodeTargetUnreachable) {
			if perr.Code == CodeTargetUnreachable {
				s.log.Info("connector: form sign-in: target unreachable", "channel", id, "flow", cardFlow.ID, "err", s.scrubWith(secrets, err.Error()))
				s.metrics.signinFailures.Inc()
			}
			sess.replyError(env, protocol.TypeAuthStartAck,
				&protocol.Error{Code: perr.Code, Message: s.scrubWith(secrets, perr.Message), Retryable: perr.Retryable})
			return
		}
		s.log.Info("connector: form sign-in failed", "channel", id, "flow", cardFlow.ID, "err", s.scrubWith(secrets, err.Error()))
		msg := "sign-in failed"
		if perr != nil && perr.Message != "" {
			msg = perr.Message
		}
		s.metrics.signinFailures.Inc()
		sess.reply(env, protocol.TypeAuthStartAck, protocol.AuthStatePayload{
			ConnectorChannelID: id, FlowID: cardFlow.ID, AuthSessionID: sid,
			Status: protocol.AuthFailed, Message: s.scrubWith(secrets, msg),
		})
		return
	}
	now := s.now()
	s.auth.add(&authSession{id: sid, channelID: id, flowID: cardFlow.ID, flow: f,
		status: protocol.AuthAuthenticated, expiresAt: now.Add(s.opts.AuthSessionTTL)})
	d, derr := s.descriptor(ctx, id)
	if derr != nil {
		s.log.Error("connector: descriptor", "channel", id, "err", derr)
	}
	sess.reply(env, protocol.TypeAuthStartAck, protocol.AuthStatePayload{
		ConnectorChannelID: id, FlowID: cardFlow.ID, AuthSessionID: sid,
		Status: protocol.AuthAuthenticated, Message: "signed in", ConnectionDescriptor: d,
	})
	s.pushDescriptor(ctx, id)
}

func (sess *session) startQR(env *protocol.Envelope, id, flowID string, f qrFlow) {
	s := sess.srv
	ctx, cancel := context.WithTimeout(sess.ctx, s.opts.ToolTimeout)
	defer cancel()
	now := s.now()
	snap, err := s.channelState(id)
	if err != nil {
		sess.replyError(env, protocol.TypeAuthStartAck, protocol.AsError(err))
		return
	}
	a := &authSession{
		id: signurl.RandomID("auth_"), channelID: id, flowID: flowID, flow: f,
		status: protocol.AuthPending, expiresAt: now.Add(s.opts.AuthSessionTTL), prevStatus: snap.rec.Status,
		data: &qrData{},
	}
	if err := s.issueQR(ctx, a, f); err != nil {
		s.log.Warn("connector: issue QR code", "channel", id, "err", err.Error())
		sess.reply(env, protocol.TypeAuthStartAck, protocol.AuthStatePayload{
			ConnectorChannelID: id, FlowID: flowID, Status: protocol.AuthFailed, Message: "cannot issue a QR code",
		})
		return
	}
	if !s.auth.add(a) {
		sess.replyError(env, protocol.TypeAuthStartAck, protocol.Errorf(protocol.CodeChannelBusy, "too many sign-in sessions"))
		return
	}
	s.persistAuth(ctx, a)
	pushed := false
	if snap.rec.Status == protocol.StatusCreated {
		pushed = s.setStatusQuiet(ctx, id, protocol.StatusAuthenticating)
	}
	sess.reply(env, protocol.TypeAuthStartAck, s.authState(ctx, a.id, nil))
	if pushed {
		s.pushDescriptor(ctx, id)
	}
}

// issueQR makes a new token, QR text and PNG for a. a is not yet shared, or
// the caller holds no table lock (fields are set through the table).
func (s *Server) issueQR(ctx context.Context, a *authSession, f qrFlow) error {
	token := signurl.RandomID("qrt_")
	s.secrets.Add(token)
	exp := s.now().Add(f.cfg.TTL)
	text := token
	if f.cfg.Issue != nil {
		qs := &QRSession{ID: a.id, Token: token, Channel: &Channel{srv: s, id: a.channelID}, FlowID: a.flowID, ExpiresAt: exp, data: a.data}
		var t string
		err := safeCall(func() error {
			var err error
			t, err = f.cfg.Issue(ctx, qs)
			return err
		})
		if err != nil {
			return err
		}
		text = t
	}
	img, err := qr.PNGDataURL(text, f.cfg.ImageSize)
	if err != nil {
		return fmt.Errorf("qr image: %w", err)
	}
	apply := func(a *authSession) {
		a.qrText, a.qrImage, a.codeExpires = text, img, exp
		a.status, a.message = protocol.AuthPending, "scan the QR code to sign in"
	}
	if !s.auth.with(a.id, apply) {
		apply(a)
		a.token = token
		return nil
	}
	s.auth.setToken(a.id, token)
	return nil
}

// authState returns the auth state payload of a session, with the
// Descriptor when authenticated. extra may adjust it under the lock.
func (s *Server) authState(ctx context.Context, id string, extra func(a *authSession)) protocol.AuthStatePayload {
	var p protocol.AuthStatePayload
	var channelID string
	s.auth.with(id, func(a *authSession) {
		if extra != nil {
			extra(a)
		}
		channelID = a.channelID
		p = protocol.AuthStatePayload{
			ConnectorChannelID: a.channelID, FlowID: a.flowID, AuthSessionID: a.id,
			Status: a.status, Message: a.message,
		}
		if f, ok := a.flow.(qrFlow); ok {
			p.PollIntervalMillis = f.cfg.PollInterval.Milliseconds()
			if a.status == protocol.AuthPending || a.status == protocol.AuthScanned {
				p.QRCodeText, p.QRCodeImage = a.qrText, a.qrImage
				p.ExpiresAt = a.codeExpires.UnixMilli()
			}
		}
	})
	if p.Status == protocol.AuthAuthenticated {
		if d, err := s.descriptor(ctx, channelID); err == nil {
			p.ConnectionDescriptor = d
		}
	}
	return p
}

func (s *Server) persistAuth(ctx context.Context, a *authSession) {
	var rec store.AuthSession
	s.auth.with(a.id, func(a *authSession) {
		now := s.now()
		rec = store.AuthSession{ID: a.id, CardID: s.card.ConnectorCardID, ChannelID: a.channelID, FlowID: a.flowID,
			Status: a.status, ExpiresAt: a.expiresAt, State: []byte(a.token), CreatedAt: now, UpdatedAt: now}
	})
	if rec.ID == "" {
		return
	}
	if err := s.opts.Store.PutAuthSession(ctx, rec); err != nil {
		s.log.Warn("connector: persist sign-in session", "err", err)
	}
}

// setStatusQuiet sets a channel status without pushing; it reports whether
// the status changed.
func (s *Server) setStatusQuiet(ctx context.Context, id string, st protocol.ConnectionStatus) bool {
	changed := false
	_, err := s.update(ctx, id, func(cs *chanState) error {
		changed = cs.rec.Status != st
		cs.rec.Status = st
		return nil
	})
	return err == nil && changed
}

// endAuthenticating puts a channel left in authenticating back to the
// status it had before the session. It reports whether the status changed;
// the caller pushes the Descriptor (after its ack, if any).
func (s *Server) endAuthenticating(ctx context.Context, channelID string, prev protocol.ConnectionStatus) bool {
	if prev == "" || prev == protocol.StatusAuthenticating {
		prev = protocol.StatusCreated
	}
	changed := false
	_, err := s.update(ctx, channelID, func(cs *chanState) error {
		if cs.rec.Status == protocol.StatusAuthenticating {
			cs.rec.Status, changed = prev, true
		}
		return nil
	})
	return err == nil && changed
}
