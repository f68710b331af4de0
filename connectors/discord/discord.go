package discord

import (
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Identity of the Discord connector (spec §4.1 and §4.2).
const (
	// CardID is the connector_card_id.
	CardID = "im.discord"
	// Provider is the target provider.
	Provider = "discord"
	// SkillName is the primary Skill.
	SkillName = "connector-im-discord"
	// FlowBot is the form sign-in flow: a bot token and a channel id.
	FlowBot = "discord_bot_binding"
	// ToolSend is the send tool.
	ToolSend = "discord_message_send"
	// ConnectorVersion is the Card's connector.version; raise it whenever
	// the tools, the flow or the Skill change.
	ConnectorVersion = "1.0.0"
	// DefaultAPIURL is the public REST API (discordgo adds the version:
	// /api/v9/...).
	DefaultAPIURL = "https://discord.com/api"
)

// Defaults and limits of Options; the stream's and the HTTP client's are
// the SDK's (connector.DefaultEditInterval, DefaultMaxStreams,
// DefaultStreamTTL, DefaultRequestTimeout, DefaultMaxRetryWait).
const (
	// MaxTextLen is Discord's message content limit: 2,000 characters
	// (Unicode code points).
	MaxTextLen = 2000
	// DefaultMaxFileBytes bounds one inbound attachment (Discord's own
	// upload limit for bots without boosts is 10 MiB).
	DefaultMaxFileBytes = 25 << 20
	// DefaultOpenTimeout bounds one Gateway connect (HELLO and READY or
	// RESUMED).
	DefaultOpenTimeout = 30 * time.Second
	// DefaultMaxReconnectWait is the longest pause between two Gateway
	// reconnects.
	DefaultMaxReconnectWait = time.Minute
	// DefaultCatchUpEvery is how often a failed catch-up (history fetch) is
	// tried again.
	DefaultCatchUpEvery = 5 * time.Second
)

// skillMD is the primary Skill, served at /skill.md.
//
//go:embed SKILL.md
var skillMD []byte

// Skill returns a copy of the connector's primary Skill (Markdown).
func Skill() []byte { return append([]byte(nil), skillMD...) }

var identity = connector.Identity{
	CardID:            CardID,
	Name:              "xconn Discord",
	Version:           ConnectorVersion,
	Vendor:            "xconn",
	Description:       "A Discord bot in one channel: messages and attachments both ways, replies as message replies, streamed answers edited in place.",
	TargetType:        protocol.TargetIM,
	Provider:          Provider,
	Label:             "Discord",
	TargetDescription: "A Discord guild text channel, thread or DM reached through a bot on the Gateway.",
	TrustLevel:        protocol.TrustThirdParty,
	DataClasses:       []string{"message", "image", "file"},
}

// Options configures the Discord connector. SDK.Store or SDK.DataDir is
// required; every zero field takes its documented default.
type Options struct {
	// SDK configures the Connector Server (Store or DataDir, APIKey,
	// Logger, PublicURL, bounds). New sets its Identity and Skill.
	SDK connector.Options
	// APIURL replaces https://discord.com/api in every REST request (a
	// proxy in front of Discord, or a fake in tests); "" keeps Discord's.
	APIURL string
	// GatewayURL, when set, replaces the Gateway URL Discord hands out
	// (GET /gateway); "" connects where the REST API says.
	GatewayURL string
	// Proxy is the proxy for REST, the Gateway and attachment downloads:
	// http://, https://, socks5:// or socks5h:// with optional
	// user:password. "" uses the standard environment (HTTPS_PROXY,
	// HTTP_PROXY, NO_PROXY).
	Proxy string
	// Transport, when set, replaces the HTTP transport (Proxy is then
	// ignored for REST).
	Transport http.RoundTripper
	// RequestTimeout bounds every REST request (default 30 s).
	RequestTimeout time.Duration
	// MaxRetryWait is the longest rate limit (429 retry_after) waited out
	// inside one delivery (default 10 s); a longer one rejects the
	// message as retryable.
	MaxRetryWait time.Duration
	// MaxFileBytes bounds one inbound attachment (default 25 MiB); a
	// larger one is announced in the text.
	MaxFileBytes int64
	// OpenTimeout bounds one Gateway connect (default 30 s);
	// MaxReconnectWait is the longest pause between reconnects (default
	// 1 min).
	OpenTimeout      time.Duration
	MaxReconnectWait time.Duration

	// Streamed replies: EditInterval is the least time between two edits
	// of a streamed message (default 1 s); MaxStreams and StreamTTL bound
	// the streamed messages being edited (defaults 256 and 10 min).
	EditInterval time.Duration
	MaxStreams   int
	StreamTTL    time.Duration
}

// Connector is the Discord connector: an SDK Connector Server whose
// channels are each bound to one Discord channel through one bot. Create
// it with New and run Server (Server().ListenAndServe or Serve, or Start,
// ServeHTTP and Close). Safe for concurrent use.
type Connector struct {
	srv     *connector.Server
	log     *slog.Logger
	api     *restAPI
	bots    *connector.Consumers[string, binding]
	clients *connector.Clients[binding, *chatClient]
	stream  *connector.EditStream[string]

	maxFileBytes     int64
	openTimeout      time.Duration
	maxReconnectWait time.Duration

	typingMu sync.Mutex
	typing   map[string]time.Time
}

// New builds the Discord connector on the SDK: the discord_bot_binding
// form, the per-channel REST client, one Gateway connection per bot
// token, the send tool and the IM v2 handlers.
func New(opts Options) (*Connector, error) {
	sdk := opts.SDK
	sdk.Identity, sdk.Card, sdk.Skill = identity, nil, Skill()
	srv, err := connector.New(sdk)
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	api, err := srv.TargetAPI(connector.TargetAPIOptions{BaseURL: opts.APIURL, DefaultURL: DefaultAPIURL, Field: "Options.APIURL",
		Proxy: opts.Proxy, Transport: opts.Transport, Timeout: opts.RequestTimeout, MaxRetryWait: opts.MaxRetryWait})
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	rest, err := newRESTAPI(api, opts.GatewayURL, opts.Proxy, opts.Transport != nil)
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	c := &Connector{
		srv:              srv,
		log:              srv.Logger(),
		api:              rest,
		maxFileBytes:     cmp.Or(max(opts.MaxFileBytes, 0), DefaultMaxFileBytes),
		openTimeout:      cmp.Or(max(opts.OpenTimeout, 0), DefaultOpenTimeout),
		maxReconnectWait: cmp.Or(max(opts.MaxReconnectWait, 0), DefaultMaxReconnectWait),
		typing:           map[string]time.Time{},
	}
	c.stream, err = connector.NewEditStream(connector.EditStreamOptions[string]{
		Send: c.streamSend, Edit: c.streamEdit, SendFile: c.streamFile, Classify: c.deliveryError,
		Limit: textLimit, Interval: opts.EditInterval, MaxStreams: opts.MaxStreams, TTL: opts.StreamTTL})
	if err == nil {
		err = c.register()
	}
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	return c, nil
}

// register adds the flow, the client, the Gateway consumer, the tool and
// the IM handlers to the SDK server.
func (c *Connector) register() error {
	var errBots, errClients error
	c.clients, errClients = connector.SetClient(c.srv, c.newClient)
	c.bots, errBots = connector.AddConsumer(c.srv, connector.Consumer[string, binding]{
		Key: func(b binding) string { return b.Token },
		Run: c.runGateway,
	})
	errs := []error{
		errBots,
		connector.AddForm(c.srv, FlowBot, c.signIn, connector.FlowOptions{Title: "Bind a Discord Bot", Default: true,
			Description: "The bot's token from the Discord Developer Portal and the channel the bot serves."}),
		errClients,
		connector.AddSendTool(c.srv, ToolSend, c.stream, sendArgs, connector.ToolOptions{
			Title:       "Send a Discord Message",
			Description: "Send text, and optionally one file, to the Discord channel bound to the current channel.",
			Profile:     protocol.ProfileIMv2,
			SideEffect:  true,
		}),
	}
	c.srv.OnAssistantMessage(c.stream.Final)
	c.srv.OnAssistantDelta(c.stream.Delta)
	c.srv.OnActivity(c.onActivity)
	return errors.Join(errs...)
}

// Server returns the SDK server: the Connector Server endpoints at the
// root (the Base URL for xAgent).
func (c *Connector) Server() *connector.Server { return c.srv }
