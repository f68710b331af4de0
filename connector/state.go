package connector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// chanState is the in-memory state of one known channel; the store is the
// durable copy. Fields are guarded by Server.mu; pmu serialises updates so
// that the store sees them in order.
type chanState struct {
	pmu     sync.Mutex
	rec     store.Channel // rec.Binding holds the encoded binding
	binding Binding
	tools   map[string]ToolAvailability
	open    *session  // socket the channel is open on, nil when none
	lane    *toolLane // off-queue tool calls of the socket it names (device_dispatch.go)
	// deferred marks outbox entries of the channel that may wait for a
	// later attempt (deferIMv2, deferIMv1, deferRestored; see
	// open_resume.go).
	deferred uint8
}

// chanSnap is a consistent copy of a chanState.
type chanSnap struct {
	rec     store.Channel
	binding Binding
	tools   map[string]ToolAvailability
	open    *session
}

// storedBinding is the encoded form of a Binding inside store.Channel.Binding
// (encrypted at rest by the store).
type storedBinding struct {
	Data    []byte   `json:"d,omitempty"`
	Secrets []string `json:"s,omitempty"`
	// At is the sign-in time in Unix milliseconds (0: unknown, a binding
	// stored before it was recorded).
	At int64 `json:"t,omitempty"`
}

func encodeBinding(b Binding) ([]byte, error) {
	if b.Data == nil && len(b.Secrets) == 0 && b.signedInAt.IsZero() {
		return nil, nil
	}
	sb := storedBinding{Data: b.Data, Secrets: b.Secrets}
	if !b.signedInAt.IsZero() {
		sb.At = b.signedInAt.UnixMilli()
	}
	return json.Marshal(sb)
}

func decodeBinding(rec store.Channel) (Binding, error) {
	b := Binding{DisplayName: rec.DisplayName, AccountHint: rec.AccountHint}
	if len(rec.Binding) == 0 {
		return b, nil
	}
	var sb storedBinding
	if err := json.Unmarshal(rec.Binding, &sb); err != nil {
		return b, fmt.Errorf("decode binding of %s: %w", rec.ChannelID, err)
	}
	b.Data, b.Secrets = sb.Data, sb.Secrets
	if sb.At > 0 {
		b.signedInAt = time.UnixMilli(sb.At)
	}
	return b, nil
}

func (b Binding) clone() Binding {
	b.handoff = nil
	b.Data = slices.Clone(b.Data)
	b.Secrets = slices.Clone(b.Secrets)
	return b
}

func notFound(id string) error {
	return protocol.Errorf(protocol.CodeConnectionNotFound, "channel %s does not exist", id)
}

// channelState returns a snapshot of a known channel.
func (s *Server) channelState(id string) (chanSnap, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, ok := s.channels[id]
	if !ok {
		return chanSnap{}, notFound(id)
	}
	return cs.snap(), nil
}

// toolSnap returns what a tool call needs of a known channel: its record
// and its availability entry for toolID (the only one tools holds), without
// copying the binding or the other entries.
func (s *Server) toolSnap(id, toolID string) (chanSnap, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, ok := s.channels[id]
	if !ok {
		return chanSnap{}, notFound(id)
	}
	snap := chanSnap{rec: cs.rec, open: cs.open}
	if a, ok := cs.tools[toolID]; ok {
		snap.tools = map[string]ToolAvailability{toolID: a}
	}
	return snap, nil
}

// snap copies cs; the caller holds Server.mu.
func (cs *chanState) snap() chanSnap {
	return chanSnap{rec: cs.rec, binding: cs.binding.clone(), tools: maps.Clone(cs.tools), open: cs.open}
}

// update applies f to the channel under the locks, then persists the
// record. f must not block.
func (s *Server) update(ctx context.Context, id string, f func(cs *chanState) error) (chanSnap, error) {
	s.mu.Lock()
	cs, ok := s.channels[id]
	s.mu.Unlock()
	if !ok {
		return chanSnap{}, notFound(id)
	}
	cs.pmu.Lock()
	defer cs.pmu.Unlock()
	s.mu.Lock()
	if s.channels[id] != cs {
		s.mu.Unlock()
		return chanSnap{}, notFound(id)
	}
	if err := f(cs); err != nil {
		s.mu.Unlock()
		return chanSnap{}, err
	}
	cs.rec.UpdatedAt = s.now()
	snap := cs.snap()
	s.mu.Unlock()
	if err := s.opts.Store.PutChannel(ctx, snap.rec); err != nil {
		return snap, fmt.Errorf("connector: persist channel %s: %w", id, err)
	}
	return snap, nil
}

// statusOf returns the status of a known channel.
func (s *Server) statusOf(id string) (protocol.ConnectionStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, ok := s.channels[id]
	if !ok {
		return "", false
	}
	return cs.rec.Status, true
}

// errUnchanged makes update skip the store when f changed nothing.
var errUnchanged = errors.New("unchanged")

// transition sets channel id to status when its current status satisfies
// from (checked under the lock), persists it and reports whether it
// changed; the caller pushes the Descriptor. A failure to persist is
// logged.
func (s *Server) transition(ctx context.Context, id string, from func(protocol.ConnectionStatus) bool, status protocol.ConnectionStatus) bool {
	_, err := s.update(ctx, id, func(cs *chanState) error {
		if cs.rec.Status == status || !from(cs.rec.Status) {
			return errUnchanged
		}
		cs.rec.Status = status
		return nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		s.log.Warn("connector: set channel status", "channel", id, "status", status, "err", err)
	}
	return err == nil
}

// keptBinding returns the binding channel id holds: it is signed in, or
// expired or revoked and keeps its binding until a new sign-in or logout.
func (s *Server) keptBinding(id string) (Binding, bool) {
	st, err := s.channelState(id)
	if err != nil || (!isAuthenticated(st.rec.Status) && st.rec.Binding == nil) {
		return Binding{}, false
	}
	return st.binding, true
}

func (s *Server) setStatus(ctx context.Context, id string, status protocol.ConnectionStatus) error {
	if !slices.Contains(protocol.ConnectionStatuses(), status) {
		return fmt.Errorf("connector: unknown connection status %q", status)
	}
	changed := false
	_, err := s.update(ctx, id, func(cs *chanState) error {
		changed = cs.rec.Status != status
		cs.rec.Status = status
		return nil
	})
	if err != nil {
		return err
	}
	if changed {
		s.pushDescriptor(ctx, id)
	}
	return nil
}

func (s *Server) setToolAvailability(ctx context.Context, id, toolID string, a ToolAvailability) error {
	s.mu.Lock()
	_, known := s.tools[toolID]
	s.mu.Unlock()
	if !known {
		return protocol.Errorf(protocol.CodeUnknownTool, "tool %s is not registered", toolID)
	}
	_, err := s.update(ctx, id, func(cs *chanState) error {
		if a == (ToolAvailability{}) {
			delete(cs.tools, toolID)
			return nil
		}
		if cs.tools == nil {
			cs.tools = map[string]ToolAvailability{}
		}
		cs.tools[toolID] = a
		return nil
	})
	if err != nil {
		return err
	}
	s.pushDescriptor(ctx, id)
	return nil
}

func (s *Server) updateBinding(ctx context.Context, id string, b Binding) error {
	b.handoff = nil
	s.secrets.Add(b.Secrets...)
	changed := false
	_, err := s.update(ctx, id, func(cs *chanState) error {
		if !isAuthenticated(cs.rec.Status) {
			return protocol.Errorf(protocol.CodeConnectionNotAuthenticated, "channel %s is not signed in", id)
		}
		b.signedInAt = cs.binding.signedInAt // a refreshed token is not a new sign-in
		enc, err := encodeBinding(b)
		if err != nil {
			return fmt.Errorf("connector: encode binding: %w", err)
		}
		changed = cs.rec.DisplayName != b.DisplayName || cs.rec.AccountHint != b.AccountHint
		cs.binding = b.clone()
		cs.rec.Binding, cs.rec.DisplayName, cs.rec.AccountHint = enc, b.DisplayName, b.AccountHint
		return nil
	})
	if err != nil {
		return err
	}
	if changed {
		s.pushDescriptor(ctx, id)
	}
	return nil
}

// bind stores a new binding after a sign-in and runs the hooks. The
// channel's client is made first (it checks the target): its error fails
// the sign-in and changes nothing. The error is secret-free.
func (s *Server) bind(ctx context.Context, id, flowID string, b Binding) error {
	defer s.dropHandoff(ctx, id, &b)
	b.signedInAt = s.now()
	enc, err := encodeBinding(b)
	if err != nil {
		return fmt.Errorf("connector: encode binding: %w", err)
	}
	s.secrets.Add(b.Secrets...)
	ch := &Channel{srv: s, id: id}
	att, err := s.attach(ctx, ch, b, ClientSignIn)
	if err != nil {
		s.log.Info("connector: sign-in refused by the channel client", "channel", id, "err", s.secrets.Scrub(err.Error()))
		return signInError(err)
	}
	var old Binding
	hadOld := false
	_, err = s.update(ctx, id, func(cs *chanState) error {
		// An expired or revoked channel still holds its old binding: the
		// unbind hook runs for it too.
		if isAuthenticated(cs.rec.Status) || cs.rec.Binding != nil {
			old, hadOld = cs.binding.clone(), true
		}
		cs.binding = b.clone()
		cs.rec.Binding, cs.rec.DisplayName, cs.rec.AccountHint = enc, b.DisplayName, b.AccountHint
		cs.rec.Status = protocol.StatusConnected
		cs.rec.FlowID = flowID
		return nil
	})
	if err != nil {
		s.detachAtt(ctx, id, att)
		return err
	}
	prev := s.swapAttachment(id, att)
	att.committed()
	if hadOld {
		s.runUnbindHook(ctx, ch, old, UnbindReplaced)
	}
	s.detachAtt(ctx, id, prev)
	s.runBind(ctx, ch, b)
	s.metrics.signins.Inc()
	return nil
}

// logout clears the binding and returns the post-logout snapshot.
func (s *Server) logout(ctx context.Context, id string, reason UnbindReason) (chanSnap, error) {
	var old Binding
	had := false
	snap, err := s.update(ctx, id, func(cs *chanState) error {
		if isAuthenticated(cs.rec.Status) || cs.rec.Binding != nil {
			old, had = cs.binding.clone(), true
		}
		cs.binding = Binding{}
		cs.rec.Binding, cs.rec.DisplayName, cs.rec.AccountHint, cs.rec.FlowID = nil, "", "", ""
		cs.rec.Status = protocol.StatusCreated
		return nil
	})
	if err != nil {
		return snap, err
	}
	if had {
		s.runUnbind(ctx, &Channel{srv: s, id: id}, old, reason)
	}
	if err := s.opts.Store.ClearChannelState(ctx, s.card.ConnectorCardID, id); err != nil {
		s.log.Warn("connector: clear channel state", "channel", id, "err", err)
	}
	s.auth.dropChannel(id)
	return snap, nil
}

func (s *Server) runBind(ctx context.Context, ch *Channel, b Binding) {
	s.mu.Lock()
	h := s.onBind
	s.mu.Unlock()
	if h == nil {
		return
	}
	if err := safeCall(func() error { return h(ctx, ch, b.clone()) }); err != nil {
		s.log.Warn("connector: bind hook failed", "channel", ch.id, "err", s.secrets.Scrub(err.Error()))
	}
}

// runUnbind runs the unbind hook, then releases the channel's client and
// consumer references (logout, lease expiry).
func (s *Server) runUnbind(ctx context.Context, ch *Channel, b Binding, reason UnbindReason) {
	s.runUnbindHook(ctx, ch, b, reason)
	s.detachAtt(ctx, ch.id, s.swapAttachment(ch.id, nil))
}

func (s *Server) runUnbindHook(ctx context.Context, ch *Channel, b Binding, reason UnbindReason) {
	s.mu.Lock()
	h := s.onUnbind
	s.mu.Unlock()
	if h == nil {
		return
	}
	if err := safeCall(func() error { return h(ctx, ch, b.clone(), reason) }); err != nil {
		s.log.Warn("connector: unbind hook failed", "channel", ch.id, "reason", string(reason), "err", s.secrets.Scrub(err.Error()))
	}
}

// safeCall runs f and turns a panic into an error without its value (a
// panic value may hold a secret).
func safeCall(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = protocol.Errorf(protocol.CodeInternal, "handler panicked")
		}
	}()
	return f()
}
