package mcp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xconn/xconn/host"
)

// Defaults of Options.
const (
	// DefaultMaxArgumentBytes bounds the arguments of one tool call.
	DefaultMaxArgumentBytes = 1 << 20
	// DefaultMaxMessageBytes bounds one inbound JSON-RPC message (a line
	// on stdio, a request body over HTTP).
	DefaultMaxMessageBytes = 4 << 20
	// DefaultMaxReadMessages bounds the messages one messages_read hands out.
	DefaultMaxReadMessages = 20
	// DefaultMaxReadWait caps the wait_seconds of messages_read and
	// channel_sign_in_status.
	DefaultMaxReadWait = 30 * time.Second
	// DefaultMaxSignins bounds the sign-ins the server tracks (running or
	// finished and not yet asked about).
	DefaultMaxSignins = 16
	// DefaultMaxFileBytes bounds a file served as a resource.
	DefaultMaxFileBytes = 16 << 20
)

// Options configures a [Server]. Host, Inbox and UserID are required; zero
// fields take their defaults.
type Options struct {
	// Host is the started host the server fronts. Its Agent must be Inbox.
	Host  *host.Host
	Inbox *Inbox
	// UserID is the host user whose channels the MCP client acts on.
	UserID string
	// Name and Version identify the server in initialize (default "xconn").
	Name, Version string
	// Logger receives the server's logs and the MCP SDK's; nil discards
	// them. Wrap it in a redacting handler: the server never logs
	// arguments or results itself.
	Logger *slog.Logger

	MaxArgumentBytes int           // default DefaultMaxArgumentBytes
	MaxMessageBytes  int           // default DefaultMaxMessageBytes
	MaxReadMessages  int           // default DefaultMaxReadMessages
	MaxReadWait      time.Duration // default DefaultMaxReadWait
	MaxSignins       int           // default DefaultMaxSignins
	MaxFileBytes     int64         // default DefaultMaxFileBytes
	// MaxQueuedMessages and MaxQueuedBytes bound what a stdio session
	// holds for a client that does not read (see [Server.StdioTransport]).
	MaxQueuedMessages int // default DefaultMaxQueuedMessages
	MaxQueuedBytes    int // default DefaultMaxQueuedBytes
}

// Server is an MCP server in front of a [host.Host]: the tools of the
// user's signed-in channels, the built-in channel tools, messages_read,
// sign-in as tools, and each channel's Descriptor and history as
// resources. Serve it with [Server.Run] (one session, for instance stdio)
// or [Server.HTTPHandler] (streamable HTTP, many sessions).
//
// Create it with [New]; [Server.Close] stops its goroutine. It is safe for
// concurrent use.
type Server struct {
	opts Options
	h    *host.Host
	in   *Inbox
	srv  *sdk.Server
	log  *slog.Logger

	changed chan struct{}   // a sync of tools and resources is due
	dirty   chan string     // user channels whose history changed
	ctx     context.Context // ends with Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu      sync.Mutex
	tools   map[string]bool // names of the connector tools registered
	res     map[string]bool // URIs of the channel resources registered
	signins *signins
}

// New returns a Server for the host and starts its notifier goroutine.
// It registers the tools and resources of the user's channels as they
// are now; call [Server.Changed] when they may have changed (the host's
// OnEvent is a good place).
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.Host == nil || opts.Inbox == nil || opts.UserID == "" {
		return nil, errors.New("mcp: Options.Host, Inbox and UserID are required")
	}
	if opts.Name == "" {
		opts.Name = "xconn"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxArgumentBytes <= 0 {
		opts.MaxArgumentBytes = DefaultMaxArgumentBytes
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.MaxReadMessages <= 0 {
		opts.MaxReadMessages = DefaultMaxReadMessages
	}
	if opts.MaxReadWait <= 0 {
		opts.MaxReadWait = DefaultMaxReadWait
	}
	if opts.MaxSignins <= 0 {
		opts.MaxSignins = DefaultMaxSignins
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if opts.MaxQueuedMessages <= 0 {
		opts.MaxQueuedMessages = DefaultMaxQueuedMessages
	}
	if opts.MaxQueuedBytes <= 0 {
		opts.MaxQueuedBytes = DefaultMaxQueuedBytes
	}
	s := &Server{opts: opts, h: opts.Host, in: opts.Inbox, log: opts.Logger,
		changed: make(chan struct{}, 1), dirty: make(chan string, 256),
		tools: map[string]bool{}, res: map[string]bool{}, signins: newSignins(opts.MaxSignins)}
	s.srv = sdk.NewServer(&sdk.Implementation{Name: opts.Name, Version: opts.Version}, &sdk.ServerOptions{
		Instructions: instructions,
		Logger:       opts.Logger,
		SubscribeHandler: func(ctx context.Context, req *sdk.SubscribeRequest) error {
			if !s.knownChannelURI(ctx, req.Params.URI) {
				return sdk.ResourceNotFoundError(req.Params.URI)
			}
			return nil
		},
		UnsubscribeHandler: func(context.Context, *sdk.UnsubscribeRequest) error { return nil },
		Capabilities: &sdk.ServerCapabilities{
			Tools:     &sdk.ToolCapabilities{ListChanged: true},
			Resources: &sdk.ResourceCapabilities{ListChanged: true, Subscribe: true},
		},
	})
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.addBuiltinTools()
	s.addSigninTools()
	s.addResourceTemplates()
	s.sync(ctx)
	s.in.setNotify(s.historyChanged)
	s.wg.Add(1)
	go s.loop()
	return s, nil
}

const instructions = `xconn connects you to chat and device channels (WeChat, Telegram, Feishu, a web chat, a phone...).
connector_channels_list lists the signed-in channels; messages_read returns the next unread user messages
(each with its connector_channel_id); answer with connector_message_send or a connector's own send tool.
channel_sign_in signs a new channel in (a QR code comes back as an image to scan).`

// SDK returns the underlying MCP SDK server, for transports of the
// caller's own.
func (s *Server) SDK() *sdk.Server { return s.srv }

// Run serves one MCP session on t (for instance &sdk.StdioTransport{})
// until the client disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	return s.srv.Run(ctx, t)
}

// MinTokenBytes is the shortest bearer token HTTPHandler takes.
const MinTokenBytes = 16

// HTTPWriteTimeout bounds each write to an HTTP client: a client that
// stops reading its event stream loses that stream (its session's
// notifications), and no other session waits for it longer than this.
const HTTPWriteTimeout = 10 * time.Second

// HTTPHandler serves streamable HTTP sessions to clients that present
// "Authorization: Bearer <token>" (compared in constant time); others get
// 401. token must be at least MinTokenBytes long. A request body is
// bounded by Options.MaxMessageBytes (413 beyond), each write by
// HTTPWriteTimeout.
func (s *Server) HTTPHandler(token string) (http.Handler, error) {
	if len(token) < MinTokenBytes {
		return nil, fmt.Errorf("mcp: the HTTP bearer token must be at least %d bytes", MinTokenBytes)
	}
	want := sha256.Sum256([]byte(token))
	inner := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv },
		&sdk.StreamableHTTPOptions{Logger: s.log, MaxRequestBodyBytes: int64(s.opts.MaxMessageBytes), SessionTimeout: 30 * time.Minute})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const prefix = "Bearer "
		a := r.Header.Get("Authorization")
		got := sha256.Sum256([]byte(a[min(len(prefix), len(a)):]))
		if len(a) <= len(prefix) || !equalFold(a[:len(prefix)], prefix) || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="xconn mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		// A connection's deadline outlives its request: every request
		// starts and ends with a fresh one, so that what net/http writes
		// itself (headers, the last chunk) never meets an old one.
		dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w)}
		dw.extend()
		inner.ServeHTTP(dw, r)
		dw.extend()
	}), nil
}

// deadlineWriter sets a write deadline of HTTPWriteTimeout before each
// write and flush, so that a client that never reads blocks no writer of
// the server for longer.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func (w *deadlineWriter) extend() { _ = w.rc.SetWriteDeadline(time.Now().Add(HTTPWriteTimeout)) }

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.extend()
	return w.ResponseWriter.Write(p)
}

func (w *deadlineWriter) WriteHeader(code int) {
	w.extend()
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Flush() {
	w.extend()
	_ = w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i]|0x20, b[i]|0x20
		if x != y {
			return false
		}
	}
	return true
}

// Changed asks for the tools and resources to be synced with the host's
// channels (after a sign-in elsewhere, a Descriptor push, a Card refresh).
// It never blocks.
func (s *Server) Changed() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// historyChanged queues a resources/updated notification for a channel's
// history. It never blocks: when the queue is full the channel is
// notified by the next full sweep.
func (s *Server) historyChanged(ucID string) {
	select {
	case s.dirty <- ucID:
	default:
		s.Changed()
	}
}

// Close ends the sessions still open (those of [Server.HTTPHandler]
// among them) and waits for them, then stops the notifier goroutine and
// waits for it. Calling it more than once is safe.
func (s *Server) Close() error {
	s.in.setNotify(nil)
	s.cancel()
	for ss := range s.srv.Sessions() {
		_ = ss.Close()
		_ = ss.Wait()
	}
	s.wg.Wait()
	return nil
}

// loop sends notifications and syncs, so that no host goroutine ever
// waits for an MCP client.
func (s *Server) loop() {
	defer s.wg.Done()
	ctx := s.ctx
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.changed:
			s.sync(ctx)
		case id := <-s.dirty:
			_ = s.srv.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: historyURI(id)})
		}
	}
}
