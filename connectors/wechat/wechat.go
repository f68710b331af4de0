package wechat

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Identity of the connector, its flow and tool.
const (
	CardID   = "im.wechat"
	FlowQR   = "wechat_qr_login"
	ToolSend = "wechat_message_send"
	// SkillName is the primary Skill the SDK derives from CardID.
	SkillName = "connector-im-wechat"
)

// Defaults of Options (fact sheet §1, §5, §7, §10, §12).
const (
	DefaultAPIURL         = "https://ilinkai.weixin.qq.com"
	DefaultCDNURL         = "https://novac2c.cdn.weixin.qq.com/c2c"
	DefaultQRPollTimeout  = 5 * time.Second
	DefaultLongPoll       = 35 * time.Second
	DefaultTypingInterval = 5 * time.Second
	DefaultTypingTimeout  = 3 * time.Minute
	DefaultMaxMediaBytes  = 32 << 20
	// MaxQRRefreshes is how many times an expired QR code is replaced
	// before the sign-in fails.
	MaxQRRefreshes = 3
	// callTimeout bounds getconfig, sendtyping and notify*; sendTimeout
	// sendmessage and getuploadurl; cdnTimeout one CDN transfer.
	callTimeout = 10 * time.Second
	sendTimeout = 15 * time.Second
	cdnTimeout  = 30 * time.Second
)

//go:embed SKILL.md
var skillMD []byte

// Options configures a Connector.
type Options struct {
	// SDK configures the Connector Server (store, data directory, API key,
	// logger, limits). Identity, Card and Skill are set by New.
	SDK connector.Options
	// APIURL is the iLink login host and the default API base
	// (DefaultAPIURL). A per-account base URL from the sign-in replaces
	// it for the bot calls. A redirect host during sign-in is reached with
	// APIURL's scheme (https, or http for a local fake).
	APIURL string
	// CDNURL is the media CDN base (DefaultCDNURL).
	CDNURL string
	// HTTPClient makes every iLink and CDN call; nil makes one whose idle
	// connections are closed with the server.
	HTTPClient *http.Client
	// QRTTL is one QR code's lifetime on the xAgent side
	// (connector.DefaultQRTTL); QRPollInterval the suggested auth.status
	// interval (connector.DefaultPollInterval); QRPollTimeout bounds one
	// get_qrcode_status call, after which the code counts as still
	// waiting (DefaultQRPollTimeout).
	QRTTL          time.Duration
	QRPollInterval time.Duration
	QRPollTimeout  time.Duration
	// LongPoll is the getupdates timeout until the server names one
	// (DefaultLongPoll).
	LongPoll time.Duration
	// TypingInterval is the typing keepalive (DefaultTypingInterval);
	// TypingTimeout ends a typing indicator nobody cancelled
	// (DefaultTypingTimeout).
	TypingInterval time.Duration
	TypingTimeout  time.Duration
	// RetryDelay is the wait after a failed getupdates (default 2 s);
	// after 3 failures in a row the loop waits RetryBackoff (default 30 s).
	RetryDelay   time.Duration
	RetryBackoff time.Duration
	// MaxMediaBytes bounds one media file downloaded from or uploaded to
	// the CDN (DefaultMaxMediaBytes).
	MaxMediaBytes int64
}

// Connector is the WeChat connector: a connector.Server for the iLink bot
// API. Make one with New, start and serve its Server.
type Connector struct {
	srv     *connector.Server
	clients *connector.Clients[Binding, *Client]
	opts    Options
	hc      *http.Client
}

// New builds the connector and registers its flow, client, consumer, tool
// and IM handlers on a new connector.Server.
func New(opts Options) (*Connector, error) {
	opts.APIURL = strings.TrimRight(orStr(opts.APIURL, DefaultAPIURL), "/")
	opts.CDNURL = strings.TrimRight(orStr(opts.CDNURL, DefaultCDNURL), "/")
	for _, u := range []string{opts.APIURL, opts.CDNURL} {
		if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
			return nil, fmt.Errorf("wechat: %q is not an http(s) URL", u)
		}
	}
	opts.QRPollTimeout = orDur(opts.QRPollTimeout, DefaultQRPollTimeout)
	opts.LongPoll = orDur(opts.LongPoll, DefaultLongPoll)
	opts.TypingInterval = orDur(opts.TypingInterval, DefaultTypingInterval)
	opts.TypingTimeout = orDur(opts.TypingTimeout, DefaultTypingTimeout)
	opts.RetryDelay = orDur(opts.RetryDelay, 2*time.Second)
	opts.RetryBackoff = orDur(opts.RetryBackoff, 30*time.Second)
	if opts.MaxMediaBytes <= 0 {
		opts.MaxMediaBytes = DefaultMaxMediaBytes
	}
	c := &Connector{opts: opts, hc: opts.HTTPClient}
	ownClient := c.hc == nil
	if ownClient {
		c.hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	sdk := opts.SDK
	sdk.Card = nil
	sdk.Skill = skillMD
	sdk.Identity = connector.Identity{CardID: CardID, Name: "WeChat", Provider: "wechat", Label: "WeChat",
		TargetType: protocol.TargetIM, Version: "1.0.1",
		Description:       "An agent in WeChat through a personal bot account (iLink bot API).",
		TargetDescription: "WeChat 1:1 conversations of an iLink bot account, signed in by QR code."}
	srv, err := connector.New(sdk)
	if err != nil {
		return nil, err
	}
	c.srv = srv
	var errClients error
	c.clients, errClients = connector.SetClient(srv, c.newClient)
	err = errors.Join(
		connector.AddQR(srv, FlowQR, connector.QROptions[Binding]{
			FlowOptions: connector.FlowOptions{Title: "Sign in to WeChat", Default: true,
				Description: "Scan the QR code with WeChat on your phone and confirm to connect your bot account."},
			Issue: c.issueQR, Poll: c.pollQR, TTL: opts.QRTTL, PollInterval: opts.QRPollInterval}),
		errClients,
		c.addConsumer(),
		connector.AddTool(srv, ToolSend, c.toolSend, connector.ToolOptions{Title: "Send a WeChat message",
			Description: "Send text, and optionally one file, to the person in the current WeChat conversation " +
				"(the sender of the latest message, else the account's owner).",
			SideEffect: true, Profile: protocol.ProfileIMv2}),
	)
	if err != nil {
		return nil, err
	}
	srv.OnAssistantMessage(c.onMessage)
	srv.OnActivity(c.onActivity)
	if ownClient {
		srv.OnClose(func(context.Context) error { c.hc.CloseIdleConnections(); return nil })
	}
	return c, nil
}

// Server returns the connector's SDK server (an http.Handler).
func (c *Connector) Server() *connector.Server { return c.srv }

// agent is base_info.bot_agent.
func (c *Connector) agent() string { return "xconn/" + connector.BuildInfo().Version }

func orStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orDur(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
