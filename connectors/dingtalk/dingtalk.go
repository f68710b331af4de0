package dingtalk

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Identity of the DingTalk connector.
const (
	// CardID is the connector_card_id.
	CardID = "im.dingtalk"
	// Provider is the target provider.
	Provider = "dingtalk"
	// SkillName is the primary Skill.
	SkillName = "connector-im-dingtalk"
	// FlowApp is the form sign-in flow: an app's Client ID and Secret.
	FlowApp = "dingtalk_app_binding"
	// ToolSend is the send tool.
	ToolSend = "dingtalk_message_send"
	// ConnectorVersion is the Card's connector.version.
	ConnectorVersion = "1.0.0"
	// DefaultAPIURL is the new Open Platform host (access token, Stream
	// registration, robot and card APIs).
	DefaultAPIURL = "https://api.dingtalk.com"
	// DefaultOAPIURL is the old API host (media upload; session webhooks
	// are served there).
	DefaultOAPIURL = "https://oapi.dingtalk.com"
)

// Defaults and limits of Options.
const (
	// DefaultMaxFileBytes bounds one inbound file.
	DefaultMaxFileBytes = 30 << 20
	// MaxTextRunes is the longest text sent as one message; longer texts
	// are split. DingTalk documents no limit for robot text; 5000
	// characters is what it accepted in community reports (README,
	// unknowns), and a card keeps the same bound.
	MaxTextRunes = 5000
	// DefaultCardContentKey is the streamed variable of the AI card
	// template (the official AI card template's "content").
	DefaultCardContentKey = "content"
)

//go:embed SKILL.md
var skillMD []byte

// Skill returns a copy of the connector's primary Skill (Markdown).
func Skill() []byte { return append([]byte(nil), skillMD...) }

var identity = connector.Identity{
	CardID:            CardID,
	Name:              "xconn DingTalk",
	Version:           ConnectorVersion,
	Vendor:            "xconn",
	Description:       "A DingTalk app robot over Stream mode: 1:1 and group chats, files both ways, replies streamed into an AI card.",
	TargetType:        protocol.TargetIM,
	Provider:          Provider,
	Label:             "DingTalk",
	TargetDescription: "DingTalk chats reached through one app robot.",
	UserChannelMode:   "single",
	TrustLevel:        protocol.TrustThirdParty,
	DataClasses:       []string{"message", "image", "file"},
}

// Options configures the DingTalk connector. SDK.Store or SDK.DataDir is
// required; every zero field takes its documented default.
type Options struct {
	// SDK configures the Connector Server. New sets its Identity and Skill.
	SDK connector.Options
	// APIURL is the new Open Platform host (default DefaultAPIURL; a fake
	// in tests). The Stream registration is served there.
	APIURL string
	// OAPIURL is the old API host (default DefaultOAPIURL): media upload.
	// A session webhook is used only when it is on this host.
	OAPIURL string
	// Proxy is the proxy of every request and of the Stream connection
	// (http, https, socks5; "" uses HTTPS_PROXY and friends).
	Proxy string
	// Transport, when set, replaces the HTTP transport (Proxy is then
	// ignored).
	Transport http.RoundTripper
	// RequestTimeout bounds one API request (default 30 s).
	RequestTimeout time.Duration
	// MaxRetryWait is the longest rate-limit wait inside one call
	// (default 10 s).
	MaxRetryWait time.Duration
	// MaxFileBytes bounds one inbound file (default 30 MiB); a larger one
	// is named in the text instead.
	MaxFileBytes int64
	// CardTemplateID, when set, streams replies into an AI card of this
	// template (createAndDeliver, then PUT /v1.0/card/streaming);
	// CardContentKey is its streamed variable (default "content"). Empty
	// sends each answer once, complete.
	CardTemplateID string
	CardContentKey string
	// Streamed replies: EditInterval is the least time between two card
	// updates (default 1 s); MaxStreams and StreamTTL bound the cards
	// being streamed (defaults 256 and 10 min).
	EditInterval time.Duration
	MaxStreams   int
	StreamTTL    time.Duration
	// PingInterval is how often the Stream connection is checked with a
	// WebSocket ping (default 30 s); a ping unanswered within
	// PingInterval ends the connection, which is then opened anew.
	PingInterval time.Duration
}

// Connector is the DingTalk connector: an SDK Connector Server whose
// channels are each bound to one DingTalk app. Create it with New and run
// Server. Safe for concurrent use.
type Connector struct {
	srv          *connector.Server
	api          *openAPI
	apps         *connector.Consumers[string, binding]
	clients      *connector.Clients[binding, *appClient]
	stream       *connector.EditStream[string]
	log          *slog.Logger
	maxFileBytes int64
	cardTemplate string
	cardKey      string
	pingInterval time.Duration
}

// New builds the DingTalk connector on the SDK: the dingtalk_app_binding
// form, the per-channel client, one Stream connection per Client ID, the
// send tool and the IM v2 handlers.
func New(opts Options) (*Connector, error) {
	sdk := opts.SDK
	sdk.Identity, sdk.Card, sdk.Skill = identity, nil, Skill()
	srv, err := connector.New(sdk)
	if err != nil {
		return nil, fmt.Errorf("dingtalk: %w", err)
	}
	api, err := srv.TargetAPI(connector.TargetAPIOptions{BaseURL: opts.APIURL, DefaultURL: DefaultAPIURL, Field: "Options.APIURL",
		Proxy: opts.Proxy, Transport: opts.Transport, Timeout: opts.RequestTimeout, MaxRetryWait: opts.MaxRetryWait})
	if err != nil {
		return nil, fmt.Errorf("dingtalk: %w", err)
	}
	oapi, err := srv.TargetAPI(connector.TargetAPIOptions{BaseURL: opts.OAPIURL, DefaultURL: DefaultOAPIURL,
		Field: "Options.OAPIURL", Transport: api.Client.Transport, Timeout: opts.RequestTimeout})
	if err != nil {
		return nil, fmt.Errorf("dingtalk: %w", err)
	}
	c := &Connector{
		srv: srv,
		api: &openAPI{base: api.BaseURL, oapi: oapi.BaseURL, hc: api.Client, timeout: api.Timeout,
			rl: connector.RateLimit{MaxWait: api.RateLimit.MaxWait, Attempts: 2}, tokens: map[string]cachedToken{}, redact: srv.Redact},
		log:          srv.Logger(),
		maxFileBytes: cmp.Or(max(opts.MaxFileBytes, 0), DefaultMaxFileBytes),
		cardTemplate: opts.CardTemplateID,
		cardKey:      cmp.Or(opts.CardContentKey, DefaultCardContentKey),
		pingInterval: cmp.Or(max(opts.PingInterval, 0), 30*time.Second),
	}
	// Replies go through the SDK's EditStream: the text (into an AI card
	// when streamed, split beyond MaxTextRunes), then each file.
	c.stream, err = connector.NewEditStream(connector.EditStreamOptions[string]{
		Send: c.streamSend, Edit: c.streamEdit, SendFile: c.streamFile, Classify: c.deliveryError,
		Limit: textLimit, Interval: opts.EditInterval, MaxStreams: opts.MaxStreams, TTL: opts.StreamTTL})
	if err == nil {
		err = c.register()
	}
	if err != nil {
		return nil, fmt.Errorf("dingtalk: %w", err)
	}
	return c, nil
}

func (c *Connector) register() error {
	var errApps, errClients error
	c.clients, errClients = connector.SetClient(c.srv, c.newClient)
	c.apps, errApps = connector.AddConsumer(c.srv, connector.Consumer[string, binding]{
		Key:         func(b binding) string { return b.ClientID },
		Run:         c.runStream,
		MaxChannels: 1, // one channel ↔ one app
	})
	errs := []error{
		errApps, errClients,
		connector.AddForm(c.srv, FlowApp, c.signIn, connector.FlowOptions{Title: "Bind a DingTalk App Robot", Default: true,
			Description: "The Client ID (AppKey) and Client Secret of a DingTalk app with the robot capability in Stream mode; the robot code when it differs from the Client ID."}),
		connector.AddSendTool(c.srv, ToolSend, c.stream, sendArgs, connector.ToolOptions{
			Title:       "Send a DingTalk Message",
			Description: "Send text, and optionally one file, to the channel's default DingTalk conversation (the latest 1:1 chat with the robot).",
			Profile:     protocol.ProfileIMv2,
			SideEffect:  true,
		}),
	}
	c.srv.OnAssistantMessage(func(ctx context.Context, ch *connector.Channel, m *connector.AssistantMessage) error {
		return c.stream.Final(context.WithValue(ctx, finalKey{}, true), ch, m)
	})
	if c.cardTemplate != "" {
		// Deltas stream into an AI card; without a template DingTalk has
		// no message a robot can edit, so only the final is sent.
		c.srv.OnAssistantDelta(c.stream.Delta)
	}
	return errors.Join(errs...)
}

// finalKey marks the context of a final, so that the card update that
// carries it finalizes the card.
type finalKey struct{}

func isFinal(ctx context.Context) bool { v, _ := ctx.Value(finalKey{}).(bool); return v }

// Server returns the SDK server: the Connector Server endpoints at the
// root (the Base URL for xAgent).
func (c *Connector) Server() *connector.Server { return c.srv }
