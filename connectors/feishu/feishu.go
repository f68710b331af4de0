package feishu

import (
	"context"
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

// Identity of the Feishu connector.
const (
	// CardID is the connector_card_id.
	CardID = "im.feishu"
	// Provider is the target provider.
	Provider = "feishu"
	// SkillName is the primary Skill.
	SkillName = "connector-im-feishu"
	// FlowApp is the form sign-in flow: an app's app_id and app_secret.
	FlowApp = "feishu_app_binding"
	// FlowQR is the QR one-click app registration flow (qr_login).
	FlowQR = "feishu_qr_create_app"
	// ToolSend is the send tool.
	ToolSend = "feishu_message_send"
	// ConnectorVersion is the Card's connector.version.
	ConnectorVersion = "1.0.1"
	// DefaultAPIURL is the Feishu Open Platform (Lark:
	// https://open.larksuite.com).
	DefaultAPIURL = "https://open.feishu.cn"
	// DefaultAccountsURL is the accounts host of the QR app registration
	// (Lark: https://accounts.larksuite.com).
	DefaultAccountsURL = "https://accounts.feishu.cn"
	// LarkAPIURL and LarkAccountsURL are Lark's hosts (fact sheet §2.1).
	LarkAPIURL      = "https://open.larksuite.com"
	LarkAccountsURL = "https://accounts.larksuite.com"
	// EventsLongConn delivers events over the app's long connection (the
	// default); EventsWebhook has Feishu POST them to WebhookPath.
	EventsLongConn = "longconn"
	EventsWebhook  = "webhook"
	// WebhookPath is the event callback endpoint of webhook mode.
	WebhookPath = "/feishu/events"
)

// Defaults of Options.
const (
	DefaultRequestTimeout = 30 * time.Second
	DefaultMaxRetryWait   = 10 * time.Second
	// DefaultEditInterval is the least time between two edits of a
	// streamed message (Feishu allows 5 QPS per chat, §8).
	DefaultEditInterval = time.Second
	// DefaultMaxFileBytes bounds one inbound file (Feishu serves up to
	// 100 MB, §6.7; the SDK's upload limit is lower).
	DefaultMaxFileBytes = 30 << 20
	DefaultMaxStreams   = 256
	DefaultStreamTTL    = 10 * time.Minute
	// MaxStreamEdits is the edits a stream may use: Feishu allows 20 per
	// message (§6.3); one is kept for the final.
	MaxStreamEdits = 19
	// MaxTextBytes is the longest text sent as one message (Feishu's text
	// limit is 150 KB of request body, §6.1); longer texts are split.
	MaxTextBytes = 100 << 10
)

//go:embed SKILL.md
var skillMD []byte

// Skill returns a copy of the connector's primary Skill (Markdown).
func Skill() []byte { return append([]byte(nil), skillMD...) }

var identity = connector.Identity{
	CardID:            CardID,
	Name:              "xconn Feishu",
	Version:           ConnectorVersion,
	Vendor:            "xconn",
	Description:       "A Feishu (Lark) bot app: direct and group chats, files both ways, streamed replies edited in place.",
	TargetType:        protocol.TargetIM,
	Provider:          Provider,
	Label:             "Feishu",
	TargetDescription: "Feishu chats reached through one self-built bot app.",
	UserChannelMode:   "single",
	TrustLevel:        protocol.TrustThirdParty,
	DataClasses:       []string{"message", "image", "file"},
}

// Options configures the Feishu connector. SDK.Store or SDK.DataDir is
// required; every zero field takes its documented default.
type Options struct {
	// SDK configures the Connector Server. New sets its Identity and Skill.
	SDK connector.Options
	// APIURL is the Open Platform (default DefaultAPIURL; Lark
	// https://open.larksuite.com; a fake in tests). The long connection's
	// bootstrap is served there too.
	APIURL string
	// AccountsURL is the accounts host of the QR registration (default
	// DefaultAccountsURL).
	AccountsURL string
	// Transport, when set, replaces the HTTP transport.
	Transport http.RoundTripper
	// RequestTimeout bounds one API request (default 30 s).
	RequestTimeout time.Duration
	// MaxRetryWait is the longest x-ogw-ratelimit-reset waited out inside
	// one call (default 10 s); a longer one fails the call as retryable.
	MaxRetryWait time.Duration
	// EditInterval is the least time between two edits of a streamed
	// message (default 1 s).
	EditInterval time.Duration
	// MaxFileBytes bounds one inbound file (default 30 MiB); a larger
	// one is named in the text instead.
	MaxFileBytes int64
	// MaxStreams and StreamTTL bound the streamed messages being edited
	// (defaults 256 and 10 min).
	MaxStreams int
	StreamTTL  time.Duration
	// Events is how Feishu delivers events: EventsLongConn ("" too) or
	// EventsWebhook.
	Events string
	// VerificationToken is the app's Verification Token (webhook mode):
	// events and URL verifications carrying another token are refused.
	// Empty skips the check.
	VerificationToken string
	// EncryptKey is the app's Encrypt Key (webhook mode): encrypted
	// bodies are decrypted with it and every signed request's
	// X-Lark-Signature is checked. Empty accepts only plaintext events.
	EncryptKey string
	// AppName is the name of apps created by feishu_qr_create_app
	// (default DefaultRegistrationName).
	AppName string
	// QRTTL is one registration code's lifetime (default DefaultQRTTL).
	QRTTL time.Duration
}

// Connector is the Feishu connector: an SDK Connector Server whose
// channels are each bound to one Feishu app. Create it with New and run
// Server. Safe for concurrent use.
type Connector struct {
	srv          *connector.Server
	api          *openAPI
	apps         *connector.Consumers[string, binding]
	clients      *connector.Clients[binding, *appClient]
	log          *slog.Logger
	editInterval time.Duration
	maxFileBytes int64
	streams      *streams
	// accounts is the accounts host of the QR registration.
	accounts string
	// events is EventsLongConn or EventsWebhook; verifyToken and
	// encryptKey configure the webhook.
	events      string
	verifyToken string
	encryptKey  string
	// appName and regs serve the QR app registration.
	appName string
	qrTTL   time.Duration
	// webhookSlots bounds the webhook requests handled at once.
	webhookSlots chan struct{}
}

// New builds the Feishu connector on the SDK: the feishu_app_binding
// form, the per-channel client, one long connection per app_id, the send
// tool and the IM v2 handlers.
func New(opts Options) (*Connector, error) {
	base := strings.TrimRight(opts.APIURL, "/")
	if base == "" {
		base = DefaultAPIURL
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("feishu: Options.APIURL must be an absolute http(s) URL, got %q", opts.APIURL)
	}
	accounts := strings.TrimRight(opts.AccountsURL, "/")
	if accounts == "" {
		accounts = DefaultAccountsURL
	}
	if u, err := url.Parse(accounts); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("feishu: Options.AccountsURL must be an absolute http(s) URL, got %q", opts.AccountsURL)
	}
	switch opts.Events {
	case "", EventsLongConn:
		opts.Events = EventsLongConn
	case EventsWebhook:
	default:
		return nil, fmt.Errorf("feishu: Options.Events must be %q or %q, got %q", EventsLongConn, EventsWebhook, opts.Events)
	}
	tr := opts.Transport
	if tr == nil {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	sdk := opts.SDK
	sdk.Identity, sdk.Card, sdk.Skill = identity, nil, Skill()
	srv, err := connector.New(sdk)
	if err != nil {
		return nil, fmt.Errorf("feishu: %w", err)
	}
	c := &Connector{
		srv: srv,
		api: &openAPI{base: base, timeout: or(opts.RequestTimeout, DefaultRequestTimeout), maxRetryWait: or(opts.MaxRetryWait, DefaultMaxRetryWait),
			hc:     &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
			tokens: map[string]cachedToken{}, redact: srv.Redact},
		log:          srv.Logger(),
		editInterval: or(opts.EditInterval, DefaultEditInterval),
		maxFileBytes: opts.MaxFileBytes,
		streams:      newStreams(opts.MaxStreams, opts.StreamTTL),
		accounts:     accounts,
		events:       opts.Events,
		verifyToken:  opts.VerificationToken,
		encryptKey:   opts.EncryptKey,
		appName:      opts.AppName,
		qrTTL:        or(opts.QRTTL, DefaultQRTTL),
		webhookSlots: make(chan struct{}, maxWebhookInFlight),
	}
	if c.appName == "" {
		c.appName = DefaultRegistrationName
	}
	if c.maxFileBytes <= 0 {
		c.maxFileBytes = DefaultMaxFileBytes
	}
	if err := c.register(); err != nil {
		return nil, fmt.Errorf("feishu: %w", err)
	}
	return c, nil
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (c *Connector) register() error {
	// One consumer per app_id: the long connection, or in webhook mode
	// only the routing from an event's app_id to its channel.
	run, errHook := c.runLongConn, error(nil)
	if c.events == EventsWebhook {
		run = nil
		errHook = c.srv.Handle("POST "+WebhookPath, http.HandlerFunc(c.webhook))
	}
	var errApps, errClients error
	c.clients, errClients = connector.SetClient(c.srv, c.newClient)
	c.apps, errApps = connector.AddConsumer(c.srv, connector.Consumer[string, binding]{
		Key:         func(b binding) string { return b.AppID },
		Run:         run,
		MaxChannels: 1, // one channel ↔ one app
	})
	errs := []error{
		errApps, errHook,
		connector.AddForm(c.srv, FlowApp, c.signIn, connector.FlowOptions{Title: "Bind a Feishu App", Default: true,
			Description: "The App ID and App Secret of a self-built Feishu app with the bot capability and the im.message.receive_v1 event on the long connection."}),
		connector.AddQR(c.srv, FlowQR, connector.QROptions[binding]{
			FlowOptions: connector.FlowOptions{Title: "Create a Feishu App by QR code",
				Description: "Scan the code with the Feishu app and confirm: Feishu creates a bot app with the scopes and the message event this connector needs, and binds it."},
			Issue: c.issueQR, Poll: c.pollQR, TTL: c.qrTTL, PollInterval: 2 * time.Second}),
		errClients,
		connector.AddTool(c.srv, ToolSend, c.sendTool, connector.ToolOptions{
			Title:       "Send a Feishu Message",
			Description: "Send text, and optionally one file, to the channel's default Feishu chat (the latest direct chat with the bot).",
			Profile:     protocol.ProfileIMv2,
			SideEffect:  true,
		}),
	}
	c.srv.OnAssistantMessage(c.onMessage)
	c.srv.OnAssistantDelta(c.onDelta)
	c.srv.OnClose(func(context.Context) error { c.api.hc.CloseIdleConnections(); return nil })
	return errors.Join(errs...)
}

// Server returns the SDK server: the Connector Server endpoints at the
// root (the Base URL for xAgent).
func (c *Connector) Server() *connector.Server { return c.srv }
