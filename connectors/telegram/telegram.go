package telegram

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

// Identity of the Telegram connector (spec §4.1 and §4.2).
const (
	// CardID is the connector_card_id.
	CardID = "im.telegram"
	// Provider is the target provider.
	Provider = "telegram"
	// SkillName is the primary Skill.
	SkillName = "connector-im-telegram"
	// FlowBot is the form sign-in flow: a bot token and a chat id.
	FlowBot = "telegram_bot_binding"
	// ToolSend is the send tool.
	ToolSend = "telegram_message_send"
	// ConnectorVersion is the Card's connector.version; raise it whenever
	// the tools, the flow or the Skill change.
	ConnectorVersion = "1.0.1"
	// DefaultAPIURL is the public Bot API server.
	DefaultAPIURL = "https://api.telegram.org"
)

// Defaults of Options.
const (
	DefaultPollTimeout    = 25 * time.Second
	DefaultRequestTimeout = 30 * time.Second
	DefaultMaxRetryWait   = 10 * time.Second
	DefaultEditInterval   = time.Second
	// DefaultMaxFileBytes is the Bot API's download limit for bots (20 MB).
	DefaultMaxFileBytes = 20 << 20
	DefaultMaxStreams   = 256
	DefaultStreamTTL    = 10 * time.Minute
	// MaxTextLen is Telegram's message length limit, in UTF-16 code units;
	// longer texts are sent as several messages.
	MaxTextLen = 4096
)

// skillMD is the primary Skill, served at /skill.md.
//
//go:embed SKILL.md
var skillMD []byte

// Skill returns a copy of the connector's primary Skill (Markdown).
func Skill() []byte { return append([]byte(nil), skillMD...) }

// identity declares the Card as the spec's example has it; the SDK derives
// the rest (Profile IM v2, the flow, the tool, the build block) from what
// New registers.
var identity = connector.Identity{
	CardID:            CardID,
	Name:              "xconn Telegram",
	Version:           ConnectorVersion,
	Vendor:            "xconn",
	Description:       "A Telegram bot in one chat: messages and files both ways, streamed replies edited in place.",
	TargetType:        protocol.TargetIM,
	Provider:          Provider,
	Label:             "Telegram",
	TargetDescription: "A Telegram chat reached through a bot of the Bot API.",
	TrustLevel:        protocol.TrustThirdParty,
	DataClasses:       []string{"message", "image", "file"},
}

// Options configures the Telegram connector. SDK.Store or SDK.DataDir is
// required; every zero field takes its documented default.
type Options struct {
	// SDK configures the Connector Server (Store or DataDir, APIKey,
	// Logger, PublicURL, bounds). New sets its Identity and Skill.
	SDK connector.Options
	// APIURL is the Bot API server (default DefaultAPIURL): a self-hosted
	// telegram-bot-api server, or a fake in tests.
	APIURL string
	// Proxy is the proxy for every Bot API request: http://, https://,
	// socks5:// or socks5h:// with optional user:password. "" uses the
	// standard environment (HTTPS_PROXY, HTTP_PROXY, NO_PROXY).
	Proxy string
	// Transport, when set, replaces the HTTP transport (Proxy is then
	// ignored).
	Transport http.RoundTripper
	// PollTimeout is the getUpdates long-polling timeout (default 25 s).
	PollTimeout time.Duration
	// RequestTimeout bounds every other Bot API request (default 30 s).
	RequestTimeout time.Duration
	// MaxRetryWait is the longest flood-control pause (429 retry_after)
	// waited out inside one delivery (default 10 s); a longer one rejects
	// the message as retryable.
	MaxRetryWait time.Duration
	// EditInterval is the least time between two edits of a streamed
	// message (default 1 s); deltas in between are shown by the next edit.
	EditInterval time.Duration
	// MaxFileBytes bounds one inbound file (default 20 MB, the Bot API's
	// own limit); a larger one is announced in the text instead.
	MaxFileBytes int64
	// MaxStreams and StreamTTL bound the streamed messages being edited
	// (defaults 256 and 10 min); an evicted stream's final is sent as a
	// new message only if its target message is unknown.
	MaxStreams int
	StreamTTL  time.Duration
}

// Connector is the Telegram connector: an SDK Connector Server whose
// channels are each bound to one chat through one bot. Create it with New
// and run Server (Server().ListenAndServe or Serve, or Start, ServeHTTP
// and Close). Safe for concurrent use.
type Connector struct {
	srv          *connector.Server
	api          *botAPI
	bots         *connector.Consumers[string, binding]
	clients      *connector.Clients[binding, *chatClient]
	log          *slog.Logger
	pollTimeout  time.Duration
	editInterval time.Duration
	maxFileBytes int64
	streams      *streams
	typingMu     sync.Mutex
	typing       map[string]time.Time // channel → last typing action (bounded by the channels)
}

// New builds the Telegram connector on the SDK: the telegram_bot_binding
// form, the per-channel client, one getUpdates poller per bot token, the
// send tool and the IM v2 handlers.
func New(opts Options) (*Connector, error) {
	base := strings.TrimRight(opts.APIURL, "/")
	if base == "" {
		base = DefaultAPIURL
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("telegram: Options.APIURL must be an absolute http(s) URL, got %q", opts.APIURL)
	}
	tr := opts.Transport
	var proxySecret string
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		if opts.Proxy != "" {
			pu, err := url.Parse(opts.Proxy)
			if err != nil || pu.Host == "" {
				return nil, errors.New("telegram: Options.Proxy must be a URL such as socks5://127.0.0.1:1080 or http://proxy:3128")
			}
			switch pu.Scheme {
			case "http", "https", "socks5", "socks5h":
			default:
				return nil, fmt.Errorf("telegram: proxy scheme %q: want http, https, socks5 or socks5h", pu.Scheme)
			}
			proxySecret, _ = pu.User.Password()
			t.Proxy = http.ProxyURL(pu)
		} else {
			t.Proxy = http.ProxyFromEnvironment
		}
		tr = t
	}
	sdk := opts.SDK
	sdk.Identity, sdk.Card, sdk.Skill = identity, nil, Skill()
	srv, err := connector.New(sdk)
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	srv.Redact(proxySecret)
	c := &Connector{
		srv: srv,
		api: &botAPI{base: base, timeout: or(opts.RequestTimeout, DefaultRequestTimeout), maxRetryWait: or(opts.MaxRetryWait, DefaultMaxRetryWait),
			hc: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}},
		log:          srv.Logger(),
		pollTimeout:  or(opts.PollTimeout, DefaultPollTimeout),
		editInterval: or(opts.EditInterval, DefaultEditInterval),
		maxFileBytes: opts.MaxFileBytes,
		streams:      newStreams(opts.MaxStreams, opts.StreamTTL),
		typing:       map[string]time.Time{},
	}
	if c.maxFileBytes <= 0 {
		c.maxFileBytes = DefaultMaxFileBytes
	}
	if err := c.register(); err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	return c, nil
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// register adds the flow, the client, the poller, the tool and the IM
// handlers to the SDK server.
func (c *Connector) register() error {
	var errBots, errClients error
	c.clients, errClients = connector.SetClient(c.srv, c.newClient)
	c.bots, errBots = connector.AddConsumer(c.srv, connector.Consumer[string, binding]{
		Key: func(b binding) string { return b.Token },
		Run: c.poll,
	})
	errs := []error{
		errBots,
		connector.AddForm(c.srv, FlowBot, c.signIn, connector.FlowOptions{Title: "Bind a Telegram Bot", Default: true,
			Description: "The bot's token from BotFather and the chat the bot serves."}),
		errClients,
		connector.AddTool(c.srv, ToolSend, c.sendTool, connector.ToolOptions{
			Title:       "Send a Telegram Message",
			Description: "Send text, and optionally one file, to the Telegram chat bound to the current channel.",
			Profile:     protocol.ProfileIMv2,
			SideEffect:  true,
		}),
	}
	c.srv.OnAssistantMessage(c.onMessage)
	c.srv.OnAssistantDelta(c.onDelta)
	c.srv.OnActivity(c.onActivity)
	c.srv.OnClose(func(context.Context) error { c.api.hc.CloseIdleConnections(); return nil })
	return errors.Join(errs...)
}

// Server returns the SDK server: the Connector Server endpoints at the
// root (the Base URL for xAgent).
func (c *Connector) Server() *connector.Server { return c.srv }
