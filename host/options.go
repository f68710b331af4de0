package host

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// Defaults of [Options]. Every bound of the host has one.
const (
	// DefaultHealthInterval is the period of the /health probe.
	DefaultHealthInterval = 30 * time.Second
	// DefaultHTTPTimeout bounds one control-plane or transfer-plane HTTP request.
	DefaultHTTPTimeout = 30 * time.Second
	// DefaultRequestTimeout bounds the wait for the ack of one data-plane request.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultToolTimeout bounds the wait for a tool.invoke.ack.
	DefaultToolTimeout = 2 * time.Minute
	// DefaultReconnectMin is the first reconnect delay; it doubles per failure.
	DefaultReconnectMin = 500 * time.Millisecond
	// DefaultReconnectMax caps the reconnect delay.
	DefaultReconnectMax = 30 * time.Second
	// DefaultMaxReconnectFailures is the number of consecutive failed
	// connection attempts after which reconnecting stops until [Host.Recover].
	DefaultMaxReconnectFailures = 20
	// DefaultMaxInFlight bounds the requests awaiting an ack on one socket.
	DefaultMaxInFlight = 1024
	// DefaultMaxCardBytes bounds a fetched Card, Skill or health body.
	DefaultMaxCardBytes = 1 << 20
	// DefaultMaxFileBytes bounds one downloaded inbound file.
	DefaultMaxFileBytes = 32 << 20
	// DefaultMaxFilesPerMessage bounds the files of one chat.message.
	DefaultMaxFilesPerMessage = 32
	// DefaultInboundQueue bounds the pushes waiting for dispatch on one socket
	// and the chat messages waiting in one channel's queue.
	DefaultInboundQueue = 256
	// DefaultMaxChannelWorkers bounds the channels processed at once per socket.
	DefaultMaxChannelWorkers = 1024
	// DefaultPollInterval is used when a connector gives no poll_interval_millis.
	DefaultPollInterval = 2 * time.Second
	// MinPollInterval and MaxPollInterval clamp poll_interval_millis.
	MinPollInterval = 50 * time.Millisecond
	MaxPollInterval = 30 * time.Second
	// DefaultSigninTimeout bounds one sign-in from Connect to a terminal state.
	DefaultSigninTimeout = 10 * time.Minute
	// DefaultMaxSignins bounds the sign-ins running at once.
	DefaultMaxSignins = 1000
	// DefaultFileRetention is how long downloaded inbound files are kept in
	// FilesDir before the host deletes them.
	DefaultFileRetention = 24 * time.Hour
	// DefaultMaxCachedChannels bounds the user channels the host keeps
	// decoded in memory for tool resolution and inbound routing (about
	// 1 KiB each); least recently used users are dropped beyond it.
	DefaultMaxCachedChannels = 20_000
	// DefaultMaxFileRefs bounds the unified file_refs the host keeps (see
	// [Host.LookupFile]); the least recently used are forgotten first.
	DefaultMaxFileRefs = 10_000
	// DefaultMaxFileRefBytes bounds the bytes of the files those refs name.
	DefaultMaxFileRefBytes = 2 << 30
	// DefaultOutboxQueue is the delivery queue name of the host's assistant finals.
	DefaultOutboxQueue = "host"
)

// DefaultSupportedProfiles are the Profiles the host announces in
// connector.hello when [Options.SupportedProfiles] is empty.
func DefaultSupportedProfiles() []protocol.Profile {
	return []protocol.Profile{protocol.ProfileIMv2, protocol.ProfileIMv1, protocol.ProfileDeviceV1}
}

// Governance decides whether a user may see and call one tool of one
// connector in one session. It runs for [Host.Tools] and [Host.Invoke] and
// must be safe for concurrent use.
type Governance func(ctx context.Context, userID, sessionID, cardID string, tool *protocol.Tool) bool

// PacketObserver sees every data-plane packet the host sends (dir
// protocol.ToConnector) or receives (protocol.ToHost) on the socket of
// connector cardID. It runs on the host's goroutines, must return quickly and
// must not modify env. Payloads may hold secrets (auth.start form input):
// log types and identifiers, not payloads.
type PacketObserver func(dir protocol.Direction, cardID string, env *protocol.Envelope)

// Options configures a [Host]. Store is required; every other zero field
// takes its documented default.
type Options struct {
	// Store holds the catalog and the user channels (required). *store.DB
	// implements it.
	Store store.HostStore
	// Delivery holds the outbox of assistant finals and the inbox of
	// received chat messages. *store.DB implements it; nil uses a bounded
	// in-memory storage (finals then do not survive a restart).
	Delivery delivery.Storage
	// Agent receives user messages (IM v2 chat.message and IM v1
	// message.push). nil acknowledges messages without handing them on.
	Agent Agent
	// Governance filters tools; nil allows every tool.
	Governance Governance
	// OnPacket observes every data-plane packet; nil observes nothing.
	OnPacket PacketObserver
	// OnEvent observes state changes (health, link, channels, tool progress).
	// It runs on the host's goroutines and must return quickly.
	OnEvent func(Event)
	// TracerProvider receives the host's OpenTelemetry spans: each packet
	// handled (named after its type, continuing the trace the connector
	// put in the envelope's x-traceparent), each request sent, the Agent's
	// finals (outbox commit and send, with the trace context injected) and
	// the inbox commits. An Agent continues the trace from the context it
	// is handed. nil (or a no-op provider) is tracing off. The host never
	// sets the global provider; the caller owns the provider's Shutdown.
	TracerProvider trace.TracerProvider
	// Logger receives the host's logs; nil discards them. The host never
	// logs API keys, form input or tokens itself; in production wrap the
	// handler with connector.NewRedactingHandler and a connector.Redactor,
	// the SDK's public redaction (the host does not import package
	// connector; the embedder's main may), and set OnSecret to the
	// Redactor's Add:
	//
	//	secrets := connector.NewRedactor(0)
	//	opts.Logger = slog.New(connector.NewRedactingHandler(handler, secrets))
	//	opts.OnSecret = secrets.Add
	Logger *slog.Logger
	// OnSecret receives every secret value the host handles, as it learns
	// it: the system API key of each admitted connector (at Admit and at
	// Start) and the form input of the auth-flow fields the Card marks
	// secret (at Connect and Reauthenticate). Give it a redactor's Add so
	// that these values are scrubbed from every log line, including the
	// embedder's. It must be safe for concurrent use; nil ignores them.
	OnSecret func(values ...string)
	// HTTPClient makes control-plane and transfer-plane requests; nil uses a
	// client with HTTPTimeout.
	HTTPClient *http.Client
	// SupportedProfiles are announced in connector.hello (default
	// [DefaultSupportedProfiles]).
	SupportedProfiles []protocol.Profile
	// FilesDir receives downloaded inbound files. "" creates a temporary
	// directory that Close removes.
	FilesDir string
	// DownloadOrigins, when set, restricts the origins (scheme://host[:port])
	// from which the host downloads a download_url (of an inbound
	// chat.message or message.push file, or of a file in a tool result) to
	// these and the connector's own Base URL origin; redirects are held to
	// the same rule, and a refusal fails the file with file_download_failed
	// (not retryable). Empty (the default) or [AnyDownloadOrigin] ("*")
	// allows any origin: IM v2 sections 3 and 5.3 let a connector hand out
	// signed or one-time URLs of a CDN or an object store. Either way an
	// origin other than the connector's own is fetched from public
	// addresses only (see AllowPrivateDownloads).
	DownloadOrigins []string
	// AllowPrivateDownloads lets a download_url of another origin than
	// the connector's reach private networks: loopback, private (RFC
	// 1918, site-local), unique-local, link-local and shared (CGNAT,
	// 100.64/10) addresses. By default they are refused, as an SSRF guard
	// that does not depend on the origin: the check runs on the addresses
	// a name resolves to, at connect time (a name that resolves
	// differently a second time cannot slip through) and again on every
	// redirect, and fails the file with file_download_failed (not
	// retryable) naming the address and its class. Cloud-metadata,
	// multicast, broadcast, unspecified and reserved addresses are
	// refused even with it. Such downloads connect directly, without the
	// HTTPClient's proxy. The connector's own Base URL origin, which the
	// administrator configured, is never checked. Set it for a
	// deployment whose file servers live on its own network, and in tests
	// on loopback.
	AllowPrivateDownloads bool

	HealthInterval       time.Duration // default DefaultHealthInterval
	HTTPTimeout          time.Duration // default DefaultHTTPTimeout
	RequestTimeout       time.Duration // default DefaultRequestTimeout
	ToolTimeout          time.Duration // default DefaultToolTimeout
	ReconnectMin         time.Duration // default DefaultReconnectMin
	ReconnectMax         time.Duration // default DefaultReconnectMax
	MaxReconnectFailures int           // default DefaultMaxReconnectFailures
	MaxInFlight          int           // default DefaultMaxInFlight
	MaxCardBytes         int64         // default DefaultMaxCardBytes
	MaxFileBytes         int64         // default DefaultMaxFileBytes
	MaxFilesPerMessage   int           // default DefaultMaxFilesPerMessage
	InboundQueue         int           // default DefaultInboundQueue
	MaxChannelWorkers    int           // default DefaultMaxChannelWorkers
	SigninTimeout        time.Duration // default DefaultSigninTimeout
	MaxSignins           int           // default DefaultMaxSignins
	// MaxCachedChannels bounds the read-through cache of user channels
	// (default DefaultMaxCachedChannels): at most this many channels, plus
	// one slot per user, are held; a user with more channels than that is
	// read from the store on every call.
	MaxCachedChannels int
	// MaxFileRefs and MaxFileRefBytes bound the unified file_refs the host
	// keeps in memory for its users' files (default DefaultMaxFileRefs and
	// DefaultMaxFileRefBytes): in entries, and in the bytes of the files
	// they name. Beyond either, the least recently used refs are forgotten
	// (their files stay until FileRetention).
	MaxFileRefs     int
	MaxFileRefBytes int64
	// NoBuiltinTools leaves the built-in channel tools ([ToolChannelsList],
	// [ToolMessageSend]) out of [Host.Tools] and [Host.Invoke].
	NoBuiltinTools bool
	// FileRetention bounds the age of downloaded files in FilesDir (default
	// DefaultFileRetention); older ones are deleted as new files arrive.
	FileRetention time.Duration
	// Outbox tunes the outbox of assistant finals (TTL, capacity, backoff).
	// Storage, Queue (default DefaultOutboxQueue) and Send are set by the host.
	Outbox delivery.OutboxOptions
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.HealthInterval, DefaultHealthInterval)
	def(&o.HTTPTimeout, DefaultHTTPTimeout)
	def(&o.RequestTimeout, DefaultRequestTimeout)
	def(&o.ToolTimeout, DefaultToolTimeout)
	def(&o.ReconnectMin, DefaultReconnectMin)
	def(&o.ReconnectMax, DefaultReconnectMax)
	def(&o.SigninTimeout, DefaultSigninTimeout)
	def(&o.FileRetention, DefaultFileRetention)
	defInt(&o.MaxSignins, DefaultMaxSignins)
	defInt(&o.MaxCachedChannels, DefaultMaxCachedChannels)
	defInt(&o.MaxFileRefs, DefaultMaxFileRefs)
	if o.MaxFileRefBytes <= 0 {
		o.MaxFileRefBytes = DefaultMaxFileRefBytes
	}
	if o.ReconnectMax < o.ReconnectMin {
		o.ReconnectMax = o.ReconnectMin
	}
	defInt(&o.MaxReconnectFailures, DefaultMaxReconnectFailures)
	defInt(&o.MaxInFlight, DefaultMaxInFlight)
	defInt(&o.MaxFilesPerMessage, DefaultMaxFilesPerMessage)
	defInt(&o.InboundQueue, DefaultInboundQueue)
	defInt(&o.MaxChannelWorkers, DefaultMaxChannelWorkers)
	if o.MaxCardBytes <= 0 {
		o.MaxCardBytes = DefaultMaxCardBytes
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if len(o.SupportedProfiles) == 0 {
		o.SupportedProfiles = DefaultSupportedProfiles()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: o.HTTPTimeout}
	}
	if o.Outbox.Queue == "" {
		o.Outbox.Queue = DefaultOutboxQueue
	}
	return o
}
