package connector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/xconn/xconn/protocol"
)

// Consumer declares a long-lived target consumer shared by every channel
// whose binding has the same credential key K: one getUpdates loop per
// Telegram bot token, one event connection per Feishu app. The SDK starts
// Run with the first signed-in channel of a key, cancels it and waits for
// it when the last one leaves (logout, replacement, lease expiry, Close),
// and keeps the key→channels routing that Members exposes.
//
// The SDK also turns the consumer's health into the channels' connection
// status, so that xAgent sees it in their Descriptors:
//
//   - Run returning an error while channels still use the key marks the
//     key's connected channels degraded and restarts Run with backoff;
//     Run calls [Members.Connected] once it reaches its target again (the
//     events socket is open, a poll was answered), which brings them back
//     to connected. A Run that reconnects by itself reports the gap with
//     [Members.Degraded].
//   - Run returning a terminal error, one wrapping [ErrRevoked] or
//     [ErrBindingExpired] or a [*TerminalError], marks the key's channels
//     revoked, expired or the TerminalError's status, and parks the
//     consumer: no restart loop. Run is called again when a channel of the
//     key signs in anew (a fresh token replaces a revoked one under another
//     key anyway), or is restored at Start: expired and revoked channels
//     are not (they are signed out); channels left in status error are.
type Consumer[K comparable, B any] struct {
	// Key returns the credential of a binding. Required.
	Key func(b B) K
	// Uses, optional, reports whether a binding uses this consumer at
	// all (nil: every binding does); a connector with several kinds of
	// binding (rooms and QR-signed-in browsers) routes only some of them.
	Uses func(b B) bool
	// Run consumes from the target until ctx ends; it publishes inbound
	// messages through m and reports reaching the target with
	// m.Connected. An error restarts it with backoff (its channels are
	// degraded meanwhile), a terminal error parks it (see above), a nil
	// return while ctx is live restarts it too. nil runs nothing: the
	// registration then only keeps the routing, for targets that push to
	// the connector (webhooks), which publish through Consumers.Members.
	Run func(ctx context.Context, key K, m *Members[B]) error
	// MaxKeys bounds the live keys (default DefaultMaxSharedConsumers).
	MaxKeys int
	// MaxChannels, when > 0, bounds the channels of one key: a sign-in
	// that would exceed it fails (atomically, so two concurrent sign-ins
	// cannot both pass) with a *protocol.Error saying the credential is in
	// use. 1 makes a credential exclusive to one channel.
	MaxChannels int
	// RestartDelay is the first delay after Run fails (default 1 s); it
	// doubles up to 5 minutes and resets after a run of 5 minutes.
	RestartDelay time.Duration
}

// Consumers is a registered Consumer: the SDK's routing from a
// credential key to its signed-in channels. Safe for concurrent use.
type Consumers[K comparable, B any] struct {
	reg *consumerReg
}

// Members returns the channels of key (empty when none is signed in with
// it); the value stays current as channels come and go.
func (c *Consumers[K, B]) Members(key K) *Members[B] {
	return &Members[B]{reg: c.reg, key: key}
}

// AddConsumer registers a shared consumer and returns its routing. B must
// be the binding type of the registered flows. Call it before Start; a
// bad registration is returned (with a nil *Consumers) and also makes
// Start fail.
func AddConsumer[K comparable, B any](s *Server, c Consumer[K, B]) (*Consumers[K, B], error) {
	if c.Key == nil {
		return nil, s.registerFail(errors.New("connector: AddConsumer: Key is required"))
	}
	if err := s.setBindingType(reflect.TypeFor[B]()); err != nil {
		return nil, s.registerFail(fmt.Errorf("connector: AddConsumer: %w", err))
	}
	delay := c.RestartDelay
	if delay <= 0 {
		delay = time.Second
	}
	reg := &consumerReg{srv: s, members: map[any]map[string]*member{}, joins: map[any]uint64{}, parked: map[any]chan struct{}{},
		delay: delay, maxChannels: c.MaxChannels}
	reg.key = func(b any) any { return c.Key(b.(B)) }
	if c.Uses != nil {
		reg.uses = func(b any) bool { return c.Uses(b.(B)) }
	}
	if c.Run != nil {
		reg.run = func(ctx context.Context, key any) error {
			return c.Run(ctx, key.(K), &Members[B]{reg: reg, key: key})
		}
	}
	reg.shared = NewSharedConsumers(reg.start, c.MaxKeys)
	err := s.register(func() error {
		s.typed.consumers = append(s.typed.consumers, reg)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Consumers[K, B]{reg: reg}, nil
}

// Members is the set of signed-in channels that share one consumer key,
// handed to Consumer.Run. It is safe for concurrent use and always
// current: a channel that signs in with the same key later is included.
type Members[B any] struct {
	reg *consumerReg
	key any
}

// Member is one channel of a key, with its typed binding.
type Member[B any] struct {
	Channel *Channel
	Binding B
}

// Channels returns the channels currently using the key, in channel id
// order, each with the binding it joined with (a channel signing in again
// shows its new binding from the moment the new one joins).
func (m *Members[B]) Channels() []Member[B] {
	ids, bvals := m.reg.snapshot(m.key)
	out := make([]Member[B], 0, len(ids))
	for i, id := range ids {
		if b, ok := bvals[i].(B); ok {
			out = append(out, Member[B]{Channel: &Channel{srv: m.reg.srv, id: id}, Binding: b})
		}
	}
	return out
}

// Publish publishes msg on every channel of the key that keep(b) accepts
// (nil accepts all) and returns how many channels took it durably. A
// channel's error does not stop the others; they are joined. When more
// than one channel takes a message with files, each file is read once
// (at most Options.MaxUploadBytes) and every channel gets its own copy.
func (m *Members[B]) Publish(ctx context.Context, msg UserMessage, keep func(b B) bool) (int, error) {
	var targets []Member[B]
	for _, mb := range m.Channels() {
		if keep == nil || keep(mb.Binding) {
			targets = append(targets, mb)
		}
	}
	var contents [][]byte
	if len(targets) > 1 && len(msg.Files) > 0 {
		limit := m.reg.srv.opts.MaxUploadBytes
		for _, f := range msg.Files {
			b, err := io.ReadAll(io.LimitReader(f.Content, limit+1))
			if err != nil {
				return 0, fmt.Errorf("connector: read file %q: %w", f.Name, err)
			}
			if int64(len(b)) > limit {
				return 0, protocol.Errorf(protocol.CodeInvalidArguments, "file %q is larger than %d bytes", f.Name, limit)
			}
			contents = append(contents, b)
		}
	}
	var errs []error
	n := 0
	for _, mb := range targets {
		if contents != nil {
			files := make([]OutgoingFile, len(msg.Files))
			for i, f := range msg.Files {
				f.Content = bytes.NewReader(contents[i])
				files[i] = f
			}
			msg.Files = files
		}
		if err := mb.Channel.Publish(ctx, msg); err != nil {
			errs = append(errs, fmt.Errorf("channel %s: %w", mb.Channel.ID(), err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// Connected reports that the consumer reaches its target: its events
// socket is open, or a poll was answered. The key's channels that are
// degraded or error go back to connected, and their Descriptors are
// pushed; channels that are offline (their client not made yet), expired
// or revoked are left alone. When nothing changes it only reads the
// statuses, so calling it after every answered poll is cheap.
func (m *Members[B]) Connected(ctx context.Context) {
	m.reg.setHealth(ctx, m.key, protocol.StatusConnected)
}

// Degraded reports that the consumer lost its target for a while and is
// reconnecting inside Run: the key's connected channels become degraded
// (their outbound side may still work; inbound messages wait). Run
// returning an error that is not terminal does the same; Connected ends
// it.
func (m *Members[B]) Degraded(ctx context.Context) {
	m.reg.setHealth(ctx, m.key, protocol.StatusDegraded)
}

// consumerReg is one registered Consumer: reference counts, routing, and
// the running loops.
type consumerReg struct {
	srv    *Server
	key    func(b any) any
	uses   func(b any) bool // nil: every binding
	run    func(ctx context.Context, key any) error
	shared *SharedConsumers[any]
	delay  time.Duration
	// maxChannels bounds the members of one key (0: no bound).
	maxChannels int

	mu sync.Mutex
	// members holds, per key, the attachments of each channel that hold
	// a reference (two while a sign-in replaces a binding of the same
	// key); the newest one's binding is what Members shows, from the
	// moment it joins, before the channel's record is replaced.
	members map[any]map[string]*member
	// joins counts, per key, the sign-ins and restores committed on it:
	// a terminal error of a Run that began before one does not park it.
	joins map[any]uint64
	// parked holds, per parked key, the channel that a join closes to
	// resume its consumer.
	parked map[any]chan struct{}
}

type member struct {
	// atts are the attachments holding a reference, oldest first; the
	// last one's binding is the channel's current one.
	atts []*attachment
}

// acquire makes channelID a member of key for attachment a (reserving the
// place first, so that MaxChannels holds under concurrent sign-ins) and
// takes a reference on the key's consumer.
func (r *consumerReg) acquire(ctx context.Context, key any, channelID string, a *attachment) error {
	r.mu.Lock()
	set := r.members[key]
	if _, in := set[channelID]; !in && r.maxChannels > 0 && len(set) >= r.maxChannels {
		r.mu.Unlock()
		return protocol.Errorf(protocol.CodeInvalidAuthInput, "this account is already in use by another channel")
	}
	if set == nil {
		set = map[string]*member{}
		r.members[key] = set
	}
	mb := set[channelID]
	if mb == nil {
		mb = &member{}
		set[channelID] = mb
	}
	mb.atts = append(mb.atts, a)
	r.mu.Unlock()
	if err := r.shared.Acquire(ctx, key); err != nil {
		r.forget(key, channelID, a)
		return err
	}
	return nil
}

// committed records that a channel of key has stored its new binding (a
// sign-in, or a restore): a parked consumer of the key runs again, and a
// terminal error of a Run that began before does not park it. It is
// called after the channel's status is stored, so that a Run failing
// again marks the new sign-in too.
func (r *consumerReg) committed(key any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, live := r.members[key]; !live {
		return
	}
	r.joins[key]++
	if wake := r.parked[key]; wake != nil {
		close(wake)
		delete(r.parked, key)
	}
}

// forget drops attachment a's membership of key.
func (r *consumerReg) forget(key any, channelID string, a *attachment) {
	r.mu.Lock()
	defer r.mu.Unlock()
	set := r.members[key]
	mb := set[channelID]
	if mb == nil {
		return
	}
	if i := slices.Index(mb.atts, a); i >= 0 {
		mb.atts = slices.Delete(mb.atts, i, i+1)
	}
	if len(mb.atts) == 0 {
		delete(set, channelID)
	}
	if len(set) == 0 {
		delete(r.members, key)
		delete(r.joins, key)
	}
}

func (r *consumerReg) release(key any, channelID string, a *attachment) {
	r.forget(key, channelID, a)
	r.shared.Release(key)
}

// snapshot returns the channels of key, in id order, with the bindings
// they joined with.
func (r *consumerReg) snapshot(key any) (ids []string, bvals []any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	set := r.members[key]
	ids = slices.Sorted(maps.Keys(set))
	bvals = make([]any, len(ids))
	for i, id := range ids {
		atts := set[id].atts
		bvals[i] = atts[len(atts)-1].bval
	}
	return ids, bvals
}

// start runs the consumer loop of key until its stop function is called.
func (r *consumerReg) start(_ context.Context, key any) (func(), error) {
	s := r.srv
	if r.run == nil {
		return func() {}, nil
	}
	ctx, cancel := context.WithCancel(s.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer r.unpark(key)
		delay := r.delay
		for {
			gen := r.joined(key)
			began := time.Now()
			err := safeCall(func() error { return r.run(ctx, key) })
			if ctx.Err() != nil {
				return
			}
			if status, ok := TerminalStatus(err); ok {
				if !r.parkUntilJoin(ctx, key, gen, status, err) {
					return
				}
				delay = r.delay
				continue
			}
			if time.Since(began) > restoreBackoffMax {
				delay = r.delay
			}
			msg := "returned"
			if err != nil {
				msg = s.secrets.Scrub(err.Error())
				r.setHealth(ctx, key, protocol.StatusDegraded)
			}
			s.log.Warn("connector: target consumer stopped; restarting", "retry_in", delay.String(), "err", msg)
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			delay = min(delay*2, restoreBackoffMax)
		}
	}()
	return func() { cancel(); <-done }, nil
}

// joined returns how many sign-ins and restores key has seen so far.
func (r *consumerReg) joined(key any) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.joins[key]
}

// parkUntilJoin handles a terminal error of key's Run that began when
// joins was gen: unless a channel joined the key since (whose new binding
// deserves a run of its own), it marks the key's channels status and waits
// until a channel of the key signs in again or ctx ends. It reports
// whether to run again.
func (r *consumerReg) parkUntilJoin(ctx context.Context, key any, gen uint64, status protocol.ConnectionStatus, cause error) bool {
	s := r.srv
	r.mu.Lock()
	if r.joins[key] != gen {
		r.mu.Unlock()
		return true
	}
	wake := make(chan struct{})
	r.parked[key] = wake
	r.mu.Unlock()
	ids, _ := r.snapshot(key)
	s.log.Warn("connector: the target refused the consumer's credential; its channels must sign in again (not restarting)",
		"status", status, "channels", len(ids), "err", s.secrets.Scrub(cause.Error()))
	for _, id := range ids {
		if s.transition(ctx, id, isAuthenticated, status) {
			s.pushDescriptor(ctx, id)
		}
	}
	select {
	case <-wake:
		s.log.Info("connector: a channel signed in again; restarting the target consumer")
		return true
	case <-ctx.Done():
		return false
	}
}

// unpark forgets key's parked state when its loop ends.
func (r *consumerReg) unpark(key any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.parked, key)
}

// setHealth moves the signed-in channels of key to status (connected or
// degraded) and pushes the Descriptors that changed: degraded only from
// connected; connected only from degraded or error, never from offline
// (the SDK's own: a restored channel's client is not made yet), expired or
// revoked.
func (r *consumerReg) setHealth(ctx context.Context, key any, status protocol.ConnectionStatus) {
	from := func(cur protocol.ConnectionStatus) bool { return cur == protocol.StatusConnected }
	if status == protocol.StatusConnected {
		from = func(cur protocol.ConnectionStatus) bool {
			return cur == protocol.StatusDegraded || cur == protocol.StatusError
		}
	}
	s := r.srv
	ids, _ := r.snapshot(key)
	for _, id := range ids {
		if cur, ok := s.statusOf(id); !ok || !from(cur) {
			continue
		}
		if s.transition(ctx, id, from, status) {
			s.pushDescriptor(ctx, id)
		}
	}
}
