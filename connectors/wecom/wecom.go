package wecom

import (
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Identity of the WeCom connector.
const (
	// CardID is the connector_card_id.
	CardID = "im.wecom"
	// Provider is the target provider.
	Provider = "wecom"
	// SkillName is the primary Skill.
	SkillName = "connector-im-wecom"
	// FlowApp is the form sign-in of a self-built application in callback
	// mode.
	FlowApp = "wecom_app_binding"
	// FlowBot is the form sign-in of an intelligent robot over its long
	// connection.
	FlowBot = "wecom_bot_binding"
	// ToolSend is the send tool.
	ToolSend = "wecom_message_send"
	// ConnectorVersion is the Card's connector.version.
	ConnectorVersion = "1.0.0"
	// DefaultAPIURL is WeCom's server API.
	DefaultAPIURL = "https://qyapi.weixin.qq.com"
	// DefaultWSURL is the intelligent robots' long connection.
	DefaultWSURL = "wss://openws.work.weixin.qq.com"
	// CallbackPrefix is the path under which the applications' callback
	// URLs are served: CallbackPrefix + "<corp_id>/<agent_id>".
	CallbackPrefix = "/wecom/callback/"
)

// Defaults and limits of Options.
const (
	// DefaultReplayWindow is how far a callback's timestamp may be from
	// now, either way.
	DefaultReplayWindow = 5 * time.Minute
	// DefaultMaxFileBytes bounds one inbound file (WeCom's largest
	// uploadable file is 20 MB).
	DefaultMaxFileBytes = 20 << 20
	// MaxTextBytes is the longest text or markdown content of one message:
	// WeCom truncates beyond 2048 bytes; longer texts are split.
	MaxTextBytes = 2048
)

//go:embed SKILL.md
var skillMD []byte

// Skill returns a copy of the connector's primary Skill (Markdown).
func Skill() []byte { return append([]byte(nil), skillMD...) }

var identity = connector.Identity{
	CardID:            CardID,
	Name:              "xconn WeCom",
	Version:           ConnectorVersion,
	Vendor:            "xconn",
	Description:       "A WeCom (企业微信) self-built application or intelligent robot: direct messages, files both ways, robot answers streamed.",
	TargetType:        protocol.TargetIM,
	Provider:          Provider,
	Label:             "WeCom",
	TargetDescription: "WeCom users reached through one self-built application (callback mode) or one intelligent robot (long connection).",
	UserChannelMode:   "single",
	TrustLevel:        protocol.TrustThirdParty,
	DataClasses:       []string{"message", "image", "file"},
}

// Options configures the WeCom connector. SDK.Store or SDK.DataDir is
// required; every zero field takes its documented default.
type Options struct {
	// SDK configures the Connector Server. New sets its Identity and Skill.
	SDK connector.Options
	// APIURL is WeCom's server API (default DefaultAPIURL; a fake in
	// tests).
	APIURL string
	// WSURL is the intelligent robots' long connection (default
	// DefaultWSURL).
	WSURL string
	// Proxy is the proxy of every call to WeCom (http://, https://,
	// socks5://; "" the environment's). WeCom refuses calls from an
	// address outside the application's trusted IPs (60020): a proxy with
	// a fixed address is how a connector without one gets through.
	Proxy string
	// Transport, when set, replaces the HTTP transport (Proxy is then
	// ignored).
	Transport http.RoundTripper
	// RequestTimeout bounds one API request (default 30 s).
	RequestTimeout time.Duration
	// MaxRetryWait is the longest frequency-limit pause waited out inside
	// one call (default 10 s).
	MaxRetryWait time.Duration
	// ReplayWindow is how far from now a callback's timestamp may be
	// (default DefaultReplayWindow); older or newer ones are refused as
	// replays, and a nonce is remembered as long.
	ReplayWindow time.Duration
	// AppMarkdown sends an application's text replies as msgtype markdown
	// (rendered by the WeCom client only; the WeChat plug-in shows a
	// notice) instead of text.
	AppMarkdown bool
	// MaxFileBytes bounds one inbound file (default DefaultMaxFileBytes);
	// a larger one is named in the text instead.
	MaxFileBytes int64
	// EditInterval, MaxStreams and StreamTTL tune a robot's streamed
	// answers (the SDK's defaults: 1 s, 256, 10 min).
	EditInterval time.Duration
	MaxStreams   int
	StreamTTL    time.Duration
}

// Connector is the WeCom connector: an SDK Connector Server whose
// channels are each bound to one application or one robot. Create it
// with New and run Server. Safe for concurrent use.
type Connector struct {
	srv          *connector.Server
	api          *serverAPI
	apps         *connector.Consumers[string, binding]
	bots         *connector.Consumers[string, binding]
	clients      *connector.Clients[binding, *client]
	stream       *connector.EditStream[ref]
	log          *slog.Logger
	maxFileBytes int64
	// appMsgType is the msgtype of an application's text: text or markdown.
	appMsgType string
	wsURL      string
	wsDial     *http.Client
	guard      *guard
	// callbackSlots bounds the callbacks handled at once.
	callbackSlots chan struct{}
	// conns are the robots' live connections.
	conns *botConns
}

// New builds the WeCom connector on the SDK: both sign-in forms, the
// per-channel client, the callback endpoint, one long connection per
// robot, the send tool and the IM v2 handlers.
func New(opts Options) (*Connector, error) {
	sdk := opts.SDK
	sdk.Identity, sdk.Card, sdk.Skill = identity, nil, Skill()
	srv, err := connector.New(sdk)
	if err != nil {
		return nil, fmt.Errorf("wecom: %w", err)
	}
	api, err := srv.TargetAPI(connector.TargetAPIOptions{BaseURL: opts.APIURL, DefaultURL: DefaultAPIURL, Field: "Options.APIURL",
		Proxy: opts.Proxy, Transport: opts.Transport, Timeout: opts.RequestTimeout, MaxRetryWait: opts.MaxRetryWait})
	if err != nil {
		return nil, fmt.Errorf("wecom: %w", err)
	}
	// TargetAPI takes only http(s) roots: the WebSocket URL is checked
	// here, and dialed through the API's client (its proxy, no redirects).
	wsURL := strings.TrimRight(cmp.Or(opts.WSURL, DefaultWSURL), "/")
	if u, err := url.Parse(wsURL); err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return nil, fmt.Errorf("wecom: Options.WSURL must be an absolute ws(s) URL, got %q", opts.WSURL)
	}
	log := srv.Logger()
	c := &Connector{
		srv: srv,
		api: &serverAPI{base: api.BaseURL, hc: api.Client, timeout: api.Timeout,
			rl: connector.RateLimit{MaxWait: api.RateLimit.MaxWait, Attempts: 2}, tokens: map[string]cachedToken{}, redact: srv.Redact},
		log:           log,
		maxFileBytes:  cmp.Or(max(opts.MaxFileBytes, 0), DefaultMaxFileBytes),
		appMsgType:    "text",
		wsURL:         wsURL,
		wsDial:        api.Client,
		guard:         newGuard(cmp.Or(max(opts.ReplayWindow, 0), DefaultReplayWindow), log),
		callbackSlots: make(chan struct{}, maxCallbacksInFlight),
		conns:         newBotConns(),
	}
	if opts.AppMarkdown {
		c.appMsgType = "markdown"
	}
	c.stream, err = connector.NewEditStream(connector.EditStreamOptions[ref]{
		Send: c.streamSend, Edit: c.streamEdit, SendFile: c.streamFile, Classify: c.deliveryError,
		Limit: textLimit, Interval: opts.EditInterval, MaxStreams: opts.MaxStreams, TTL: opts.StreamTTL})
	if err == nil {
		err = c.register()
	}
	if err != nil {
		return nil, fmt.Errorf("wecom: %w", err)
	}
	return c, nil
}

func (c *Connector) register() error {
	var errApps, errBots, errClients error
	c.clients, errClients = connector.SetClient(c.srv, c.newClient)
	// Applications: no consumer to run (WeCom pushes to the callback
	// URL), only the routing from corp_id/agent_id to the channel.
	c.apps, errApps = connector.AddConsumer(c.srv, connector.Consumer[string, binding]{
		Key:         func(b binding) string { return b.key() },
		Uses:        func(b binding) bool { return b.Mode == modeApp },
		MaxChannels: 1,
	})
	// Robots: one long connection per bot_id (WeCom keeps one per bot).
	c.bots, errBots = connector.AddConsumer(c.srv, connector.Consumer[string, binding]{
		Key:         func(b binding) string { return b.key() },
		Uses:        func(b binding) bool { return b.Mode == modeBot },
		Run:         c.runBot,
		MaxChannels: 1,
	})
	errs := []error{
		errClients, errApps, errBots,
		c.srv.Handle("GET "+CallbackPrefix+"{corp}/{agent}", http.HandlerFunc(c.callback)),
		c.srv.Handle("POST "+CallbackPrefix+"{corp}/{agent}", http.HandlerFunc(c.callback)),
		connector.AddForm(c.srv, FlowApp, c.signInApp, connector.FlowOptions{Title: "Bind a WeCom self-built application", Default: true,
			Description: "The Corp ID, AgentId and Secret of a self-built application, and the Token and EncodingAESKey of its API message receiving; set its callback URL to <public URL>" + CallbackPrefix + "<corp_id>/<agent_id>."}),
		connector.AddForm(c.srv, FlowBot, c.signInBot, connector.FlowOptions{Title: "Bind a WeCom intelligent robot",
			Description: "The Bot ID and Secret of an intelligent robot in API mode with the long connection: no public URL needed."}),
		connector.AddSendTool(c.srv, ToolSend, c.stream, sendArgs, connector.ToolOptions{
			Title:       "Send a WeCom Message",
			Description: "Send text, and optionally one file, to the channel's default WeCom user or chat (the latest that wrote to the application or robot).",
			Profile:     protocol.ProfileIMv2,
			SideEffect:  true,
		}),
	}
	c.srv.OnAssistantMessage(c.final)
	c.srv.OnAssistantDelta(c.delta)
	return errors.Join(errs...)
}

// Server returns the SDK server: the Connector Server endpoints at the
// root (the Base URL for xAgent) and the callback URLs.
func (c *Connector) Server() *connector.Server { return c.srv }
