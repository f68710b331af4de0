package telegram

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

// Defaults and limits of Options; the stream's and the Bot API client's
// are the SDK's (connector.DefaultEditInterval, DefaultMaxStreams,
// DefaultStreamTTL, DefaultRequestTimeout, DefaultMaxRetryWait).
const (
	DefaultPollTimeout = 25 * time.Second
	// DefaultMaxFileBytes is the Bot API's download limit for bots (20 MB).
	DefaultMaxFileBytes = 20 << 20
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
	// RequestTimeout bounds every Bot API request but getUpdates
	// (default 30 s).
	RequestTimeout time.Duration
	// MaxRetryWait is the longest flood-control pause (429 retry_after)
	// waited out inside one delivery (default 10 s); a longer one rejects
	// the message as retryable.
	MaxRetryWait time.Duration

	// Inbound: PollTimeout is the getUpdates long-polling timeout
	// (default 25 s); MaxFileBytes bounds one inbound file (default 20 MB,
	// the Bot API's own limit), a larger one is announced in the text.
	PollTimeout  time.Duration
	MaxFileBytes int64

	// Streamed replies: EditInterval is the least time between two edits
	// of a streamed message (default 1 s; deltas in between are shown by
	// the next edit); MaxStreams and StreamTTL bound the streamed messages
	// being edited (defaults 256 and 10 min), and the final of a stream
	// dropped from them still edits its message, found in the channel's
	// durable record.
	EditInterval time.Duration
	MaxStreams   int
	StreamTTL    time.Duration
}

// Connector is the Telegram connector: an SDK Connector Server whose
// channels are each bound to one chat through one bot. Create it with New
// and run Server (Server().ListenAndServe or Serve, or Start, ServeHTTP
// and Close). Safe for concurrent use.
type Connector struct {
	srv *connector.Server
	log *slog.Logger
	// The SDK's handles of the Bot API side: the client, the pollers
	// (one per token), the channels' clients and the replies' stream.
	api     *botAPI
	bots    *connector.Consumers[string, binding]
	clients *connector.Clients[binding, *chatClient]
	stream  *connector.EditStream[int64]
	// Inbound knobs.
	pollTimeout  time.Duration
	maxFileBytes int64
	// typing holds the last typing action per channel (bounded by the
	// channels).
	typingMu sync.Mutex
	typing   map[string]time.Time
}

// New builds the Telegram connector on the SDK: the telegram_bot_binding
// form, the per-channel client, one getUpdates poller per bot token, the
// send tool and the IM v2 handlers.
func New(opts Options) (*Connector, error) {
	sdk := opts.SDK
	sdk.Identity, sdk.Card, sdk.Skill = identity, nil, Skill()
	srv, err := connector.New(sdk)
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	api, err := srv.TargetAPI(connector.TargetAPIOptions{BaseURL: opts.APIURL, DefaultURL: DefaultAPIURL, Field: "Options.APIURL",
		Proxy: opts.Proxy, Transport: opts.Transport, Timeout: opts.RequestTimeout, MaxRetryWait: opts.MaxRetryWait})
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	c := &Connector{
		srv:          srv,
		api:          &botAPI{base: api.BaseURL, hc: api.Client, timeout: api.Timeout, rl: api.RateLimit},
		log:          srv.Logger(),
		pollTimeout:  cmp.Or(max(opts.PollTimeout, 0), DefaultPollTimeout),
		maxFileBytes: cmp.Or(max(opts.MaxFileBytes, 0), DefaultMaxFileBytes),
		typing:       map[string]time.Time{},
	}
	// Replies go through the SDK's EditStream: text parts of at most
	// MaxTextLen (the first edited into the streamed message, if any),
	// then each file, in the topic of the message they answer; the SDK
	// acks accepted only after every Bot API call succeeded.
	c.stream, err = connector.NewEditStream(connector.EditStreamOptions[int64]{
		Send: c.streamSend, Edit: c.streamEdit, SendFile: c.streamFile, Classify: c.deliveryError,
		Limit: textLimit, Interval: opts.EditInterval, MaxStreams: opts.MaxStreams, TTL: opts.StreamTTL})
	if err == nil {
		err = c.register()
	}
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	return c, nil
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
		connector.AddSendTool(c.srv, ToolSend, c.stream, sendArgs, connector.ToolOptions{
			Title:       "Send a Telegram Message",
			Description: "Send text, and optionally one file, to the Telegram chat bound to the current channel.",
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
