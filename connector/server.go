package connector

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/internal/argcheck"
	"github.com/xconn/xconn/internal/redact"
	"github.com/xconn/xconn/internal/signurl"
	"github.com/xconn/xconn/internal/xtrace"
	"github.com/xconn/xconn/protocol"
)

// UnbindReason says why a channel's binding is being cleared.
type UnbindReason string

// Unbind reasons.
const (
	// UnbindLogout: auth.logout or Channel.Logout.
	UnbindLogout UnbindReason = "logout"
	// UnbindReplaced: a new sign-in replaced the binding.
	UnbindReplaced UnbindReason = "replaced"
	// UnbindLeaseExpired: the connector_id lease expired; the channel is
	// deleted after the hook.
	UnbindLeaseExpired UnbindReason = "lease_expired"
)

// BindHook is called when a channel becomes bound: after a sign-in and, at
// Start, for every signed-in channel restored from the store. A connector
// starts its target consumers here (see [SharedConsumers]).
type BindHook func(ctx context.Context, ch *Channel, b Binding) error

// UnbindHook is called before a binding is cleared: it signs out of the
// target and releases consumers. Its error is logged; cleanup continues.
type UnbindHook func(ctx context.Context, ch *Channel, b Binding, reason UnbindReason) error

// Server is a Connector Server: an http.Handler serving every endpoint of
// protocol 3.0 for one Card. Create it with [New], register tools, flows
// and handlers, then [Server.Start]; [Server.Close] stops it. Registration
// methods must be called before Start; everything else is safe for
// concurrent use.
type Server struct {
	opts    Options
	log     *slog.Logger
	secrets *redact.Secrets
	signer  *signurl.Signer
	metrics *metrics
	mux     *http.ServeMux
	dstore  delivery.Storage
	outbox  *delivery.Outbox // IM v2 chat.message, queue "connector.im.v2"
	outv1   *delivery.Outbox // IM v1 message.push, queue "connector.im.v1"
	inbox   *delivery.Inbox
	asm     *delivery.Assembler
	dataDir string
	ownDir  bool           // dataDir was created by Start and is removed by Close
	dirLock *DataDirLock   // lock of opts.DataDir from Start to Close (datadir_lock.go)
	tracer  *xtrace.Tracer // nil: tracing off (tracing.go)
	links   *xtrace.Links  // trace context of published messages until sent

	mu         sync.Mutex
	state      serverState
	tools      map[string]*toolEntry
	toolOrder  []string
	validators map[string]*argcheck.Validator
	flows      map[string]AuthFlow
	onMessage  MessageHandler
	onDelta    DeltaHandler
	onActivity ActivityHandler
	onBind     BindHook
	onUnbind   UnbindHook
	regErrs    []error
	card       *protocol.Card
	cardJSON   []byte
	healthJSON []byte
	sockets    map[*session]struct{}
	slots      int // data-plane slots reserved (Options.MaxSockets), see serveWS
	leases     map[string]*lease
	channels   map[string]*chanState
	auth       *authTable
	typed      typedReg
	progress   progressLocks
	attached   map[string]*attachment
	ownStore   interface{ Close() error } // the default store opened by Start

	logs   logLimiter // repetitive warnings, one line per kind every logEvery
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	wake   chan struct{}
}

type serverState int

const (
	stateNew serverState = iota
	stateStarted
	stateClosed
)

// ErrNotStarted is returned by operations that need a started server.
var ErrNotStarted = errors.New("connector: server not started")

// ErrClosed is returned after Close.
var ErrClosed = errors.New("connector: server closed")

// New checks opts and returns an unstarted Server.
func New(opts Options) (*Server, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	cardID, desc := o.Identity.CardID, o.Identity.Description
	if o.Card != nil {
		cardID, desc = o.Card.ConnectorCardID, o.Card.Connector.Description
	}
	o.Skill = skillWithHeader(o.Skill, cardID, desc)
	secrets := redact.NewSecrets(0)
	if o.APIKey != "" {
		secrets.Pin(o.APIKey) // never pushed out by a flood of other secrets
	}
	key := o.SigningKey
	if len(key) == 0 && o.Store == nil {
		if key, err = loadOrCreateKey(filepath.Join(o.DataDir, DefaultSigningKeyFile)); err != nil {
			return nil, fmt.Errorf("connector: signing key: %w", err)
		}
	}
	if len(key) == 0 {
		key = randomKey()
	}
	signer, err := signurl.NewSigner(key)
	if err != nil {
		return nil, fmt.Errorf("connector: signing key: %w", err)
	}
	s := &Server{
		opts:     o,
		log:      slog.New(redact.NewHandler(o.Logger.Handler(), secrets)),
		secrets:  secrets,
		signer:   signer,
		tools:    map[string]*toolEntry{},
		flows:    map[string]AuthFlow{},
		sockets:  map[*session]struct{}{},
		leases:   map[string]*lease{},
		channels: map[string]*chanState{},
		attached: map[string]*attachment{},
		progress: progressLocks{seed: maphash.MakeSeed()},
		wake:     make(chan struct{}, 1),
	}
	s.auth = newAuthTable(o.MaxAuthSessions)
	if s.tracer = xtrace.New(o.TracerProvider); s.tracer != nil {
		s.links = xtrace.NewLinks(0)
	}
	s.metrics = newMetrics()
	s.mux = s.routes()
	return s, nil
}

func (s *Server) register(f func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateNew {
		err := errors.New("connector: registration after Start")
		return err
	}
	if err := f(); err != nil {
		s.regErrs = append(s.regErrs, err)
		return err
	}
	return nil
}

func (s *Server) registerTool(id string, fn RawToolFunc, schema []byte, opts ToolOptions, fail error) error {
	return s.register(func() error {
		if fail != nil {
			return fail
		}
		if err := protocol.CheckToolID(id); err != nil {
			return fmt.Errorf("connector: tool %q: %w", id, err)
		}
		if _, dup := s.tools[id]; dup {
			return fmt.Errorf("connector: tool %q registered twice", id)
		}
		s.tools[id] = &toolEntry{id: id, opts: opts, schema: schema, fn: fn}
		s.toolOrder = append(s.toolOrder, id)
		return nil
	})
}

// registerHook sets a handler before Start; afterwards it only logs.
func (s *Server) registerHook(set func()) {
	if err := s.register(func() error { set(); return nil }); err != nil {
		s.log.Error("connector: handler registered after Start is ignored")
	}
}

// AddAuthFlow registers the raw handler of a sign-in flow that a
// hand-written Options.Card declares in auth_flows[] (its type must match
// the Card's). [AddForm] and [AddQR] declare and register a flow in one
// call and are what most connectors need. Call it before Start.
func (s *Server) AddAuthFlow(id string, f AuthFlow) error {
	return s.register(func() error {
		if f == nil {
			return fmt.Errorf("connector: auth flow %q: nil flow", id)
		}
		if _, dup := s.flows[id]; dup {
			return fmt.Errorf("connector: auth flow %q registered twice", id)
		}
		s.flows[id] = f
		return nil
	})
}

// OnAssistantMessage sets the handler of final assistant messages (IM v2).
// Call it before Start.
func (s *Server) OnAssistantMessage(h MessageHandler) {
	s.registerHook(func() { s.onMessage = h })
}

// OnAssistantDelta sets the streaming delta handler (IM v2). Call it
// before Start.
func (s *Server) OnAssistantDelta(h DeltaHandler) {
	s.registerHook(func() { s.onDelta = h })
}

// OnActivity sets the activity handler (IM v2). Call it before Start.
func (s *Server) OnActivity(h ActivityHandler) {
	s.registerHook(func() { s.onActivity = h })
}

// OnBind sets the hook run when a channel becomes bound. Call it before
// Start.
func (s *Server) OnBind(h BindHook) {
	s.registerHook(func() { s.onBind = h })
}

// OnUnbind sets the hook run before a binding is cleared. Call it before
// Start.
func (s *Server) OnUnbind(h UnbindHook) {
	s.registerHook(func() { s.onUnbind = h })
}

// Logger returns the server's redacting logger, for connector code.
func (s *Server) Logger() *slog.Logger { return s.log }

// Redact adds values (tokens) to the set scrubbed from logs, acks and
// results.
func (s *Server) Redact(values ...string) { s.secrets.Add(values...) }

// Metrics returns the server's own Prometheus registry (served at
// /metrics), where a connector may register its own collectors.
func (s *Server) Metrics() *prometheus.Registry { return s.metrics.reg }

// Card returns a copy of the final Card once Start has succeeded, or nil
// before (and after a failed Start).
func (s *Server) Card() *protocol.Card {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.card == nil || s.state == stateNew {
		return nil
	}
	return cloneCard(s.card)
}

// ServeHTTP serves every endpoint under Options.PathPrefix.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// Channel returns a handle on a known channel, or a *protocol.Error with
// CodeConnectionNotFound.
func (s *Server) Channel(id string) (*Channel, error) {
	if _, err := s.channelState(id); err != nil {
		return nil, err
	}
	return &Channel{srv: s, id: id}, nil
}

// Channels returns handles on every known channel.
func (s *Server) Channels() []*Channel {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Channel, 0, len(s.channels))
	for id := range s.channels {
		out = append(out, &Channel{srv: s, id: id})
	}
	return out
}

func (s *Server) wakeJanitor() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Server) now() time.Time { return time.Now() }
