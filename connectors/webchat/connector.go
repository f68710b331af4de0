package webchat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// Defaults of the QR sign-in.
const (
	// DefaultLoginTTL is the lifetime of one QR login link.
	DefaultLoginTTL = 2 * time.Minute
	// DefaultLoginPollInterval is the auth.status polling interval the QR
	// flow suggests to xAgent.
	DefaultLoginPollInterval = time.Second
)

// Options configures a web chat Connector. Store and PublicURL are
// required; every zero field takes its documented default.
type Options struct {
	// Store holds channels (with their encrypted bindings), sign-in
	// sessions, tool-call records and files. Required.
	Store store.ConnectorStore
	// Delivery stores the IM outbox and inbox; nil uses Store when it
	// implements delivery.Storage.
	Delivery delivery.Storage
	// APIKey is the system API key xAgent presents; "" disables the check
	// (only for a connector bound to loopback).
	APIKey string
	// PublicURL is the absolute URL at which browsers reach this process
	// (for example "https://chat.example.com" or "http://127.0.0.1:8080").
	// Login links are PublicURL + WebPath + "/login/<token>". Required.
	PublicURL string
	// WebPath is the path prefix of the web side (default "/webchat").
	WebPath string
	// DataDir holds the transfer-plane file cache.
	DataDir string
	// SigningKey (>= 32 bytes) signs download URLs and QR tokens; nil makes
	// a random key per process.
	SigningKey []byte
	// Logger receives logs through the SDK's redacting handler; nil
	// discards them.
	Logger *slog.Logger
	// LoginTTL is the lifetime of one QR login link (default 2 min).
	LoginTTL time.Duration
	// LoginPollInterval is the auth.status polling interval suggested to
	// xAgent during a QR sign-in (default 1 s).
	LoginPollInterval time.Duration
	// MaxUploadBytes bounds one message a browser posts, file included
	// (default DefaultMaxUploadBytes, 10 MiB).
	MaxUploadBytes int64
	// MaxSessions and SessionTTL bound browser sessions (defaults
	// DefaultMaxSessions and DefaultSessionTTL).
	MaxSessions int
	SessionTTL  time.Duration
	// MaxClients, ClientBuffer and Backlog bound the event streams
	// (defaults DefaultMaxClients, DefaultClientBuffer, DefaultBacklog).
	MaxClients   int
	ClientBuffer int
	Backlog      int
	// SDK carries further Connector Server settings (timeouts, queue
	// bounds, lease grace). Its Card, Skill, Store, Delivery, APIKey,
	// DataDir, SigningKey and Logger are replaced by the fields above.
	SDK connector.Options
}

// Connector is the web chat connector: a Connector Server (the SDK) for
// xAgent plus the web side for browsers. Create it with New, Start it,
// serve it (ServeHTTP serves both sides; ConnectorHandler and WebHandler
// serve one each, for separate listeners) and Close it. Safe for
// concurrent use after Start.
type Connector struct {
	srv      *connector.Server
	web      *webSide
	hub      *hub
	sessions *sessionStore
	rooms    *roomIndex
	public   *url.URL
	webPath  string
	log      *slog.Logger
}

// New builds the web chat connector on the SDK: Card, Skill, the QR and
// room sign-in flows, the send tool and the IM v2 handlers.
func New(opts Options) (*Connector, error) {
	if opts.Store == nil {
		return nil, errors.New("webchat: Options.Store is required")
	}
	pub, err := url.Parse(strings.TrimSuffix(opts.PublicURL, "/"))
	if err != nil || (pub.Scheme != "http" && pub.Scheme != "https") || pub.Host == "" {
		return nil, fmt.Errorf("webchat: Options.PublicURL must be an absolute http(s) URL, got %q", opts.PublicURL)
	}
	webPath := "/" + strings.Trim(opts.WebPath, "/")
	if webPath == "/" {
		webPath = DefaultWebPath
	}
	sdk := opts.SDK
	sdk.Card = Card()
	sdk.Skill = Skill()
	sdk.Store = opts.Store
	sdk.Delivery = opts.Delivery
	sdk.APIKey = opts.APIKey
	sdk.DataDir = opts.DataDir
	sdk.SigningKey = opts.SigningKey
	sdk.Logger = opts.Logger
	srv, err := connector.New(sdk)
	if err != nil {
		return nil, fmt.Errorf("webchat: %w", err)
	}
	c := &Connector{
		srv:      srv,
		hub:      newHub(opts.ClientBuffer, opts.MaxClients, opts.Backlog, 0),
		sessions: newSessionStore(opts.MaxSessions, opts.SessionTTL),
		rooms:    newRoomIndex(),
		public:   pub,
		webPath:  webPath,
		log:      srv.Logger(),
	}
	c.web, err = newWebSide(webConfig{
		base:      webPath,
		publicURL: pub,
		maxUpload: opts.MaxUploadBytes,
		be:        c,
		hub:       c.hub,
		sessions:  c.sessions,
		log:       c.log,
		now:       time.Now,
	})
	if err != nil {
		return nil, err
	}
	qr := connector.QRFlow{Issue: c.issueLogin, TTL: opts.LoginTTL, PollInterval: opts.LoginPollInterval}
	if qr.TTL <= 0 {
		qr.TTL = DefaultLoginTTL
	}
	if qr.PollInterval <= 0 {
		qr.PollInterval = DefaultLoginPollInterval
	}
	if err := c.register(qr); err != nil {
		return nil, err
	}
	return c, nil
}

// register adds the flows, the tool and the handlers to the SDK server.
func (c *Connector) register(qr connector.QRFlow) error {
	if err := c.srv.AddAuthFlow(FlowQR, connector.QR(qr)); err != nil {
		return fmt.Errorf("webchat: %w", err)
	}
	if err := c.srv.AddAuthFlow(FlowRoom, connector.Form(c.openRoom)); err != nil {
		return fmt.Errorf("webchat: %w", err)
	}
	if err := connector.AddTool(c.srv, ToolSend, c.sendTool, connector.ToolOptions{
		Title:           "Send a web chat message",
		Description:     "Send a proactive text message to the web chat page of this channel (every signed-in browser, or everyone in the room).",
		Profile:         protocol.ProfileIMv2,
		RelatedSkillIDs: []string{SkillName},
		SideEffect:      true,
	}); err != nil {
		return fmt.Errorf("webchat: %w", err)
	}
	c.srv.OnAssistantMessage(c.onAssistantMessage)
	c.srv.OnAssistantDelta(c.onAssistantDelta)
	c.srv.OnActivity(c.onActivity)
	c.srv.OnBind(c.onBind)
	c.srv.OnUnbind(c.onUnbind)
	return nil
}

// Start starts the SDK server: it validates the final Card and restores
// channels, room index and QR-signed-in browsers from the store.
func (c *Connector) Start(ctx context.Context) error {
	if err := c.srv.Start(ctx); err != nil {
		return fmt.Errorf("webchat: start: %w", err)
	}
	return nil
}

// Close ends every browser event stream, then closes the SDK server
// (sockets, workers, janitors) and waits for its goroutines. Call it
// before shutting down the HTTP servers, whose SSE streams would
// otherwise keep them waiting.
func (c *Connector) Close(ctx context.Context) error {
	c.web.close()
	if err := c.srv.Close(ctx); err != nil {
		return fmt.Errorf("webchat: close: %w", err)
	}
	return nil
}

// ServeHTTP serves the web side under WebPath and every Connector Server
// endpoint (Card, Skill, health, data plane, transfer plane, metrics) at
// the root: the Base URL for xAgent is the listener's root URL.
func (c *Connector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == c.webPath || strings.HasPrefix(r.URL.Path, c.webPath+"/") {
		c.web.ServeHTTP(w, r)
		return
	}
	c.srv.ServeHTTP(w, r)
}

// ConnectorHandler serves only the Connector Server endpoints (for a
// listener that browsers do not reach).
func (c *Connector) ConnectorHandler() http.Handler { return c.srv }

// WebHandler serves only the web side under WebPath (for a public
// listener).
func (c *Connector) WebHandler() http.Handler { return c.web }

// Server returns the underlying SDK server.
func (c *Connector) Server() *connector.Server { return c.srv }

// WebURL returns the absolute URL of the web side's chat page.
func (c *Connector) WebURL() string { return c.public.String() + c.webPath + "/" }

// RoomURL returns the absolute URL of a room's page.
func (c *Connector) RoomURL(room string) string {
	return c.public.String() + c.webPath + "/rooms/" + url.PathEscape(room)
}

// issueLogin is the QR flow's Issue: the QR text is the absolute login URL
// of the SDK token.
func (c *Connector) issueLogin(_ context.Context, s *connector.QRSession) (string, error) {
	return c.public.String() + c.webPath + "/login/" + url.PathEscape(s.Token), nil
}

// channelState implements backend.
func (c *Connector) channelState(_ context.Context, channel string) string {
	ch, err := c.srv.Channel(channel)
	if err != nil {
		return protocol.StatusRevoked
	}
	return ch.Status()
}
