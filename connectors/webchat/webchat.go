package webchat

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Identity of the web chat connector.
const (
	// CardID is the connector_card_id of the web chat connector.
	CardID = "im.webchat"
	// Provider is its target provider.
	Provider = "webchat"
	// SkillName is its primary Skill.
	SkillName = "connector-im-webchat"
	// FlowQR is the QR sign-in flow: a browser opens the login URL and
	// confirms.
	FlowQR = "webchat_qr_login"
	// FlowRoom is the form sign-in flow that opens a room protected by an
	// access code.
	FlowRoom = "webchat_room"
	// ToolSend is the proactive message tool.
	ToolSend = "webchat_message_send"
	// ConnectorVersion is the Card's connector.version; raise it whenever
	// the tools, flows or Skill change.
	ConnectorVersion = "1.1.1"
)

// Defaults of the QR sign-in.
const (
	// DefaultLoginTTL is the lifetime of one QR login link.
	DefaultLoginTTL = 2 * time.Minute
	// DefaultLoginPollInterval is the auth.status polling interval the QR
	// flow suggests to xAgent.
	DefaultLoginPollInterval = time.Second
)

// skillMD is the primary Skill, served at /skill.md.
//
//go:embed SKILL.md
var skillMD []byte

// Skill returns a copy of the connector's primary Skill (Markdown).
func Skill() []byte { return append([]byte(nil), skillMD...) }

// identity declares the Card; the SDK derives the rest of it (Profile
// IM v2, the two flows, the tool, the build block) from what New
// registers.
var identity = connector.Identity{
	CardID:            CardID,
	Name:              "xconn Web Chat",
	Version:           ConnectorVersion,
	Vendor:            "xconn",
	Description:       "A chat page in the browser: QR sign-in or rooms with an access code, text and files both ways, live streaming.",
	TargetType:        protocol.TargetIM,
	Provider:          Provider,
	Label:             "Web Chat",
	TargetDescription: "A web chat page served by the connector.",
	TrustLevel:        protocol.TrustLocal,
	DataClasses:       []string{"messages", "files"},
}

// Options configures the web chat connector. PublicURL is required, and
// SDK.Store or SDK.DataDir; every zero field takes its documented default.
type Options struct {
	// SDK configures the Connector Server: Store (or DataDir, where the
	// SDK then opens its default SQLite store), APIKey, SigningKey,
	// Logger, timeouts and bounds. New sets its Identity and Skill (and
	// clears Card).
	SDK connector.Options
	// PublicURL is the absolute URL at which browsers reach the web side
	// (for example "https://chat.example.com" or "http://127.0.0.1:8080").
	// Login links are PublicURL + WebPath + "/login/<token>". Required.
	PublicURL string
	// WebPath is the path prefix of the web side (default "/webchat").
	WebPath string
	// SeparateWeb keeps the web side off the Server's handler, for a
	// listener of its own: serve WebHandler there. By default the Server
	// serves both sides.
	SeparateWeb bool
	// LoginTTL is the lifetime of one QR login link (default 2 min).
	LoginTTL time.Duration
	// LoginPollInterval is the auth.status polling interval suggested to
	// xAgent during a QR sign-in (default 1 s).
	LoginPollInterval time.Duration
	// MaxUploadBytes bounds one message a browser posts, file included
	// (default DefaultMaxUploadBytes, 10 MiB).
	MaxUploadBytes int64
	// UploadQuotaBytes bounds what one browser session may post (text and
	// files) per minute (default DefaultUploadQuotaBytes, 32 MiB); beyond
	// it posts are answered 429.
	UploadQuotaBytes int64
	// MaxSessions and SessionTTL bound browser sessions (defaults
	// DefaultMaxSessions and DefaultSessionTTL).
	MaxSessions int
	SessionTTL  time.Duration
	// MaxClients, ClientBuffer and Backlog bound the event streams
	// (defaults DefaultMaxClients, DefaultClientBuffer, DefaultBacklog);
	// Backlog, the messages kept in memory for a stream that opens, is
	// used only without a HistoryStore.
	MaxClients   int
	ClientBuffer int
	Backlog      int
	// History keeps each channel's chat history durably, so that it is
	// shown after reloads and restarts. Nil uses SDK.Store when it
	// implements HistoryStore (as *store.DB does); with neither, only the
	// last Backlog messages are kept, in memory.
	History HistoryStore
	// HistoryMessages and HistoryBytes bound one channel's stored history
	// (defaults DefaultHistoryMessages and DefaultHistoryBytes); the oldest
	// messages are dropped beyond them.
	HistoryMessages int
	HistoryBytes    int64
}

// Connector is the web chat connector: an SDK Connector Server for xAgent
// with the web side for browsers registered on it. Create it with New and
// run Server (Server().ListenAndServe or Serve, or Start, ServeHTTP and
// Close); closing the Server ends the browsers' event streams first.
// Safe for concurrent use.
type Connector struct {
	srv        *connector.Server
	rooms      *connector.Consumers[string, binding] // a room's channel
	pagesOf    *connector.Clients[binding, *page]    // a channel's page
	public     *url.URL                              // absolute URL of the browsers, for links, Origin checks and cookies
	base       string                                // web path prefix without trailing slash, e.g. "/webchat"
	cookieName string                                // of the session cookie (cookieNameFor)
	maxUpload  int64
	hub        *hub
	sessions   *sessionStore
	limiter    *attemptLimiter // wrong access codes per client address and room
	// clientLimiter counts wrong access codes per client address over
	// all rooms.
	clientLimiter *attemptLimiter
	history       *history // nil: no durable history
	// pubLocks order a message's showing and recording against a stream's
	// subscription and history read (see publishMessage).
	pubLocks [pubLockStripes]sync.RWMutex
	pages    *pages
	web      http.Handler
	log      *slog.Logger
}

// New builds the web chat connector on the SDK: the QR and room sign-in
// flows, the send tool, the IM v2 handlers and the web side.
func New(opts Options) (*Connector, error) {
	pub, err := url.Parse(strings.TrimSuffix(opts.PublicURL, "/"))
	if err != nil || (pub.Scheme != "http" && pub.Scheme != "https") || pub.Host == "" {
		return nil, fmt.Errorf("webchat: Options.PublicURL must be an absolute http(s) URL, got %q", opts.PublicURL)
	}
	base := "/" + strings.Trim(opts.WebPath, "/")
	if base == "/" {
		base = DefaultWebPath
	}
	sdk := opts.SDK
	sdk.Identity, sdk.Card, sdk.Skill = identity, nil, Skill()
	srv, err := connector.New(sdk)
	if err != nil {
		return nil, fmt.Errorf("webchat: %w", err)
	}
	pg, err := loadPages()
	if err != nil {
		return nil, err
	}
	c := &Connector{
		srv:           srv,
		public:        pub,
		base:          base,
		cookieName:    cookieNameFor(pub, base),
		maxUpload:     opts.MaxUploadBytes,
		hub:           newHub(opts.ClientBuffer, opts.MaxClients, opts.Backlog, 0),
		sessions:      newSessionStore(opts.MaxSessions, opts.SessionTTL),
		limiter:       newAttemptLimiter(0, 0, 0),
		clientLimiter: newAttemptLimiter(DefaultMaxClientCodeFailures, 0, 0),
		pages:         pg,
		log:           srv.Logger(),
	}
	if c.maxUpload <= 0 {
		c.maxUpload = DefaultMaxUploadBytes
	}
	if opts.UploadQuotaBytes > 0 {
		c.sessions.quota = opts.UploadQuotaBytes
	}
	hs := opts.History
	if hs == nil {
		hs, _ = opts.SDK.Store.(HistoryStore)
	}
	if hs != nil {
		c.history = &history{st: hs, maxMsgs: orDefault(opts.HistoryMessages, DefaultHistoryMessages),
			maxBytes: int64(orDefault(int(opts.HistoryBytes), DefaultHistoryBytes))}
		c.hub.noBacklog = true
	}
	c.web = c.routes()
	if err := c.register(opts); err != nil {
		return nil, fmt.Errorf("webchat: %w", err)
	}
	return c, nil
}

// register adds the flows, the channel client, the room routing, the tool,
// the IM handlers and the web side to the SDK server.
func (c *Connector) register(opts Options) error {
	ttl, poll := opts.LoginTTL, opts.LoginPollInterval
	if ttl <= 0 {
		ttl = DefaultLoginTTL
	}
	if poll <= 0 {
		poll = DefaultLoginPollInterval
	}
	var errRooms, errPages error
	c.pagesOf, errPages = connector.SetClient(c.srv, c.newPage)
	c.rooms, errRooms = connector.AddConsumer(c.srv, connector.Consumer[string, binding]{
		Key:  func(b binding) string { return b.Room },
		Uses: func(b binding) bool { return b.Room != "" }, // QR channels have no room
		// One channel per room, refused atomically: two sign-ins to one
		// room at the same moment cannot both pass.
		MaxChannels: 1,
	})
	errs := []error{
		errRooms,
		connector.AddQR(c.srv, FlowQR, connector.QROptions[binding]{
			FlowOptions: connector.FlowOptions{Title: "Sign in a browser by QR code", Default: true,
				Description: "Scan the QR code with a phone, or open its link, and press Confirm."},
			Issue: c.issueLogin, TTL: ttl, PollInterval: poll,
		}),
		connector.AddForm(c.srv, FlowRoom, c.openRoom, connector.FlowOptions{Title: "Open a chat room",
			Description: "A room is reachable at /webchat/rooms/<room> by anyone who enters the access code."}),
		errPages,
		connector.AddTool(c.srv, ToolSend, c.sendTool, connector.ToolOptions{
			Title:       "Send a web chat message",
			Description: "Send a proactive message (text, a file of the conversation, or both) to the web chat page of this channel (every signed-in browser, or everyone in the room).",
			Profile:     protocol.ProfileIMv2,
			SideEffect:  true,
		}),
	}
	c.srv.OnAssistantMessage(c.onAssistantMessage)
	c.srv.OnAssistantDelta(c.onAssistantDelta)
	c.srv.OnActivity(c.onActivity)
	c.srv.OnUnbind(c.onUnbind)
	// The event streams end first: before the channel clients close (which
	// would tell the browsers they were signed out) and before the HTTP
	// server shuts down (which would wait for them).
	c.srv.OnClose(func(context.Context) error { c.hub.close(); return nil })
	if !opts.SeparateWeb {
		errs = append(errs, c.srv.Handle(c.base+"/", c.web), c.srv.Handle(c.base, c.web),
			c.srv.Handle("GET /{$}", c.web), c.srv.Handle("GET /favicon.ico", c.web))
	}
	return errors.Join(errs...)
}

// Server returns the SDK server: the Connector Server endpoints at the
// root (the Base URL for xAgent) and, unless Options.SeparateWeb, the web
// side under WebPath.
func (c *Connector) Server() *connector.Server { return c.srv }

// WebHandler serves only the web side under WebPath (for a listener of
// its own, see Options.SeparateWeb).
func (c *Connector) WebHandler() http.Handler { return c.web }

// WebURL returns the absolute URL of the web side's chat page.
func (c *Connector) WebURL() string { return c.public.String() + c.base + "/" }

// issueLogin is the QR flow's Issue: the QR text is the absolute login URL
// of the SDK token.
func (c *Connector) issueLogin(_ context.Context, s *connector.QRSession) (string, error) {
	return c.public.String() + c.base + "/login/" + url.PathEscape(s.Token), nil
}

// onUnbind forgets the history of a channel that was signed out or whose
// lease expired (a sign-in that replaces the binding keeps it).
func (c *Connector) onUnbind(ctx context.Context, ch *connector.Channel, _ connector.Binding, reason connector.UnbindReason) error {
	if c.history == nil || reason == connector.UnbindReplaced {
		return nil
	}
	return c.history.clear(ctx, ch.ID())
}
