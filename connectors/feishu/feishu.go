package feishu

import (
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
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

// Defaults and limits of Options; the stream's and the Open Platform
// client's are the SDK's (connector.DefaultEditInterval,
// DefaultMaxStreams, DefaultStreamTTL, DefaultRequestTimeout,
// DefaultMaxRetryWait).
const (
	// DefaultMaxFileBytes bounds one inbound file (Feishu serves up to
	// 100 MB, §6.7; the SDK's upload limit is lower).
	DefaultMaxFileBytes = 30 << 20
	// MaxStreamEdits is the edits a stream's deltas may use: Feishu allows
	// 20 per message (§6.3); one is kept for the final.
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
	// MaxFileBytes bounds one inbound file (default 30 MiB); a larger
	// one is named in the text instead.
	MaxFileBytes int64

	// Streamed replies: EditInterval is the least time between two edits
	// of a streamed message (default 1 s; Feishu allows 5 QPS per chat,
	// §8); MaxStreams and StreamTTL bound the streamed messages being
	// edited (defaults 256 and 10 min), and the final of a stream dropped
	// from them still edits its message, found in the channel's durable
	// record.
	EditInterval time.Duration
	MaxStreams   int
	StreamTTL    time.Duration

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
	srv *connector.Server
	// The SDK's handles of the Open Platform side: the REST client, the
	// long connections (one per app), the channels' clients and the
	// replies' stream.
	api          *openAPI
	apps         *connector.Consumers[string, binding]
	clients      *connector.Clients[binding, *appClient]
	stream       *connector.EditStream[string]
	log          *slog.Logger
	maxFileBytes int64
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
	switch opts.Events {
	case "", EventsLongConn:
		opts.Events = EventsLongConn
	case EventsWebhook:
	default:
		return nil, fmt.Errorf("feishu: Options.Events must be %q or %q, got %q", EventsLongConn, EventsWebhook, opts.Events)
	}
	sdk := opts.SDK
	sdk.Identity, sdk.Card, sdk.Skill = identity, nil, Skill()
	srv, err := connector.New(sdk)
	if err != nil {
		return nil, fmt.Errorf("feishu: %w", err)
	}
	api, err := srv.TargetAPI(connector.TargetAPIOptions{BaseURL: opts.APIURL, DefaultURL: DefaultAPIURL, Field: "Options.APIURL",
		Transport: opts.Transport, Timeout: opts.RequestTimeout, MaxRetryWait: opts.MaxRetryWait})
	if err != nil {
		return nil, fmt.Errorf("feishu: %w", err)
	}
	accounts, err := srv.TargetAPI(connector.TargetAPIOptions{BaseURL: opts.AccountsURL, DefaultURL: DefaultAccountsURL,
		Field: "Options.AccountsURL", Transport: api.Client.Transport})
	if err != nil {
		return nil, fmt.Errorf("feishu: %w", err)
	}
	c := &Connector{
		srv: srv,
		// Wait out one frequency limit (x-ogw-ratelimit-reset) per call.
		api: &openAPI{base: api.BaseURL, hc: api.Client, timeout: api.Timeout,
			rl: connector.RateLimit{MaxWait: api.RateLimit.MaxWait, Attempts: 2}, tokens: map[string]cachedToken{}, redact: srv.Redact},
		log:          srv.Logger(),
		maxFileBytes: cmp.Or(max(opts.MaxFileBytes, 0), DefaultMaxFileBytes),
		accounts:     accounts.BaseURL,
		events:       opts.Events,
		verifyToken:  opts.VerificationToken,
		encryptKey:   opts.EncryptKey,
		appName:      cmp.Or(opts.AppName, DefaultRegistrationName),
		qrTTL:        cmp.Or(max(opts.QRTTL, 0), DefaultQRTTL),
		webhookSlots: make(chan struct{}, maxWebhookInFlight),
	}
	// Replies go through the SDK's EditStream, to where the message they
	// answer was written: the text (edited into the streamed message when
	// there is one; split beyond MaxTextBytes), then each file. Every call
	// carries a Feishu uuid (idempotent for an hour, §6.1), which covers a
	// crash between a send and its record.
	c.stream, err = connector.NewEditStream(connector.EditStreamOptions[string]{
		Send: c.streamSend, Edit: c.streamEdit, SendFile: c.streamFile, Classify: c.deliveryError,
		Limit: textLimit, MaxEdits: MaxStreamEdits + 1, Interval: opts.EditInterval, MaxStreams: opts.MaxStreams, TTL: opts.StreamTTL})
	if err == nil {
		err = c.register()
	}
	if err != nil {
		return nil, fmt.Errorf("feishu: %w", err)
	}
	return c, nil
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
		connector.AddSendTool(c.srv, ToolSend, c.stream, sendArgs, connector.ToolOptions{
			Title:       "Send a Feishu Message",
			Description: "Send text, and optionally one file, to the channel's default Feishu chat (the latest direct chat with the bot).",
			Profile:     protocol.ProfileIMv2,
			SideEffect:  true,
		}),
	}
	c.srv.OnAssistantMessage(c.stream.Final)
	c.srv.OnAssistantDelta(c.stream.Delta)
	return errors.Join(errs...)
}

// Server returns the SDK server: the Connector Server endpoints at the
// root (the Base URL for xAgent).
func (c *Connector) Server() *connector.Server { return c.srv }
