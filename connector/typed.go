package connector

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	"github.com/xconn/xconn/protocol"
)

// typedReg holds the code-first registrations: the binding type, the
// client constructor, the consumers, the flows declared by AddForm/AddQR,
// extra HTTP routes and close hooks. Written only before Start under s.mu.
type typedReg struct {
	bindingType reflect.Type
	clientType  reflect.Type
	newClient   func(ctx context.Context, ch *Channel, b any, why ClientReason) (any, error)
	consumers   []*consumerReg
	flowDecls   []protocol.AuthFlow
	defaultFlow string
	routes      []string
	onClose     []func(ctx context.Context) error
}

// registerFail records a registration error (Start fails with it too) and
// returns it.
func (s *Server) registerFail(err error) error {
	_ = s.register(func() error { return err })
	return err
}

// setBindingType records B, the connector's binding type; every typed
// registration must agree on it.
func (s *Server) setBindingType(t reflect.Type) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateNew {
		return errors.New("connector: registration after Start")
	}
	switch {
	case s.typed.bindingType == nil:
		s.typed.bindingType = t
	case s.typed.bindingType != t:
		return fmt.Errorf("binding type %v differs from %v used by an earlier registration (one connector has one binding type)", t, s.typed.bindingType)
	}
	return nil
}

// addDeclaredFlow registers a flow together with its Card declaration.
func (s *Server) addDeclaredFlow(decl protocol.AuthFlow, f AuthFlow, isDefault bool) error {
	if err := s.AddAuthFlow(decl.ID, f); err != nil {
		return err
	}
	return s.register(func() error {
		if decl.ID == "" {
			return errors.New("connector: auth flow id is empty")
		}
		s.typed.flowDecls = append(s.typed.flowDecls, decl)
		if isDefault {
			if s.typed.defaultFlow != "" {
				return fmt.Errorf("connector: auth flows %q and %q are both Default", s.typed.defaultFlow, decl.ID)
			}
			s.typed.defaultFlow = decl.ID
		}
		return nil
	})
}

// Handle serves h for pattern (net/http.ServeMux syntax, such as
// "POST /room/{room}/say" or "/webchat/") beside the protocol endpoints on
// the same handler, for a connector's own pages and webhooks. Patterns
// that collide with the protocol's endpoints are refused. Call it before
// Start.
func (s *Server) Handle(pattern string, h http.Handler) error {
	if h == nil {
		return s.registerFail(fmt.Errorf("connector: Handle %q: nil handler", pattern))
	}
	return s.register(func() (err error) {
		defer func() {
			if r := recover(); r != nil { // ServeMux panics on conflicts
				err = fmt.Errorf("connector: Handle %q: %v", pattern, r)
			}
		}()
		s.mux.Handle(pattern, h)
		s.typed.routes = append(s.typed.routes, pattern)
		return nil
	})
}

// OnClose registers a function that Close runs first, before the shared
// consumers, sockets and clients stop: a connector ends its own streams
// there (for example server-sent events, which would otherwise keep an
// http.Server's Shutdown waiting). Hooks run in registration order; their
// errors are joined into Close's. Call it before Start.
func (s *Server) OnClose(f func(ctx context.Context) error) {
	if f == nil {
		return
	}
	s.registerHook(func() { s.typed.onClose = append(s.typed.onClose, f) })
}
