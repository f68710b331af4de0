package slack

import (
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	slackapi "github.com/slack-go/slack"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Identity of the Slack connector (spec §4.1 and §4.2).
const (
	// CardID is the connector_card_id.
	CardID = "im.slack"
	// Provider is the target provider.
	Provider = "slack"
	// SkillName is the primary Skill.
	SkillName = "connector-im-slack"
	// FlowApp is the form sign-in flow: an app-level token, a bot token
	// and an optional channel.
	FlowApp = "slack_app_binding"
	// ToolSend is the send tool.
	ToolSend = "slack_message_send"
	// ConnectorVersion is the Card's connector.version; raise it whenever
	// the tools, the flow or the Skill change.
	ConnectorVersion = "1.0.0"
	// DefaultAPIURL is Slack's Web API (slack-go's APIURL).
	DefaultAPIURL = slackapi.APIURL
)

// Defaults and limits of Options.
const (
	// DefaultMaxFileBytes bounds one inbound file (url_private download).
	DefaultMaxFileBytes = 20 << 20
	// MaxTextLen is the longest text part the connector posts, in
	// characters: Slack truncates a message's text beyond 40,000 and asks
	// to keep it under 4,000; longer answers are posted as several
	// messages.
	MaxTextLen = 4000
	// DefaultMaxBackfill bounds the messages one conversation's catch-up
	// (conversations.history after a reconnect) publishes.
	DefaultMaxBackfill = 1000
	// MaxCursors bounds the conversations whose last published ts a
	// channel keeps (an unbound channel sees DMs and mentions in many).
	MaxCursors = 64
)

// skillMD is the primary Skill, served at /skill.md.
//
//go:embed SKILL.md
var skillMD []byte

// Skill returns a copy of the connector's primary Skill (Markdown).
func Skill() []byte { return append([]byte(nil), skillMD...) }

var identity = connector.Identity{
	CardID:            CardID,
	Name:              "xconn Slack",
	Version:           ConnectorVersion,
	Vendor:            "xconn",
	Description:       "A Slack app over Socket Mode: DMs, mentions or one channel, threads kept, files both ways, streamed replies edited in place.",
	TargetType:        protocol.TargetIM,
	Provider:          Provider,
	Label:             "Slack",
	TargetDescription: "A Slack workspace reached through an app's bot, over Socket Mode (no public URL).",
	TrustLevel:        protocol.TrustThirdParty,
	DataClasses:       []string{"message", "image", "file"},
}

// Options configures the Slack connector. SDK.Store or SDK.DataDir is
// required; every zero field takes its documented default.
type Options struct {
	// SDK configures the Connector Server (Store or DataDir, APIKey,
	// Logger, PublicURL, bounds). New sets its Identity and Skill.
	SDK connector.Options
	// APIURL is the Web API's root (default DefaultAPIURL,
	// https://slack.com/api/): a proxy or a fake in tests. The Socket Mode
	// URL is whatever apps.connections.open there answers.
	APIURL string
	// Proxy is the proxy of every Web API request and of the Socket Mode
	// WebSocket: http://, https://, socks5:// or socks5h:// with optional
	// user:password. "" uses the standard environment (HTTPS_PROXY,
	// HTTP_PROXY, NO_PROXY).
	Proxy string
	// Transport, when set, replaces the HTTP transport of the Web API
	// (Proxy then applies to the WebSocket only).
	Transport http.RoundTripper
	// RequestTimeout bounds every Web API request (default 30 s).
	RequestTimeout time.Duration
	// MaxRetryWait is the longest rate-limit pause (HTTP 429 Retry-After)
	// waited out inside one delivery (default 10 s); a longer one rejects
	// the message as retryable.
	MaxRetryWait time.Duration

	// MaxFileBytes bounds one inbound file (default 20 MB); a larger one
	// is announced in the text. MaxBackfill bounds the messages one
	// conversation's catch-up publishes after a reconnect (default 1,000).
	MaxFileBytes int64
	MaxBackfill  int

	// Streamed replies: EditInterval is the least time between two
	// chat.update calls of a streamed message (default 1 s); MaxStreams and
	// StreamTTL bound the streamed messages being edited (defaults 256 and
	// 10 min).
	EditInterval time.Duration
	MaxStreams   int
	StreamTTL    time.Duration
}

// Connector is the Slack connector: an SDK Connector Server whose channels
// are each bound to a Slack app's bot (in one conversation, or in every DM
// and mention). Create it with New and run Server. Safe for concurrent use.
type Connector struct {
	srv *connector.Server
	log *slog.Logger
	// The Web API side: its root, the HTTP client (proxy, pool, no
	// redirects), the rate-limit wait and the per-method holds.
	apiURL  string
	hc      *http.Client
	timeout time.Duration
	rl      connector.RateLimit
	holds   *connector.RateBuckets
	dialer  *websocket.Dialer
	// The SDK's handles: one Socket Mode consumer per app token, the
	// channels' clients, the replies' stream.
	apps    *connector.Consumers[string, binding]
	clients *connector.Clients[binding, *chatClient]
	stream  *connector.EditStream[msgRef]
	// Inbound knobs.
	maxFileBytes int64
	maxBackfill  int
}

// discard is the logger handed to slack-go, which would otherwise write to
// stderr; the connector logs through the SDK's redacting logger instead.
var discard = log.New(io.Discard, "", 0)

// New builds the Slack connector on the SDK: the slack_app_binding form,
// the per-channel client, one Socket Mode connection per app token, the
// send tool and the IM v2 handlers.
func New(opts Options) (*Connector, error) {
	sdk := opts.SDK
	sdk.Identity, sdk.Card, sdk.Skill = identity, nil, Skill()
	srv, err := connector.New(sdk)
	if err != nil {
		return nil, fmt.Errorf("slack: %w", err)
	}
	base := strings.TrimSuffix(cmp.Or(opts.APIURL, DefaultAPIURL), "/")
	api, err := srv.TargetAPI(connector.TargetAPIOptions{BaseURL: base, DefaultURL: strings.TrimSuffix(DefaultAPIURL, "/"),
		Field: "Options.APIURL", Proxy: opts.Proxy, Transport: opts.Transport, Timeout: opts.RequestTimeout, MaxRetryWait: opts.MaxRetryWait})
	if err != nil {
		return nil, fmt.Errorf("slack: %w", err)
	}
	c := &Connector{
		srv:          srv,
		log:          srv.Logger(),
		apiURL:       api.BaseURL + "/",
		hc:           api.Client,
		timeout:      api.Timeout,
		rl:           api.RateLimit,
		holds:        connector.NewRateBuckets(0),
		dialer:       newDialer(api.Client, opts.Proxy),
		maxFileBytes: cmp.Or(max(opts.MaxFileBytes, 0), DefaultMaxFileBytes),
		maxBackfill:  cmp.Or(max(opts.MaxBackfill, 0), DefaultMaxBackfill),
	}
	// Replies go through the SDK's EditStream: text parts of at most
	// MaxTextLen characters (the first edited into the streamed message),
	// then each file, in the thread of the message they answer.
	c.stream, err = connector.NewEditStream(connector.EditStreamOptions[msgRef]{
		Send: c.streamSend, Edit: c.streamEdit, SendFile: c.streamFile, Delete: c.streamDelete, Classify: c.deliveryError,
		Limit: textLimit, Interval: opts.EditInterval, MaxStreams: opts.MaxStreams, TTL: opts.StreamTTL})
	if err == nil {
		err = c.register()
	}
	if err != nil {
		return nil, fmt.Errorf("slack: %w", err)
	}
	return c, nil
}

// newDialer is the Socket Mode WebSocket dialer: the proxy of the Web
// API's transport (Options.Proxy, else the environment's), slack-go's
// buffer size and handshake bound.
func newDialer(hc *http.Client, proxy string) *websocket.Dialer {
	d := &websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: 45 * time.Second, WriteBufferSize: 32 << 10}
	if t, ok := hc.Transport.(*http.Transport); ok && t.Proxy != nil {
		d.Proxy = t.Proxy
	}
	if u, err := url.Parse(proxy); proxy != "" && err == nil && u.Host != "" {
		d.Proxy = http.ProxyURL(u)
	}
	return d
}

// register adds the flow, the client, the consumer, the tool and the IM
// handlers to the SDK server.
func (c *Connector) register() error {
	var errApps, errClients error
	c.clients, errClients = connector.SetClient(c.srv, c.newClient)
	c.apps, errApps = connector.AddConsumer(c.srv, connector.Consumer[string, binding]{
		Key: func(b binding) string { return b.AppToken },
		Run: c.runSocket,
	})
	errs := []error{
		errApps,
		connector.AddForm(c.srv, FlowApp, c.signIn, connector.FlowOptions{Title: "Bind a Slack App", Default: true,
			Description: "The app's app-level token (Socket Mode), its bot token and, optionally, the one channel it serves."}),
		errClients,
		connector.AddSendTool(c.srv, ToolSend, c.stream, sendArgs, connector.ToolOptions{
			Title:       "Send a Slack Message",
			Description: "Send text, and optionally one file, to the Slack conversation bound to the current channel (or the one the last message came from).",
			Profile:     protocol.ProfileIMv2,
			SideEffect:  true,
		}),
	}
	c.srv.OnAssistantMessage(c.stream.Final)
	c.srv.OnAssistantDelta(c.stream.Delta)
	c.srv.OnActivity(c.activity)
	return errors.Join(errs...)
}

// Server returns the SDK server: the Connector Server endpoints at the
// root (the Base URL for xAgent).
func (c *Connector) Server() *connector.Server { return c.srv }

// api returns a Web API client for a bot token (and the app token, for
// apps.connections.open) over the connector's HTTP client.
func (c *Connector) api(botToken, appToken string) *slackapi.Client {
	return slackapi.New(botToken, slackapi.OptionAPIURL(c.apiURL), slackapi.OptionAppLevelToken(appToken),
		slackapi.OptionHTTPClient(c.hc), slackapi.OptionLog(discard))
}
