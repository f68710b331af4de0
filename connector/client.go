package connector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"time"

	"github.com/xconn/xconn/protocol"
)

// ClientFunc turns a channel's binding into its client: the channel's live
// connection to its target (an API client holding the token, a device
// session). why says whether the binding comes from a sign-in that has just
// happened or is restored at Start.
//
// On a sign-in (ClientSignIn) the SDK calls it only when the flow handed
// over no client (see [Clients.With]); its error fails the sign-in (its
// message, when a *protocol.Error, is shown to the user and must be
// secret-free; see [CodeTargetUnreachable] for a target that cannot be
// reached). On restore (ClientRestore) nothing has checked the binding
// since the last run: the constructor must check that the target still
// accepts it. Its error leaves the channel offline and the SDK retries with
// backoff; an error wrapping [ErrBindingExpired] or [ErrRevoked], or a
// [*TerminalError], sets the status it means instead and the SDK stops
// trying until the user signs in again. ctx bounds the construction only.
//
// When C implements io.Closer or interface{ Close(context.Context) error },
// the SDK closes the client on logout, on a sign-in that replaces the
// binding, on lease expiry and on Server.Close. The order is fixed: a
// replacing sign-in installs the new client before it closes the old one
// (so Clients.Get, called from the old client's Close, returns the new
// one); Server.Close runs the OnClose hooks, stops the consumers and the
// sockets, and then closes the clients.
type ClientFunc[B, C any] func(ctx context.Context, ch *Channel, b B, why ClientReason) (C, error)

// ClientReason says why the SDK makes a channel's client.
type ClientReason int

const (
	// ClientSignIn: a sign-in flow has just produced the binding; its
	// handler (or Poll) has talked to the target moments ago.
	ClientSignIn ClientReason = iota + 1
	// ClientRestore: Start restores a signed-in channel's stored binding;
	// nothing has checked it since the last run.
	ClientRestore
)

// String returns "sign-in" or "restore".
func (r ClientReason) String() string {
	switch r {
	case ClientSignIn:
		return "sign-in"
	case ClientRestore:
		return "restore"
	}
	return fmt.Sprintf("ClientReason(%d)", int(r))
}

// ErrBindingExpired, wrapped by a ClientFunc's error on restore or by a
// Consumer's Run error, says the target no longer accepts the stored
// binding (a session that timed out): the channel becomes expired, keeps
// its binding, and the user must sign in again. See also [ErrRevoked] and
// [TerminalError].
var ErrBindingExpired = errors.New("connector: the target no longer accepts this binding")

// Clients is the registration SetClient returns: it hands out each
// channel's client as a C and its binding as a B, with both types fixed
// when the constructor is registered, so that asking for the wrong type is
// a compile error rather than a failure at run time. A Clients is safe for
// concurrent use and lives as long as its Server.
type Clients[B, C any] struct {
	s *Server
}

// SetClient registers the constructor of the per-channel client and returns
// the typed handle that hands the clients out. The SDK creates a client on
// sign-in (before the channel reports authenticated) and on Start for every
// restored signed-in channel, and closes it when the binding ends. B must
// be the binding type of the registered flows. Call it once, before Start.
// The handle is never nil: a bad registration is returned and also makes
// Start fail, so a connector may check its registrations once, at Start.
func SetClient[B, C any](s *Server, fn ClientFunc[B, C]) (*Clients[B, C], error) {
	h := &Clients[B, C]{s: s}
	if fn == nil {
		return h, s.registerFail(errors.New("connector: SetClient: nil constructor"))
	}
	if err := s.setBindingType(reflect.TypeFor[B]()); err != nil {
		return h, s.registerFail(fmt.Errorf("connector: SetClient: %w", err))
	}
	return h, s.register(func() error {
		if s.typed.newClient != nil {
			return errors.New("connector: SetClient called twice")
		}
		s.typed.clientType = reflect.TypeFor[C]()
		s.typed.newClient = func(ctx context.Context, ch *Channel, b any, why ClientReason) (any, error) {
			return fn(ctx, ch, b.(B), why)
		}
		return nil
	})
}

// Get returns the client of a signed-in channel. It fails with a
// *protocol.Error (connection_not_authenticated) when the channel has no
// live client: not signed in, its target not reachable since a restart, or
// a channel of another Server.
func (c *Clients[B, C]) Get(ch *Channel) (C, error) {
	var zero C
	if ch == nil || ch.srv != c.s {
		return zero, protocol.Errorf(protocol.CodeConnectionNotAuthenticated, "not a channel of this connector")
	}
	a := ch.srv.attachmentOf(ch.id)
	if a == nil || a.client == nil {
		return zero, protocol.Errorf(protocol.CodeConnectionNotAuthenticated, "channel %s has no live target connection", ch.id)
	}
	cl, ok := a.client.(C)
	if !ok { // a client handed over by another Server's Clients.With
		return zero, protocol.Errorf(protocol.CodeInternal, "channel client is %T, not %v", a.client, reflect.TypeFor[C]())
	}
	return cl, nil
}

// Binding returns the typed binding of ch, as [BindingOf] does.
func (c *Clients[B, C]) Binding(ch *Channel) (B, error) {
	return BindingOf[B](ch)
}

// With returns a with client handed over to the SDK: a sign-in handler
// (SignInFunc, a QR flow's Poll, CompleteQR) that has already built and
// checked the channel's client returns it this way, and the SDK installs
// it as the channel's client instead of calling the constructor, so that
// the target is checked once per sign-in. When the sign-in fails after
// the handler returned (the binding cannot be stored, the credential is
// in use by another channel), the SDK closes client as it closes any
// client.
func (c *Clients[B, C]) With(a Account[B], client C) Account[B] {
	a.handoff = &handoff{client: client}
	return a
}

// handoff is a client a sign-in handler built, travelling with its binding
// to attach; taken is set once attach installed it.
type handoff struct {
	client any
	taken  bool
}

// ClientOf returns the client of a signed-in channel as a C.
//
// Deprecated: use the [Clients] handle that SetClient returns, whose Get
// has its client type fixed at registration; ClientOf with a C other than
// the constructor's client type fails at run time with internal_error
// naming both types.
func ClientOf[C any](ch *Channel) (C, error) {
	var zero C
	a := ch.srv.attachmentOf(ch.id)
	if a == nil || a.client == nil {
		return zero, protocol.Errorf(protocol.CodeConnectionNotAuthenticated, "channel %s has no live target connection", ch.id)
	}
	c, ok := a.client.(C)
	if !ok {
		return zero, protocol.Errorf(protocol.CodeInternal, "connector: ClientOf[%v]: the client constructor registered with SetClient returns %v",
			reflect.TypeFor[C](), ch.srv.typed.clientType)
	}
	return c, nil
}

// BindingOf returns the typed binding of a channel: the one it is signed in
// with, or the one an expired or revoked channel keeps until the user signs
// in again or out. It fails with a *protocol.Error:
// connection_not_authenticated when the channel has no binding, and
// internal_error naming both types when B is not the connector's binding
// type (the B of AddForm, AddQR, SetClient and AddConsumer).
func BindingOf[B any](ch *Channel) (B, error) {
	var zero B
	if t := ch.srv.typed.bindingType; t != nil && t != reflect.TypeFor[B]() {
		return zero, protocol.Errorf(protocol.CodeInternal, "connector: BindingOf[%v]: the connector's binding type is %v", reflect.TypeFor[B](), t)
	}
	if a := ch.srv.attachmentOf(ch.id); a != nil {
		if b, ok := a.bval.(B); ok {
			return b, nil
		}
	}
	b, ok := ch.srv.keptBinding(ch.id)
	if !ok || len(b.Data) == 0 {
		return zero, protocol.Errorf(protocol.CodeConnectionNotAuthenticated, "channel %s has no binding", ch.id)
	}
	var v B
	if err := json.Unmarshal(b.Data, &v); err != nil {
		return zero, protocol.Errorf(protocol.CodeInternal, "connector: BindingOf[%v]: the stored binding does not decode", reflect.TypeFor[B]())
	}
	return v, nil
}

// attachment is what the SDK holds for one signed-in channel: the decoded
// typed binding, the client, and the consumer keys it references.
type attachment struct {
	bval   any
	client any
	keys   []consumerKey
}

type consumerKey struct {
	reg *consumerReg
	key any
}

// decodeBinding turns the sealed binding into the registered type, or nil
// when no typed binding is registered.
func (s *Server) typedBinding(b Binding) (any, error) {
	t := s.typed.bindingType
	if t == nil {
		return nil, nil
	}
	p := reflect.New(t)
	if len(b.Data) > 0 {
		if err := json.Unmarshal(b.Data, p.Interface()); err != nil {
			return nil, fmt.Errorf("decode binding into %v: %w", t, err)
		}
	}
	return p.Elem().Interface(), nil
}

// attach builds the attachment of a new binding: client first (it checks
// the target, unless the sign-in handed one over), then the consumer
// references. On error nothing is left behind.
func (s *Server) attach(ctx context.Context, ch *Channel, b Binding, why ClientReason) (*attachment, error) {
	if s.typed.bindingType == nil && s.typed.newClient == nil && len(s.typed.consumers) == 0 {
		return nil, nil
	}
	bval, err := s.typedBinding(b)
	if err != nil {
		return nil, err
	}
	a := &attachment{bval: bval}
	switch {
	case b.handoff != nil && s.typed.newClient != nil:
		a.client, b.handoff.taken = b.handoff.client, true
	case s.typed.newClient != nil:
		err := safeCall(func() error {
			c, err := s.typed.newClient(ctx, ch, bval, why)
			a.client = c
			return err
		})
		if err != nil {
			s.closeClient(ctx, ch.id, a.client)
			return nil, err
		}
	}
	for _, reg := range s.typed.consumers {
		if reg.uses != nil && !reg.uses(bval) {
			continue
		}
		k := reg.key(bval)
		if err := reg.acquire(ctx, k, ch.id, a); err != nil {
			s.detachAtt(ctx, ch.id, a)
			return nil, fmt.Errorf("start the target consumer: %w", err)
		}
		a.keys = append(a.keys, consumerKey{reg: reg, key: k})
	}
	return a, nil
}

// dropHandoff closes the client a sign-in handed over with b when the
// sign-in ended before attach installed it.
func (s *Server) dropHandoff(ctx context.Context, channelID string, b *Binding) {
	if b == nil || b.handoff == nil || b.handoff.taken {
		return
	}
	b.handoff.taken = true
	s.closeClient(ctx, channelID, b.handoff.client)
}

// committed tells the consumers of a's keys that its channel stored its
// binding. nil is a no-op.
func (a *attachment) committed() {
	if a == nil {
		return
	}
	for _, k := range a.keys {
		k.reg.committed(k.key)
	}
}

// detach releases an attachment's consumer references and closes its
// client. nil is a no-op.
func (s *Server) detachAtt(ctx context.Context, channelID string, a *attachment) {
	if a == nil {
		return
	}
	for _, k := range a.keys {
		k.reg.release(k.key, channelID, a)
	}
	s.closeClient(ctx, channelID, a.client)
}

func (s *Server) closeClient(ctx context.Context, channelID string, c any) {
	var err error
	switch c := c.(type) {
	case interface{ Close(context.Context) error }:
		err = safeCall(func() error { return c.Close(ctx) })
	case io.Closer:
		err = safeCall(c.Close)
	}
	if err != nil {
		s.log.Warn("connector: close channel client", "channel", channelID, "err", s.secrets.Scrub(err.Error()))
	}
}

// swapAttachment installs a for channel id (nil removes it) and returns
// the previous one.
func (s *Server) swapAttachment(id string, a *attachment) *attachment {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.attached[id]
	if a == nil {
		delete(s.attached, id)
	} else {
		s.attached[id] = a
	}
	return old
}

func (s *Server) attachmentOf(id string) *attachment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attached[id]
}

// Backoff of restoring a channel whose target is unreachable.
const (
	restoreBackoffMin = time.Second
	restoreBackoffMax = 5 * time.Minute
	// restoreParallel bounds the restored channels attached at once.
	restoreParallel = 16
)

// restoreAttachments attaches every restored signed-in channel. Without a
// client constructor or consumers this is immediate (no I/O). Otherwise
// channels report offline until their client exists, then get their stored
// status back and their Descriptor is pushed; that work runs under s.wg, at
// most restoreParallel channels at a time, and ends with s.ctx.
func (s *Server) restoreAttachments(ctx context.Context, bound []boundChannel) {
	if s.typed.newClient == nil && len(s.typed.consumers) == 0 {
		for _, b := range bound {
			ch := &Channel{srv: s, id: b.id}
			if a, err := s.attach(ctx, ch, b.binding, ClientRestore); err != nil {
				s.log.Warn("connector: restore binding", "channel", b.id, "err", s.secrets.Scrub(err.Error()))
			} else if a != nil {
				s.swapAttachment(b.id, a)
			}
			s.runBind(ctx, ch, b.binding)
		}
		return
	}
	s.wg.Go(func() {
		sem := make(chan struct{}, restoreParallel)
		for _, b := range bound {
			select {
			case sem <- struct{}{}:
			case <-s.ctx.Done():
				return
			}
			s.wg.Go(func() {
				defer func() { <-sem }()
				s.restoreOne(b)
			})
		}
	})
}

func (s *Server) restoreOne(b boundChannel) {
	ch := &Channel{srv: s, id: b.id}
	delay := restoreBackoffMin
	for {
		cur, err := s.channelState(b.id)
		if err != nil || !isAuthenticated(cur.rec.Status) || string(cur.rec.Binding) != string(b.rec) {
			return // logged out, replaced or deleted meanwhile
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.opts.ToolTimeout)
		a, err := s.attach(ctx, ch, b.binding, ClientRestore)
		cancel()
		if err == nil {
			if old := s.swapAttachment(b.id, a); old != nil {
				s.detachAtt(s.ctx, b.id, old)
			}
			prev := b.prev
			if prev == protocol.StatusOffline || !isAuthenticated(prev) {
				prev = protocol.StatusConnected
			}
			// Only from the offline of the restore: a consumer that
			// already found the credential revoked has the last word.
			restoring := func(cur protocol.ConnectionStatus) bool { return cur == protocol.StatusOffline }
			if s.typed.newClient != nil && s.transition(s.ctx, b.id, restoring, prev) {
				s.pushDescriptor(s.ctx, b.id)
			}
			a.committed()
			s.runBind(s.ctx, ch, b.binding)
			return
		}
		if s.ctx.Err() != nil {
			return
		}
		msg := s.secrets.Scrub(err.Error())
		if status, ok := TerminalStatus(err); ok {
			s.log.Warn("connector: the target refused the restored binding; the channel must sign in again", "channel", b.id, "status", status, "err", msg)
			if s.setStatusQuiet(s.ctx, b.id, status) {
				s.pushDescriptor(s.ctx, b.id)
			}
			return
		}
		s.log.Warn("connector: restore channel client", "channel", b.id, "retry_in", delay.String(), "err", msg)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
			return
		}
		delay = min(delay*2, restoreBackoffMax)
	}
}
