package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// reopenConcurrency bounds the channel.open requests sent at once after a
// reconnect.
const reopenConcurrency = 16

// route is one channel open on a session: the runtime route of a persisted
// user channel, or a temporary sign-in channel (ucID "").
type route struct {
	channelID string
	ucID      string
	userID    string
	desc      *protocol.Descriptor
	// neg is the IM virtual channel's catalog: the hello-level negotiation
	// narrowed to the Descriptor's profiles. Rebuilt when they change.
	neg *protocol.Negotiated
}

// validateDescriptor normalises a v1 Descriptor and checks it against the
// Card, the channel and the runtime instance.
func validateDescriptor(d *protocol.Descriptor, card *protocol.Card, channelID, connectorID string) protocol.Violations {
	if d == nil {
		return protocol.Violations{{Path: "connection_descriptor", Reason: "missing"}}
	}
	protocol.NormalizeDescriptor(d)
	vs := protocol.ValidateDescriptor(d)
	vs = append(vs, protocol.ValidateDescriptorAgainstCard(d, card, channelID)...)
	if connectorID != "" && d.Connection.ConnectorID != "" && d.Connection.ConnectorID != connectorID {
		vs = append(vs, protocol.Violation{Path: "connection.connector_id",
			Reason: fmt.Sprintf("must equal the runtime instance %q, not %q", connectorID, d.Connection.ConnectorID)})
	}
	return vs
}

func (s *session) newRoute(channelID, ucID, userID string, d *protocol.Descriptor) *route {
	r := &route{channelID: channelID, ucID: ucID, userID: userID, desc: d}
	r.neg = protocol.NegotiateProfiles(d.Connection.Profiles, s.neg.Profiles())
	return r
}

func (s *session) route(channelID string) *route {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.routes[channelID]
}

func (s *session) setRoute(r *route) {
	s.mu.Lock()
	s.routes[r.channelID] = r
	s.mu.Unlock()
}

// updateRoute replaces the route of channelID with fn's copy of it,
// atomically; it returns the new route, or nil when the channel is not open.
func (s *session) updateRoute(channelID string, fn func(r *route)) *route {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.routes[channelID]
	if cur == nil {
		return nil
	}
	n := *cur
	fn(&n)
	s.routes[channelID] = &n
	return &n
}

// withDescriptor sets a route's Descriptor and rebuilds its catalog.
func (s *session) withDescriptor(r *route, d *protocol.Descriptor) {
	r.desc = d
	r.neg = protocol.NegotiateProfiles(d.Connection.Profiles, s.neg.Profiles())
}

func (s *session) dropRoute(channelID string) {
	s.mu.Lock()
	delete(s.routes, channelID)
	s.mu.Unlock()
}

// openChannel sends channel.open (channelID "" for a new channel) and
// returns the route of the id the connector answered with. The route is
// registered on the reader goroutine as the ack arrives, so that packets
// following the ack find it.
func (s *session) openChannel(ctx context.Context, channelID, ucID, userID string) (*route, error) {
	_, _, card := s.rt.view()
	var (
		r    *route
		verr error
	)
	onAck := func(env *protocol.Envelope) {
		var p protocol.ChannelOpenAckPayload
		if err := env.DecodePayload(&p); err != nil {
			verr = protocol.Errorf(protocol.CodeInvalidPacket, "channel.open.ack payload: %v", err)
			return
		}
		id := p.ConnectorChannelID
		if id == "" || env.ConnectorChannelID != id {
			verr = protocol.Errorf(protocol.CodeInvalidPacket, "channel.open.ack: envelope channel %q and payload channel %q must be set and equal", env.ConnectorChannelID, id)
			return
		}
		if vs := validateDescriptor(p.ConnectionDescriptor, card, id, s.connectorID); len(vs) > 0 {
			verr = fmt.Errorf("channel.open.ack descriptor: %w", vs)
			return
		}
		r = s.newRoute(id, ucID, userID, p.ConnectionDescriptor)
		s.setRoute(r)
	}
	if _, err := s.request(ctx, protocol.TypeChannelOpen, channelID, protocol.EmptyPayload{}, reqOpts{onAck: onAck}); err != nil {
		return nil, err
	}
	if verr != nil {
		return nil, verr
	}
	if r == nil {
		return nil, protocol.Errorf(protocol.CodeInvalidPacket, "channel.open.ack was not understood")
	}
	return r, nil
}

// closeChannel sends channel.close (best effort) and drops the route.
func (s *session) closeChannel(ctx context.Context, channelID string) {
	s.dropRoute(channelID)
	_, _ = s.request(ctx, protocol.TypeChannelClose, channelID, protocol.EmptyPayload{}, reqOpts{})
}

// reopenAll reopens every authenticated persisted channel of the connector
// concurrently, takes the id the connector returns and resumes the pending
// finals of each (section 6, 8.3).
func (rt *runtime) reopenAll(ctx context.Context, s *session) {
	ucs, err := rt.h.st.ListUserChannels(ctx, "", rt.cardID)
	if err != nil {
		rt.h.log.Warn("host: list channels to reopen", "card_id", rt.cardID, "err", err)
		return
	}
	sem := make(chan struct{}, reopenConcurrency)
	var wg sync.WaitGroup
	for _, uc := range ucs {
		if !uc.Authenticated {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := rt.reopen(ctx, s, uc); err != nil && ctx.Err() == nil {
				rt.h.log.Warn("host: reopen channel", "card_id", rt.cardID, "user_channel", uc.ID, "err", err)
				rt.h.emit(Event{Kind: EventChannel, CardID: rt.cardID, UserChannelID: uc.ID, ChannelID: uc.ChannelID, Detail: "reopen failed: " + err.Error()})
			}
		}()
	}
	wg.Wait()
}

// reopen opens one persisted channel on s and updates its record when the
// connector answered with another id or Descriptor.
func (rt *runtime) reopen(ctx context.Context, s *session, uc store.UserChannel) (*route, error) {
	r, err := s.openChannel(ctx, uc.ChannelID, uc.ID, uc.UserID)
	if err != nil {
		return nil, err
	}
	descJSON, _ := json.Marshal(r.desc)
	detail := "reopened"
	if r.channelID != uc.ChannelID {
		detail = "reopened with a new connector_channel_id"
	}
	uc.ChannelID = r.channelID
	uc.Descriptor = descJSON
	uc.Authenticated = r.desc.Authenticated()
	uc.UpdatedAt = time.Now().UTC()
	if err := rt.h.st.PutUserChannel(ctx, uc); err != nil {
		return nil, fmt.Errorf("store user channel: %w", err)
	}
	rt.h.emit(Event{Kind: EventChannel, CardID: rt.cardID, UserChannelID: uc.ID, ChannelID: r.channelID, Detail: detail})
	if err := rt.h.outbox.Resume(ctx, uc.ID); err != nil {
		rt.h.log.Warn("host: resume outbox", "user_channel", uc.ID, "err", err)
	}
	return r, nil
}

// onDescriptorPush applies a connection.descriptor.push: validated against
// the Card, the channel and the instance; a mismatch is ignored and logged.
func (rt *runtime) onDescriptorPush(ctx context.Context, s *session, env *protocol.Envelope) {
	var p protocol.DescriptorPayload
	r := s.route(env.ConnectorChannelID)
	err := env.DecodePayload(&p)
	if err == nil && r == nil {
		err = errors.New("channel is not open")
	}
	if err == nil {
		_, _, card := rt.view()
		if vs := validateDescriptor(p.ConnectionDescriptor, card, env.ConnectorChannelID, s.connectorID); len(vs) > 0 {
			err = vs
		}
	}
	if err != nil {
		rt.h.log.Warn("host: connection.descriptor.push ignored", "card_id", rt.cardID, "channel", env.ConnectorChannelID, "err", err)
		rt.h.emit(Event{Kind: EventDescriptorIgnored, CardID: rt.cardID, ChannelID: env.ConnectorChannelID, Detail: err.Error()})
		return
	}
	nr := s.updateRoute(r.channelID, func(n *route) { s.withDescriptor(n, p.ConnectionDescriptor) })
	if nr == nil || nr.ucID == "" {
		return
	}
	uc, err := rt.h.st.GetUserChannel(ctx, r.ucID)
	if err != nil {
		return
	}
	uc.Descriptor, _ = json.Marshal(nr.desc)
	uc.Authenticated = nr.desc.Authenticated()
	uc.UpdatedAt = time.Now().UTC()
	if err := rt.h.st.PutUserChannel(ctx, uc); err != nil {
		rt.h.log.Warn("host: store pushed descriptor", "user_channel", uc.ID, "err", err)
		return
	}
	rt.h.emit(Event{Kind: EventChannel, CardID: rt.cardID, UserChannelID: uc.ID, ChannelID: uc.ChannelID, Detail: "descriptor " + nr.desc.Connection.Status})
}

// Channels lists the user's channels of a connector (all of the user's
// channels of every connector when cardID is "").
func (h *Host) Channels(ctx context.Context, userID, cardID string) ([]store.UserChannel, error) {
	if cardID != "" {
		return h.st.ListUserChannels(ctx, userID, cardID)
	}
	var out []store.UserChannel
	for _, rt := range h.runtimes() {
		ucs, err := h.st.ListUserChannels(ctx, userID, rt.cardID)
		if err != nil {
			return nil, fmt.Errorf("host: channels: %w", err)
		}
		out = append(out, ucs...)
	}
	return out, nil
}

// channelRuntime loads a user channel and its connector runtime.
func (h *Host) channelRuntime(ctx context.Context, ucID string) (store.UserChannel, *runtime, error) {
	uc, err := h.st.GetUserChannel(ctx, ucID)
	if errors.Is(err, store.ErrNotFound) {
		return uc, nil, fmt.Errorf("host: %s: %w", ucID, ErrUnknownChannel)
	}
	if err != nil {
		return uc, nil, fmt.Errorf("host: load channel %s: %w", ucID, err)
	}
	rt := h.runtime(uc.CardID)
	if rt == nil {
		return uc, nil, fmt.Errorf("host: channel %s: %s: %w", ucID, uc.CardID, ErrUnknownConnector)
	}
	return uc, rt, nil
}

// ensureRoute returns an online session with the channel open on it,
// opening (and re-identifying) it when needed.
func (rt *runtime) ensureRoute(ctx context.Context, uc store.UserChannel) (*session, *route, error) {
	s, err := rt.waitOnline(ctx)
	if err != nil {
		return nil, nil, err
	}
	if r := s.route(uc.ChannelID); r != nil {
		return s, r, nil
	}
	r, err := rt.reopen(ctx, s, uc)
	if err != nil {
		return nil, nil, err
	}
	return s, r, nil
}

// Logout signs the channel out of its target system (auth.logout). The
// record is kept and marked unauthenticated with the Descriptor the
// connector returned; the runtime route is closed (section 8.13).
func (h *Host) Logout(ctx context.Context, userChannelID string) error {
	uc, rt, err := h.channelRuntime(ctx, userChannelID)
	if err != nil {
		return err
	}
	s, r, err := rt.ensureRoute(ctx, uc)
	if err != nil {
		return fmt.Errorf("host: logout: %w", err)
	}
	env, err := s.request(ctx, protocol.TypeAuthLogout, r.channelID, protocol.EmptyPayload{}, reqOpts{})
	if err != nil {
		return fmt.Errorf("host: logout: %w", err)
	}
	var p protocol.AuthLogoutAckPayload
	if err := env.DecodePayload(&p); err != nil {
		return fmt.Errorf("host: logout: %w", protocol.Errorf(protocol.CodeInvalidPacket, "auth.logout.ack payload: %v", err))
	}
	uc, err = h.st.GetUserChannel(ctx, userChannelID)
	if err != nil {
		return fmt.Errorf("host: logout: %w", err)
	}
	_, _, card := rt.view()
	if p.ConnectionDescriptor != nil && len(validateDescriptor(p.ConnectionDescriptor, card, r.channelID, s.connectorID)) == 0 {
		uc.Descriptor, _ = json.Marshal(p.ConnectionDescriptor)
	}
	uc.Authenticated = false
	uc.UpdatedAt = time.Now().UTC()
	if err := h.st.PutUserChannel(ctx, uc); err != nil {
		return fmt.Errorf("host: logout: %w", err)
	}
	s.closeChannel(ctx, r.channelID)
	h.emit(Event{Kind: EventChannel, CardID: uc.CardID, UserChannelID: uc.ID, ChannelID: uc.ChannelID, Detail: "logged out"})
	return nil
}

// CloseChannel closes the runtime route of a user channel (channel.close,
// section 8.5): the connector stops pushing on it, the record and the
// target sign-in stay, and the next reconnect reopens it.
func (h *Host) CloseChannel(ctx context.Context, userChannelID string) error {
	uc, rt, err := h.channelRuntime(ctx, userChannelID)
	if err != nil {
		return err
	}
	s := rt.session()
	if s == nil || s.route(uc.ChannelID) == nil {
		return nil
	}
	s.dropRoute(uc.ChannelID)
	if _, err := s.request(ctx, protocol.TypeChannelClose, uc.ChannelID, protocol.EmptyPayload{}, reqOpts{}); err != nil {
		return fmt.Errorf("host: close channel: %w", err)
	}
	return nil
}

// DeleteChannel closes the channel's route (channel.close, best effort) and
// deletes the record with its pending finals and inbox records. It does not
// sign out of the target system; call [Host.Logout] first for that.
func (h *Host) DeleteChannel(ctx context.Context, userChannelID string) error {
	uc, rt, err := h.channelRuntime(ctx, userChannelID)
	if err != nil && !errors.Is(err, ErrUnknownConnector) {
		return err
	}
	if rt != nil {
		if s := rt.session(); s != nil && s.route(uc.ChannelID) != nil {
			s.closeChannel(ctx, uc.ChannelID)
		}
	}
	if err := h.forgetChannel(ctx, uc); err != nil {
		return fmt.Errorf("host: delete channel: %w", err)
	}
	return nil
}

// BindSession makes sessionID the dedicated session of a user channel: tool
// calls of that session resolve to this channel only (section 10.1). An
// empty sessionID removes the binding. Other channels of the user bound to
// the same session are unbound.
func (h *Host) BindSession(ctx context.Context, userChannelID, sessionID string) error {
	uc, err := h.st.GetUserChannel(ctx, userChannelID)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("host: bind session: %w", ErrUnknownChannel)
	}
	if err != nil {
		return fmt.Errorf("host: bind session: %w", err)
	}
	if sessionID != "" {
		all, err := h.Channels(ctx, uc.UserID, "")
		if err != nil {
			return err
		}
		for _, o := range all {
			if o.ID != uc.ID && o.SessionID == sessionID {
				o.SessionID = ""
				if err := h.st.PutUserChannel(ctx, o); err != nil {
					return fmt.Errorf("host: bind session: %w", err)
				}
			}
		}
	}
	uc.SessionID = sessionID
	uc.UpdatedAt = time.Now().UTC()
	if err := h.st.PutUserChannel(ctx, uc); err != nil {
		return fmt.Errorf("host: bind session: %w", err)
	}
	return nil
}
