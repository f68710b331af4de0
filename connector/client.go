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
// session). It must check that the target is reachable with b, and return
// an error otherwise: on sign-in that error fails the sign-in (its
// message, when a *protocol.Error, is shown to the user and must be
// secret-free); on restore the channel stays offline and the SDK retries
// with backoff, or marks the channel expired when the error wraps
// [ErrBindingExpired]. ctx bounds the construction only.
//
// When C implements io.Closer or interface{ Close(context.Context) error },
// the SDK closes the client on logout, on a sign-in that replaces the
// binding, on lease expiry and on Server.Close. The order is fixed: a
// replacing sign-in installs the new client before it closes the old one
// (so ClientOf, called from the old client's Close, returns the new one);
// Server.Close runs the OnClose hooks, stops the consumers and the
// sockets, and then closes the clients.
type ClientFunc[B, C any] func(ctx context.Context, ch *Channel, b B) (C, error)

// ErrBindingExpired, wrapped by a ClientFunc's error, says the target no
// longer accepts the stored binding (a revoked token): the restored channel
// becomes expired and the user must sign in again.
var ErrBindingExpired = errors.New("connector: the target no longer accepts this binding")

// SetClient registers the constructor of the per-channel client. The SDK
// creates a client on sign-in (before the channel reports authenticated)
// and on Start for every restored signed-in channel, hands it out with
// [ClientOf] and closes it when the binding ends. B must be the binding
// type of the registered flows. Call it once, before Start.
func SetClient[B, C any](s *Server, fn ClientFunc[B, C]) error {
	if fn == nil {
		return s.registerFail(errors.New("connector: SetClient: nil constructor"))
	}
	if err := s.setBindingType(reflect.TypeFor[B]()); err != nil {
		return s.registerFail(fmt.Errorf("connector: SetClient: %w", err))
	}
	return s.register(func() error {
		if s.typed.newClient != nil {
			return errors.New("connector: SetClient called twice")
		}
		s.typed.newClient = func(ctx context.Context, ch *Channel, b any) (any, error) {
			return fn(ctx, ch, b.(B))
		}
		return nil
	})
}

// ClientOf returns the client of a signed-in channel. It fails with a
// *protocol.Error (connection_not_authenticated) when the channel has no
// live client: not signed in, or its target not reachable since a restart.
func ClientOf[C any](ch *Channel) (C, error) {
	var zero C
	a := ch.srv.attachmentOf(ch.id)
	if a == nil || a.client == nil {
		return zero, protocol.Errorf(protocol.CodeConnectionNotAuthenticated, "channel %s has no live target connection", ch.id)
	}
	c, ok := a.client.(C)
	if !ok {
		return zero, protocol.Errorf(protocol.CodeInternal, "channel client is %T, not %v", a.client, reflect.TypeFor[C]())
	}
	return c, nil
}

// BindingOf returns the typed binding of a signed-in channel, and false
// when it has none or it is not a B.
func BindingOf[B any](ch *Channel) (B, bool) {
	var zero B
	if a := ch.srv.attachmentOf(ch.id); a != nil {
		if b, ok := a.bval.(B); ok {
			return b, true
		}
	}
	b, ok := ch.Binding()
	if !ok || len(b.Data) == 0 {
		return zero, false
	}
	var v B
	if err := json.Unmarshal(b.Data, &v); err != nil {
		return zero, false
	}
	return v, true
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
// the target), then the consumer references. On error nothing is left
// behind.
func (s *Server) attach(ctx context.Context, ch *Channel, b Binding) (*attachment, error) {
	if s.typed.bindingType == nil && s.typed.newClient == nil && len(s.typed.consumers) == 0 {
		return nil, nil
	}
	bval, err := s.typedBinding(b)
	if err != nil {
		return nil, err
	}
	a := &attachment{bval: bval}
	if s.typed.newClient != nil {
		err := safeCall(func() error {
			c, err := s.typed.newClient(ctx, ch, bval)
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
			if a, err := s.attach(ctx, ch, b.binding); err != nil {
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
		a, err := s.attach(ctx, ch, b.binding)
		cancel()
		if err == nil {
			if old := s.swapAttachment(b.id, a); old != nil {
				s.detachAtt(s.ctx, b.id, old)
			}
			prev := b.prev
			if prev == protocol.StatusOffline || !isAuthenticated(prev) {
				prev = protocol.StatusConnected
			}
			if s.typed.newClient != nil && s.setStatusQuiet(s.ctx, b.id, prev) {
				s.pushDescriptor(s.ctx, b.id)
			}
			s.runBind(s.ctx, ch, b.binding)
			return
		}
		if s.ctx.Err() != nil {
			return
		}
		msg := s.secrets.Scrub(err.Error())
		if errors.Is(err, ErrBindingExpired) {
			s.log.Warn("connector: restored binding expired", "channel", b.id, "err", msg)
			if s.setStatusQuiet(s.ctx, b.id, protocol.StatusExpired) {
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

// signInError turns an attach or bind failure into the secret-free error a
// sign-in reports: a *protocol.Error keeps its message.
func signInError(err error) error {
	if perr := protocol.AsError(err); perr != nil {
		return perr
	}
	return protocol.Errorf(protocol.CodeInternal, "sign-in failed: the target could not be reached with these credentials")
}
