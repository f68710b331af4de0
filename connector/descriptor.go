package connector

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/xconn/xconn/protocol"
)

// descriptor computes and validates the Descriptor of a channel.
func (s *Server) descriptor(_ context.Context, id string) (*protocol.Descriptor, error) {
	s.mu.Lock()
	cs, ok := s.channels[id]
	if !ok {
		s.mu.Unlock()
		return nil, notFound(id)
	}
	snap := cs.snap()
	card := s.card
	var profiles []protocol.Profile
	switch {
	case snap.open != nil:
		profiles = snap.open.negotiated().Profiles()
	case s.leases[snap.rec.ConnectorID] != nil && s.leases[snap.rec.ConnectorID].negotiated != nil:
		profiles = s.leases[snap.rec.ConnectorID].negotiated.Profiles()
	}
	s.mu.Unlock()
	if card == nil {
		return nil, ErrNotStarted
	}
	if len(profiles) == 0 {
		profiles = append(profiles, card.Supports.Profiles...)
	}
	d := s.buildDescriptor(card, snap, profiles)
	if vs := protocol.ValidateDescriptorAgainstCard(d, card, id); len(vs) > 0 {
		return nil, protocol.Errorf(protocol.CodeInternal, "descriptor of %s is invalid: %s", id, vs.Error())
	}
	return d, nil
}

func (s *Server) buildDescriptor(card *protocol.Card, snap chanSnap, profiles []protocol.Profile) *protocol.Descriptor {
	tt := ""
	if len(card.Supports.TargetTypes) > 0 {
		tt = card.Supports.TargetTypes[0]
	}
	provider, label := targetOf(card, tt)
	status := snap.rec.Status
	if status == "" {
		status = protocol.StatusCreated
	}
	authed := isAuthenticated(status)
	display := label + " not bound"
	hint := ""
	if authed {
		display, hint = snap.binding.DisplayName, snap.binding.AccountHint
		if display == "" {
			display = label
		}
	}
	d := &protocol.Descriptor{
		Schema: protocol.DescriptorSchema,
		Connection: protocol.Connection{
			ConnectorCardID:    card.ConnectorCardID,
			ConnectorID:        snap.rec.ConnectorID,
			ConnectorChannelID: snap.rec.ChannelID,
			TargetType:         tt,
			Profiles:           profiles,
			Status:             status,
		},
		Target: protocol.DescriptorTarget{
			Provider:    provider,
			Label:       label,
			DisplayName: s.secrets.Scrub(display),
			AccountHint: s.secrets.Scrub(hint),
		},
	}
	if authed {
		d.Connection.SetSignedInAt(snap.binding.signedInAt)
	}
	// A tool's Profile is enabled when both the Card and the channel's
	// profiles have it (what protocol.NegotiateProfiles would say, without
	// building its packet table on every open).
	enabled := func(p protocol.Profile) bool {
		return slices.Contains(profiles, p) && slices.Contains(card.Supports.Profiles, p)
	}
	if len(card.Tools) > 0 {
		d.Tools = make([]protocol.ToolState, 0, len(card.Tools))
	}
	for _, t := range card.Tools {
		d.Tools = append(d.Tools, s.toolStateWith(t, snap, status, enabled))
	}
	return d
}

// toolState is the availability of one Card tool on a channel: the
// connector's override, else derived from the status and the profiles.
func (s *Server) toolState(t protocol.Tool, snap chanSnap, status protocol.ConnectionStatus, neg *protocol.Negotiated) protocol.ToolState {
	return s.toolStateWith(t, snap, status, neg.Has)
}

// toolStateWith is toolState with enabled telling the enabled Profiles.
func (s *Server) toolStateWith(t protocol.Tool, snap chanSnap, status protocol.ConnectionStatus, enabled func(protocol.Profile) bool) protocol.ToolState {
	st := protocol.ToolState{ToolID: t.ToolID}
	if t.Profile != "" && !enabled(t.Profile) {
		st.Status, st.Reason = protocol.ToolNotSupported, fmt.Sprintf("profile %s is not enabled on this channel", t.Profile)
		return st
	}
	if a, ok := snap.tools[t.ToolID]; ok {
		st.Status, st.TargetPermissionState, st.Reason = a.Status, a.Permission, s.secrets.Scrub(a.Reason)
		return st
	}
	s.mu.Lock()
	entry := s.tools[t.ToolID]
	s.mu.Unlock()
	public := entry != nil && entry.opts.Public
	switch {
	case public:
		st.Status = protocol.ToolAvailable
	case status == protocol.StatusConnected || status == protocol.StatusDegraded:
		st.Status, st.TargetPermissionState = protocol.ToolAvailable, protocol.PermissionGranted
	case status == protocol.StatusExpired || status == protocol.StatusRevoked:
		st.Status, st.TargetPermissionState, st.Reason = protocol.ToolRequiresReauth, protocol.PermissionRequiresReauth, "sign in again"
	case status == protocol.StatusOffline || status == protocol.StatusError:
		st.Status, st.Reason = protocol.ToolUnavailable, "target is "+status
	default:
		st.Status, st.Reason = protocol.ToolUnavailable, "sign-in required"
	}
	return st
}

// targetOf returns the provider and label of the Card's target of type tt.
func targetOf(card *protocol.Card, tt string) (provider, label string) {
	for _, t := range card.Supports.Targets {
		if tt == "" || t.TargetType == tt {
			return t.Provider, t.Label
		}
	}
	id := card.ConnectorCardID
	if i := strings.LastIndexByte(id, '.'); i >= 0 {
		id = id[i+1:]
	}
	return id, card.Connector.Name
}

// pushDescriptor sends connection.descriptor.push when the channel is open.
// A failure is logged: a push is a best-effort notification.
func (s *Server) pushDescriptor(ctx context.Context, id string) {
	s.mu.Lock()
	cs, ok := s.channels[id]
	var sess *session
	if ok {
		sess = cs.open
	}
	s.mu.Unlock()
	if sess == nil {
		return
	}
	d, err := s.descriptor(ctx, id)
	if err != nil {
		s.log.Error("connector: descriptor", "channel", id, "err", err)
		return
	}
	env := sess.newPacket(protocol.TypeDescriptorPush, id)
	if err := env.SetPayload(protocol.DescriptorPayload{ConnectionDescriptor: d}); err == nil {
		sess.send(ctx, env)
	}
	s.metrics.descriptorPushes.Inc()
}
