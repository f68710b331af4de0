package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/xconn/xconn/internal/jsonbytes"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// reopenConcurrency bounds the channel.open requests sent at once after a
// reconnect: as many as the SDK's default channel workers per socket
// (connector.DefaultWorkers), so that a reopen is not bound by round trips
// (each reopen is a round trip and, when nothing changed, no write).
const reopenConcurrency = 64

// route is one channel open on a session: the runtime route of a persisted
// user channel, or a temporary sign-in channel (ucID "").
type route struct {
	channelID string
	ucID      string
	userID    string
	desc      *protocol.Descriptor
	// descSeq is the arrival number (session.seq) of the push or sign-in
	// ack that set desc (0: another ack, such as an open's).
	descSeq uint64
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

// maxSharedCatalogs bounds the distinct channel catalogs a session keeps
// for sharing; beyond it each route gets its own.
const maxSharedCatalogs = 64

// catalog returns the channel catalog of a Descriptor's profiles: the
// hello-level negotiation narrowed to them, shared by the session's routes.
func (s *session) catalog(profiles []protocol.Profile) *protocol.Negotiated {
	key := profileKey(profiles)
	s.catMu.Lock()
	defer s.catMu.Unlock()
	if n := s.catalogs[key]; n != nil {
		return n
	}
	n := protocol.NegotiateProfiles(profiles, s.neg.Profiles())
	if len(s.catalogs) < maxSharedCatalogs {
		s.catalogs[key] = n
	}
	return n
}

// profileKey is a map key for a profile list.
func profileKey(profiles []protocol.Profile) string {
	var key strings.Builder
	for _, p := range profiles {
		key.WriteString(string(p))
		key.WriteByte(0)
	}
	return key.String()
}

// maxInterned bounds the strings a session keeps for sharing among its
// routes' Descriptors.
const maxInterned = 4096

// intern replaces the strings of d that repeat from channel to channel
// (schema, card and instance ids, target, profiles, statuses, tool ids) by
// the session's copies, so that the Descriptors of open channels share
// them instead of holding one decoded copy each. d must not be shared with
// another goroutine yet.
func (s *session) intern(d *protocol.Descriptor) {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	if s.strs == nil {
		s.strs = map[string]string{}
	}
	internString(s.strs, &d.Schema)
	c := &d.Connection
	internString(s.strs, &c.ConnectorCardID)
	internString(s.strs, &c.ConnectorID)
	internString(s.strs, &c.TargetType)
	internString(s.strs, &c.Status)
	for i := range c.Profiles {
		internString(s.strs, &c.Profiles[i])
	}
	internString(s.strs, &d.Target.Provider)
	internString(s.strs, &d.Target.Label)
	for i := range d.Tools {
		t := &d.Tools[i]
		internString(s.strs, &t.ToolID)
		internString(s.strs, &t.Status)
		internString(s.strs, &t.TargetPermissionState)
		internString(s.strs, &t.Reason)
	}
}

func internString[T ~string](m map[string]string, p *T) {
	if *p == "" {
		return
	}
	if v, ok := m[string(*p)]; ok {
		*p = T(v)
		return
	}
	if len(m) < maxInterned {
		m[string(*p)] = string(*p)
	}
}

func (s *session) newRoute(channelID, ucID, userID string, d *protocol.Descriptor) *route {
	s.intern(d)
	return &route{channelID: channelID, ucID: ucID, userID: userID, desc: d, neg: s.catalog(d.Connection.Profiles)}
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
	s.intern(d)
	r.desc = d
	r.neg = s.catalog(d.Connection.Profiles)
}

// dropRoute forgets the route of channelID; a reopen of it in flight then
// installs no route when its ack arrives (the close came after the open on
// the wire, so the connector has the channel closed).
func (s *session) dropRoute(channelID string) {
	s.mu.Lock()
	delete(s.routes, channelID)
	if tok := s.opening[channelID]; tok != nil {
		tok.dropped = true
	}
	s.mu.Unlock()
}

// openTok is shared by the reopens of one channel in flight together;
// dropRoute sets dropped. s.mu guards it.
type openTok struct {
	n       int
	dropped bool
}

// beginOpen registers a reopen of channelID in flight ("" for a new
// channel, which nothing can drop yet); end unregisters it.
func (s *session) beginOpen(channelID string) (tok *openTok, end func()) {
	if channelID == "" {
		return &openTok{}, func() {}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opening == nil {
		s.opening = map[string]*openTok{}
	}
	tok = s.opening[channelID]
	if tok == nil || tok.dropped {
		tok = &openTok{}
		s.opening[channelID] = tok
	}
	tok.n++
	return tok, func() {
		s.mu.Lock()
		if tok.n--; tok.n == 0 && s.opening[channelID] == tok {
			delete(s.opening, channelID)
		}
		s.mu.Unlock()
	}
}

// openChannel sends channel.open (channelID "" for a new channel) and
// returns the route of the id the connector answered with. The route is
// registered on the reader goroutine as the ack arrives, so that packets
// following the ack find it.
func (s *session) openChannel(ctx context.Context, channelID, ucID, userID string) (*route, error) {
	r, _, err := s.openChannelRaw(ctx, channelID, ucID, userID)
	return r, err
}

// openChannelRaw is openChannel that also returns the ack's
// connection_descriptor as it came on the wire (nil when it cannot tell),
// for reopen to compare with the stored one without encoding the decoded
// Descriptor again. The bytes are the ack's, held by nobody else.
func (s *session) openChannelRaw(ctx context.Context, channelID, ucID, userID string) (*route, []byte, error) {
	_, _, card := s.rt.view()
	var (
		r       *route
		verr    error
		descRaw []byte
	)
	tok, end := s.beginOpen(channelID)
	defer end()
	onAck := func(env *protocol.Envelope) {
		var p protocol.ChannelOpenAckPayload
		// The common ack in one pass (the reader goroutine runs this);
		// any other goes through encoding/json as before.
		if !protocol.DecodeChannelOpenAckFast(env.Payload, &p) {
			if err := env.DecodePayload(&p); err != nil {
				verr = protocol.Errorf(protocol.CodeInvalidPacket, "channel.open.ack payload: %v", err)
				return
			}
		} else {
			descRaw = ackDescriptorBytes(env.Payload)
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
		s.mu.Lock()
		if tok.dropped {
			verr = &protocol.Error{Code: protocol.CodeChannelNotOpen, Message: "channel closed while it opened", Retryable: true}
		} else {
			s.routes[r.channelID] = r
		}
		s.mu.Unlock()
	}
	// {} as encoded bytes: EmptyPayload's encoder goes through reflection.
	if _, err := s.request(ctx, protocol.TypeChannelOpen, channelID, json.RawMessage(`{}`), reqOpts{onAck: onAck}); err != nil {
		return nil, nil, err
	}
	if verr != nil {
		return nil, nil, verr
	}
	if r == nil {
		return nil, nil, protocol.Errorf(protocol.CodeInvalidPacket, "channel.open.ack was not understood")
	}
	return r, descRaw, nil
}

// ackDescriptorBytes returns the connection_descriptor member of a
// channel.open.ack payload that protocol.DecodeChannelOpenAckFast took
// (valid JSON, each member once), or nil.
func ackDescriptorBytes(payload []byte) []byte {
	var raw []byte
	jsonbytes.EachMember(payload, func(key, val []byte) bool {
		if string(key) == "connection_descriptor" {
			raw = val
			return false
		}
		return true
	})
	return raw
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
	mark, markOK := rt.h.chans.writeMark()
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
		if s.route(uc.ChannelID) != nil {
			// Opened on this session since it went online (a sign-in that
			// finished before this list, a call's ensureRoute): it is
			// current, and a second channel.open would race the
			// Descriptors pushed since with its ack's.
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := rt.reopen(ctx, s, listedChannel{uc: uc, mark: mark, ok: markOK}); err != nil && ctx.Err() == nil {
				rt.h.log.Warn("host: reopen channel", "card_id", rt.cardID, "user_channel", uc.ID, "err", err)
				rt.h.emit(Event{Kind: EventChannel, CardID: rt.cardID, UserChannelID: uc.ID, ChannelID: uc.ChannelID, Detail: "reopen failed: " + err.Error()})
			}
		}()
	}
	wg.Wait()
}

// reopen opens one persisted channel on s and updates its record with the
// id and Descriptor the connector answered with (or a Descriptor pushed
// since), when they differ from the stored ones. A channel closed while it reopened (logout, close, delete) keeps
// its record as the closing left it.
func (rt *runtime) reopen(ctx context.Context, s *session, l listedChannel) (*route, error) {
	uc := l.uc
	r, descRaw, err := s.openChannelRaw(ctx, uc.ChannelID, uc.ID, uc.UserID)
	if err != nil {
		return nil, err
	}
	opened := r.desc
	detail := "reopened"
	if r.channelID != uc.ChannelID {
		detail = "reopened with a new connector_channel_id"
	}
	_, err = rt.h.updateListedChannel(ctx, l, func(rec *store.UserChannel) error {
		cur := s.route(r.channelID)
		if cur == nil {
			return &protocol.Error{Code: protocol.CodeChannelNotOpen, Message: "channel closed while it reopened", Retryable: true}
		}
		descJSON := rec.Descriptor
		if cur.desc != opened || descRaw == nil || !bytes.Equal(rec.Descriptor, descRaw) {
			enc, err := json.Marshal(cur.desc)
			if err != nil {
				return fmt.Errorf("encode descriptor: %w", err)
			}
			descJSON = enc
		}
		// Else the ack carried the very bytes stored, and cur.desc was
		// decoded from them: the stored bytes are json.Marshal's encoding
		// of a decoded, normalised Descriptor without extension members
		// (the fast decoder takes no other), which decoding gives back
		// and encoding turns into the same bytes again.
		r = cur
		if rec.ChannelID == cur.channelID && rec.Authenticated == cur.desc.Authenticated() && bytes.Equal(rec.Descriptor, descJSON) {
			return errSkipWrite // the usual reconnect: nothing changed, no write
		}
		rec.ChannelID = cur.channelID
		rec.Descriptor = descJSON
		rec.Authenticated = cur.desc.Authenticated()
		rec.UpdatedAt = time.Now().UTC()
		return nil
	})
	if err != nil {
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
		s.takePushSeq(env)
		rt.h.log.Warn("host: connection.descriptor.push ignored", "card_id", rt.cardID, "channel", env.ConnectorChannelID, "err", err)
		rt.h.emit(Event{Kind: EventDescriptorIgnored, CardID: rt.cardID, ChannelID: env.ConnectorChannelID, Detail: err.Error()})
		return
	}
	seq := s.takePushSeq(env)
	nr := s.updateRoute(r.channelID, func(n *route) {
		if seq != 0 && seq < n.descSeq {
			return // older than the sign-in ack whose Descriptor the route holds
		}
		s.withDescriptor(n, p.ConnectionDescriptor)
		n.descSeq = seq
	})
	if nr == nil || nr.ucID == "" {
		return // closed, or a sign-in channel: its sign-in stores the newer Descriptor
	}
	// The record changes under its lock, and only while the route still
	// holds this Descriptor: a logout, reopen or sign-in of the channel is
	// then wholly before or wholly after this push (a logout drops the route
	// under the same lock, so a push it overtook cannot sign the record in
	// again).
	unlock := rt.h.chans.lockRecord(nr.ucID)
	if cur := s.route(nr.channelID); cur == nil || cur.desc != nr.desc {
		unlock()
		return
	}
	uc, err := rt.h.st.GetUserChannel(ctx, nr.ucID)
	if err == nil {
		uc.Descriptor, _ = json.Marshal(nr.desc)
		uc.Authenticated = nr.desc.Authenticated()
		uc.UpdatedAt = time.Now().UTC()
		err = rt.h.putUserChannel(ctx, uc)
	}
	unlock()
	if err != nil {
		rt.h.log.Warn("host: store pushed descriptor", "user_channel", nr.ucID, "err", err)
		return
	}
	rt.h.emit(Event{Kind: EventChannel, CardID: rt.cardID, UserChannelID: uc.ID, ChannelID: uc.ChannelID, Detail: "descriptor " + nr.desc.Connection.Status})
}

// Channels lists the user's channels of a connector (all of the user's
// channels of every connector when cardID is ""). A user's channels are
// served from the host's cache; userID "" lists every user's from the store.
func (h *Host) Channels(ctx context.Context, userID, cardID string) ([]store.UserChannel, error) {
	if userID == "" && cardID != "" {
		return h.st.ListUserChannels(ctx, userID, cardID)
	}
	var out []store.UserChannel
	for _, rt := range h.runtimes() {
		if cardID != "" && rt.cardID != cardID {
			continue
		}
		if userID == "" {
			ucs, err := h.st.ListUserChannels(ctx, userID, rt.cardID)
			if err != nil {
				return nil, fmt.Errorf("host: channels: %w", err)
			}
			out = append(out, ucs...)
			continue
		}
		cc, err := h.userCards(ctx, userID, rt.cardID)
		if err != nil {
			return nil, fmt.Errorf("host: channels: %w", err)
		}
		for _, c := range cc.list {
			out = append(out, c.record())
		}
	}
	if cardID != "" && out == nil && h.runtime(cardID) == nil {
		// A connector that is not admitted (any more): its records, if any.
		return h.st.ListUserChannels(ctx, userID, cardID)
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
	r, err := rt.reopen(ctx, s, listedChannel{uc: uc})
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
	_, _, card := rt.view()
	desc := p.ConnectionDescriptor
	if desc != nil && len(validateDescriptor(desc, card, r.channelID, s.connectorID)) > 0 {
		desc = nil
	}
	// The route goes first, under the record's lock: a Descriptor push
	// still in flight then finds no route and cannot sign the record in
	// again after this.
	uc, err = h.updateUserChannel(ctx, userChannelID, func(rec *store.UserChannel) error {
		s.dropRoute(r.channelID)
		if desc != nil {
			b, err := json.Marshal(desc)
			if err != nil {
				return fmt.Errorf("encode descriptor: %w", err)
			}
			rec.Descriptor = b
		}
		rec.Authenticated = false
		rec.UpdatedAt = time.Now().UTC()
		return nil
	})
	if err != nil {
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
	unlock := h.chans.lockRecord(uc.ID)
	s.dropRoute(uc.ChannelID)
	unlock()
	h.chans.invalidate(uc.UserID)
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
//
// The embedder rarely needs it: a sign-in binds a channel that has no
// session to its dedicated session, whose id is the user channel's id
// (section 6.3), and [UserMessage.SessionID] carries it. Call BindSession
// to use a session id of the platform's own instead; a later sign-in keeps
// it (and binds an unbound channel again).
func (h *Host) BindSession(ctx context.Context, userChannelID, sessionID string) error {
	uc, err := h.st.GetUserChannel(ctx, userChannelID)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("host: bind session: %w", ErrUnknownChannel)
	}
	if err != nil {
		return fmt.Errorf("host: bind session: %w", err)
	}
	unlock := h.chans.lockAll() // several records of the user may change
	defer unlock()
	if sessionID != "" {
		for _, rt := range h.runtimes() {
			all, err := h.st.ListUserChannels(ctx, uc.UserID, rt.cardID)
			if err != nil {
				return fmt.Errorf("host: bind session: %w", err)
			}
			for _, o := range all {
				if o.ID != uc.ID && o.SessionID == sessionID {
					o.SessionID = ""
					if err := h.putUserChannel(ctx, o); err != nil {
						return fmt.Errorf("host: bind session: %w", err)
					}
				}
			}
		}
	}
	// Read again under the lock: a concurrent writer may have changed it.
	if uc, err = h.st.GetUserChannel(ctx, userChannelID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("host: bind session: %w", ErrUnknownChannel)
		}
		return fmt.Errorf("host: bind session: %w", err)
	}
	uc.SessionID = sessionID
	uc.UpdatedAt = time.Now().UTC()
	if err := h.putUserChannel(ctx, uc); err != nil {
		return fmt.Errorf("host: bind session: %w", err)
	}
	return nil
}
