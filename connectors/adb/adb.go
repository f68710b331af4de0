package adb

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/xconn/xconn/connector"
	adbc "github.com/xconn/xconn/connectors/adb/adbhost"
	"github.com/xconn/xconn/protocol"
)

// Identity of the Android connector (spec §4.1 and §4.2, Device Profile v1 §2).
const (
	// CardID is the connector_card_id.
	CardID = "device.adb"
	// Provider is the target provider.
	Provider = "adb"
	// Label is the target's display label.
	Label = "Android Device"
	// SkillName is the primary Skill.
	SkillName = "connector-device-adb"
	// FlowBinding is the form sign-in flow: the serial of an attached,
	// authorised device.
	FlowBinding = "adb_device_binding"
	// ConnectorVersion is the Card's connector.version; raise it whenever
	// the tools, the flow or the Skill change.
	ConnectorVersion = "1.0.0"
	// DefaultADBAddr is where the ADB server listens by default.
	DefaultADBAddr = adbc.DefaultAddr
)

// Tool ids.
const (
	ToolStatus     = "android_device_status"
	ToolScreenshot = "android_screenshot"
	ToolUIDump     = "android_ui_dump"
	ToolTap        = "android_tap"
	ToolSwipe      = "android_swipe"
	ToolTextInput  = "android_text_input"
	ToolKey        = "android_key"
	ToolAppLaunch  = "android_app_launch"
)

// Defaults and limits of Options; README.md lists them with their reasons.
const (
	// DefaultCommandTimeout bounds one device command (getprop, input,
	// pm, monkey, uiautomator). Past it a call fails with
	// connector.CodeDeviceCommandTimeout.
	DefaultCommandTimeout = 20 * time.Second
	// DefaultScreenshotTimeout bounds one screencap.
	DefaultScreenshotTimeout = 30 * time.Second
	// DefaultPollInterval is how often the device list is read to keep
	// every channel's Descriptor current.
	DefaultPollInterval = 2 * time.Second
	// DefaultDisconnectGrace is how long a device may be missing from the
	// list (a USB re-enumeration, a cable wiggle) before its channels are
	// marked offline; calls made meanwhile still fail with device_offline.
	DefaultDisconnectGrace = 3 * time.Second
	// DefaultScreenshotTTL is how long a screenshot's download_url lives.
	DefaultScreenshotTTL = 10 * time.Minute
	// DefaultMaxScreenshots bounds the live screenshots of one channel;
	// the oldest is deleted when another is taken.
	DefaultMaxScreenshots = 16
	// MaxScreenshotBytes bounds one PNG (a 4K screen is about 10 MB).
	MaxScreenshotBytes = 24 << 20
	// MaxUIXMLBytes bounds the raw accessibility dump read from the device.
	MaxUIXMLBytes = 4 << 20
	// MaxUINodes bounds the nodes android_ui_dump returns.
	MaxUINodes = 300
	// MaxUITextRunes bounds each text or description it returns.
	MaxUITextRunes = 200
	// MaxTextInput bounds android_text_input's text, in characters.
	MaxTextInput = 500
	// MaxCommandOutput bounds the output read from any other command.
	MaxCommandOutput = 1 << 20
)

// skillMD is the primary Skill, served at /skill.md.
//
//go:embed SKILL.md
var skillMD []byte

// Skill returns a copy of the connector's primary Skill (Markdown).
func Skill() []byte { return append([]byte(nil), skillMD...) }

var identity = connector.Identity{
	CardID:            CardID,
	Name:              "xconn Android Device",
	Version:           ConnectorVersion,
	Vendor:            "xconn",
	Description:       "One Android phone or emulator per channel over the ADB server: status, screenshots and the accessibility tree to observe; taps, swipes, text, keys and app launches to act.",
	TargetType:        protocol.TargetDevice,
	Provider:          Provider,
	Label:             Label,
	TargetDescription: "An Android device attached to the ADB server of the connector's machine, by USB or adb connect.",
	TrustLevel:        protocol.TrustLocal,
	DataClasses:       []string{"device_state", "image", "screen_content"},
}

// Options configures the Android connector. SDK.Store or SDK.DataDir is
// required; every zero field takes its documented default.
type Options struct {
	// SDK configures the Connector Server (Store or DataDir, APIKey,
	// Logger, PublicURL, bounds). New sets its Identity and Skill.
	SDK connector.Options
	// ADBAddr is the ADB server, host:port (default 127.0.0.1:5037).
	ADBAddr string
	// CommandTimeout and ScreenshotTimeout bound one device command and
	// one screencap (defaults 20 s and 30 s). Keep them below
	// SDK.ToolTimeout (60 s) so a slow device reports
	// device_command_timeout rather than the SDK's tool_timeout.
	CommandTimeout    time.Duration
	ScreenshotTimeout time.Duration
	// PollInterval is how often the device list is read (default 2 s).
	PollInterval time.Duration
	// DisconnectGrace is how long a missing device stays "connected"
	// (default 3 s; negative: none).
	DisconnectGrace time.Duration
	// ScreenshotTTL and MaxScreenshots bound the screenshot cache of a
	// channel (defaults 10 min and 16; the TTL is at most SDK.FileTTL).
	ScreenshotTTL  time.Duration
	MaxScreenshots int
}

// Connector is the Android connector: an SDK Connector Server whose
// channels are each bound to one Android device of one ADB server. Create
// it with New and run Server (Server().ListenAndServe or Serve, or Start,
// ServeHTTP and Close). Safe for concurrent use.
type Connector struct {
	srv         *connector.Server
	adb         *adbc.Client
	log         *slog.Logger
	cmdTimeout  time.Duration
	shotTimeout time.Duration
	poll        time.Duration
	grace       time.Duration
	shotTTL     time.Duration
	maxShots    int
	devices     *connector.Consumers[string, binding]
	clients     *connector.Clients[binding, *device]
}

// New builds the Android connector on the SDK: the adb_device_binding
// form, the per-channel device client, one device watcher per serial and
// the eight tools.
func New(opts Options) (*Connector, error) {
	client, err := adbc.New(opts.ADBAddr)
	if err != nil {
		return nil, fmt.Errorf("adb: Options.ADBAddr: %w", err)
	}
	sdk := opts.SDK
	sdk.Identity, sdk.Card, sdk.Skill = identity, nil, Skill()
	srv, err := connector.New(sdk)
	if err != nil {
		return nil, fmt.Errorf("adb: %w", err)
	}
	c := &Connector{
		srv:         srv,
		adb:         client,
		log:         srv.Logger(),
		cmdTimeout:  or(opts.CommandTimeout, DefaultCommandTimeout),
		shotTimeout: or(opts.ScreenshotTimeout, DefaultScreenshotTimeout),
		poll:        or(opts.PollInterval, DefaultPollInterval),
		grace:       or(opts.DisconnectGrace, DefaultDisconnectGrace),
		shotTTL:     or(opts.ScreenshotTTL, DefaultScreenshotTTL),
		maxShots:    opts.MaxScreenshots,
	}
	if opts.DisconnectGrace < 0 {
		c.grace = 0
	}
	if c.maxShots <= 0 {
		c.maxShots = DefaultMaxScreenshots
	}
	if err := c.register(); err != nil {
		return nil, fmt.Errorf("adb: %w", err)
	}
	return c, nil
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// register adds the flow, the client, the watcher and the tools.
func (c *Connector) register() error {
	var errWatch, errClients error
	c.clients, errClients = connector.SetClient(c.srv, c.newClient)
	c.devices, errWatch = connector.AddConsumer(c.srv, connector.Consumer[string, binding]{
		Key: func(b binding) string { return b.Serial },
		Run: c.watch,
		// A device is exclusive to one channel: two channels acting on
		// one phone would race each other's taps.
		MaxChannels: 1,
	})
	errs := []error{
		errWatch,
		connector.AddForm(c.srv, FlowBinding, c.signIn, connector.FlowOptions{Title: "Bind an Android Device", Default: true,
			Description: "The serial of a device that `adb devices` lists as \"device\" on the connector's machine."}),
		errClients,
	}
	errs = append(errs, c.registerTools()...)
	return errors.Join(errs...)
}

// Server returns the SDK server: the Connector Server endpoints at the
// root (the Base URL for xAgent).
func (c *Connector) Server() *connector.Server { return c.srv }

// ADBAddr returns the ADB server address.
func (c *Connector) ADBAddr() string { return c.adb.Addr() }

// cmdCtx bounds one device command.
func (c *Connector) cmdCtx(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}
