package connector

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// Defaults of [Options].
const (
	DefaultLeaseGrace        = time.Hour
	DefaultMaxFrameBytes     = 1 << 20
	DefaultSendQueue         = 256
	DefaultWorkers           = 64
	DefaultChannelQueue      = 64
	DefaultMaxChannelQueues  = 1024
	DefaultMaxSockets        = 16
	DefaultToolTimeout       = 60 * time.Second
	DefaultAuthSessionTTL    = 10 * time.Minute
	DefaultMaxAuthSessions   = 1000
	DefaultQRTTL             = 2 * time.Minute
	DefaultPollInterval      = 2 * time.Second
	DefaultMaxUploadBytes    = 32 << 20
	DefaultFileTTL           = time.Hour
	DefaultSweepInterval     = time.Minute
	DefaultAckTimeout        = 30 * time.Second
	DefaultOutboxTTL         = time.Hour
	DefaultOutboxCapacity    = 1000
	DefaultToolCallRetention = 24 * time.Hour
	DefaultMaxToolCalls      = 10000
	DefaultCloseTimeout      = 10 * time.Second
	DefaultSendQueueBytes    = 16 << 20
	DefaultInboundQueueBytes = 16 << 20
	DefaultHelloTimeout      = 10 * time.Second
	DefaultUnsignedTTL       = 30 * time.Minute
	DefaultMaxConns          = 1024
	DefaultMaxAuthValueBytes = 16 << 10
	DefaultDedupeWindow      = delivery.DefaultHistoryAge
	DefaultDedupeHistory     = delivery.DefaultHistoryMax
)

// Options configures a [Server]. Identity (or a hand-written Card) is
// required, and Store or DataDir; every zero field takes its documented
// default. New copies what it needs: changing Options afterwards has no
// effect.
type Options struct {
	// Identity declares the connector; the SDK derives the Card from it and
	// from the registrations (see [Identity]). Set Identity or Card.
	Identity Identity
	// Card is a hand-written static Card, for advanced use, without the
	// connector_channel_id injection (tools registered with AddTool get it
	// at Start). Registered flows and tools are merged into it; empty
	// schema, protocol_version and build are filled in.
	// security.api_key_required is set from APIKey.
	Card *protocol.Card
	// Skill is the primary Skill (Markdown); nil serves 204 on /skill.md.
	// Without front matter the SDK adds one naming the primary Skill of
	// the card id (see [Identity]).
	Skill []byte
	// Store holds instances, channels, sign-in sessions, tool-call records,
	// channel state and files. nil opens the default SQLite store
	// "connector.db" in DataDir at Start (closed by Close); then DataDir is
	// required.
	Store store.ConnectorStore
	// Delivery stores the outbox and inbox of IM chat; nil uses Store when
	// it implements delivery.Storage, else a bounded in-memory storage.
	Delivery delivery.Storage
	// APIKey is the system API key checked (in constant time) on /health,
	// /ws, /files/uploads and /metrics; "" disables the check (Serve and
	// ListenAndServe then refuse a listener that is not on loopback). A key must have at least MinAPIKeyLength
	// bytes and MinAPIKeyDistinct distinct bytes, and no white space.
	APIKey string
	// PathPrefix mounts every endpoint under a prefix such as "/webchat".
	// "" serves at the root (and works behind http.StripPrefix).
	PathPrefix string
	// PublicURL, when set (e.g. "https://conn.example.com/webchat"), makes
	// inbound download_urls absolute; otherwise they are relative
	// ("<PathPrefix>/files/refs/<file_ref>?sig=...").
	PublicURL string
	// DataDir holds the transfer-plane file cache ("files/") and, when
	// Store is nil, the SQLite store and its key. "" uses a directory under
	// os.TempDir created at Start for the file cache (and then Store is
	// required).
	DataDir string
	// StoreDSN is the store Start opens when Store is nil ("sqlite:PATH"
	// or "postgres://..."; default "sqlite:<DataDir>/connector.db"); Close
	// closes it. Its secret key lives in DataDir.
	StoreDSN string
	// SigningKey (>= 32 bytes) signs download URLs and QR tokens; nil with
	// Store nil loads or creates DataDir/signing.key (mode 0600); nil with a
	// Store given makes a random key per process (URLs then die with the
	// process).
	SigningKey []byte
	// Logger receives the SDK's logs through a redacting handler; nil
	// uses slog.Default(), so that a consumer's failures and refused
	// bindings are never lost. Pass slog.New(slog.DiscardHandler) to
	// discard them.
	Logger *slog.Logger
	// TracerProvider receives the SDK's OpenTelemetry spans: each packet
	// handled (named after its type, continuing the trace the host put in
	// the envelope's x-traceparent), each chat.message sent, Publish, the
	// inbox and outbox commits, the control and transfer plane requests
	// and the requests of every TargetAPI. The trace context of a message
	// goes to the host in the envelope members x-traceparent and
	// x-tracestate (protocol.ExtTraceparent). nil (or a no-op provider) is
	// tracing off, at the cost of a nil check per packet. The SDK never
	// sets the global provider; the caller owns the provider's Shutdown.
	TracerProvider trace.TracerProvider

	// LeaseGrace is how long a connector_id survives without a
	// hello-completed socket (default 1 h).
	LeaseGrace time.Duration
	// MaxFrameBytes bounds one inbound frame (default 1 MiB).
	MaxFrameBytes int64
	// SendQueue bounds the outbound frames queued per socket (default 256).
	SendQueue int
	// SendQueueBytes bounds the bytes of the outbound frames queued per
	// socket and not yet written (default 16 MiB). A socket whose peer does
	// not read them is closed with 1008 and the reason "send queue full".
	SendQueueBytes int64
	// InboundQueueBytes bounds the bytes of the inbound frames queued per
	// socket and not yet handled (default 16 MiB); beyond it a request is
	// answered channel_busy at once. With SendQueueBytes and MaxFrameBytes
	// per worker it bounds what one socket holds, and MaxSockets times that
	// what the data plane holds.
	InboundQueueBytes int64
	// HelloTimeout bounds the time from the WebSocket handshake to a
	// completed connector.hello (default 10 s); a socket that has not
	// completed it is closed with 1008 and frees its slot.
	HelloTimeout time.Duration
	// Workers bounds the channels processed in parallel per socket
	// (default 64: a target with 20 ms latency then serves 64 channels at
	// ~3,200 calls/s). Pings and the connection-level control queue (hello,
	// busy answers) take no worker slot.
	Workers int
	// ChannelQueue bounds the packets queued per channel (default 64);
	// beyond it a request is answered with channel_busy.
	ChannelQueue int
	// MaxChannelQueues bounds the channels with queued work per socket
	// (default 1024).
	MaxChannelQueues int
	// MaxSockets bounds concurrent data-plane sockets (default 16); a slot
	// is reserved before the handshake, so concurrent dials never pass it.
	MaxSockets int
	// UnsignedChannelTTL is how long a channel without a sign-in (status
	// created or authenticating and no binding: opened and never signed
	// in, or signed out) is kept after its last change (default 30 min,
	// at least AuthSessionTTL). Then the janitor deletes it; a later
	// channel.open naming it creates a new channel (section 8.3).
	UnsignedChannelTTL time.Duration
	// MaxConns bounds the open HTTP connections of Serve and
	// ListenAndServe (default 1024): a new connection beyond it closes the
	// longest idle keep-alive connection, or is itself closed when none is
	// idle, so that /health keeps answering before the descriptor limit.
	MaxConns int
	// ToolTimeout is the default per-call tool timeout (default 60 s).
	ToolTimeout time.Duration
	// AuthSessionTTL bounds a sign-in session (default 10 min).
	AuthSessionTTL time.Duration
	// MaxAuthSessions bounds live sign-in sessions (default 1000).
	MaxAuthSessions int
	// MaxAuthValueBytes bounds one value of a sign-in form (default 16 KiB,
	// room for a pasted private key); a longer one is refused
	// invalid_auth_input before it is registered for redaction or reaches
	// the flow.
	MaxAuthValueBytes int
	// MaxUploadBytes bounds one uploaded file (default 32 MiB).
	MaxUploadBytes int64
	// FileTTL is the lifetime of a transfer-plane file (default 1 h).
	FileTTL time.Duration
	// SweepInterval is the period of the janitor that removes expired files,
	// sign-in sessions and tool-call records (default 1 min).
	SweepInterval time.Duration
	// AckTimeout bounds the wait for a chat.message.ack, and for the write
	// of an IM v1 message.push to the socket (default 30 s).
	AckTimeout time.Duration
	// OutboxTTL is the lifetime of a published message (default 1 h).
	OutboxTTL time.Duration
	// OutboxCapacity bounds pending published messages per channel
	// (default 1000; the oldest are evicted and recorded).
	OutboxCapacity int
	// DedupeWindow is how long Channel.Publish remembers a MessageID
	// after its message left the outbox (accepted, expired, evicted or
	// refused): within it, publishing the MessageID again is a no-op;
	// after it the id is forgotten and the same MessageID is published as
	// a new message (xAgent's inbox may still drop it as a duplicate, if
	// it remembers). Default 24 h. A remembered id is dropped at the
	// outbox's next sweep after the window (OutboxTTL/2 at most later).
	// Pick a window longer than the longest time the target may redeliver
	// an event (a poll offset lost in a crash, a webhook retried for
	// hours).
	DedupeWindow time.Duration
	// DedupeHistory bounds the remembered MessageIDs of the whole
	// connector, all channels together (default 10,000): a connector that
	// publishes more within DedupeWindow forgets the oldest first. It is
	// the same bound for the IM v1 message.push outbox.
	DedupeHistory int
	// ToolCallRetention and MaxToolCalls bound the idempotency records of
	// side-effecting tools (defaults 24 h and 10,000).
	ToolCallRetention time.Duration
	MaxToolCalls      int
	// CloseTimeout bounds the graceful part of Close (default 10 s).
	CloseTimeout time.Duration
}

// Limits of Options.APIKey.
const (
	MinAPIKeyLength   = 16
	MinAPIKeyDistinct = 8
)

func (o Options) withDefaults() (Options, error) {
	hasIdentity := o.Identity.CardID != "" || o.Identity.Name != "" || o.Identity.Provider != "" || o.Identity.TargetType != ""
	switch {
	case o.Card == nil && !hasIdentity:
		return o, errors.New("connector: Options.Identity (or a hand-written Options.Card) is required")
	case o.Card != nil && hasIdentity:
		return o, errors.New("connector: set Options.Identity or Options.Card, not both")
	case o.Card == nil:
		if err := o.Identity.check(); err != nil {
			return o, err
		}
	}
	if o.Store == nil && o.DataDir == "" {
		return o, errors.New("connector: Options.Store or Options.DataDir is required (DataDir opens the default SQLite store)")
	}
	if err := checkAPIKey(o.APIKey); err != nil {
		return o, err
	}
	setDur := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	setInt := func(n *int, def int) {
		if *n <= 0 {
			*n = def
		}
	}
	setDur(&o.LeaseGrace, DefaultLeaseGrace)
	if o.MaxFrameBytes <= 0 {
		o.MaxFrameBytes = DefaultMaxFrameBytes
	}
	setInt(&o.SendQueue, DefaultSendQueue)
	setInt(&o.Workers, DefaultWorkers)
	setInt(&o.ChannelQueue, DefaultChannelQueue)
	setInt(&o.MaxChannelQueues, DefaultMaxChannelQueues)
	setInt(&o.MaxSockets, DefaultMaxSockets)
	setDur(&o.ToolTimeout, DefaultToolTimeout)
	setDur(&o.AuthSessionTTL, DefaultAuthSessionTTL)
	setInt(&o.MaxAuthSessions, DefaultMaxAuthSessions)
	if o.MaxUploadBytes <= 0 {
		o.MaxUploadBytes = DefaultMaxUploadBytes
	}
	setDur(&o.FileTTL, DefaultFileTTL)
	setDur(&o.SweepInterval, DefaultSweepInterval)
	setDur(&o.AckTimeout, DefaultAckTimeout)
	setDur(&o.OutboxTTL, DefaultOutboxTTL)
	setInt(&o.OutboxCapacity, DefaultOutboxCapacity)
	setDur(&o.DedupeWindow, DefaultDedupeWindow)
	setInt(&o.DedupeHistory, DefaultDedupeHistory)
	setDur(&o.ToolCallRetention, DefaultToolCallRetention)
	setInt(&o.MaxToolCalls, DefaultMaxToolCalls)
	setDur(&o.CloseTimeout, DefaultCloseTimeout)
	if o.SendQueueBytes <= 0 {
		o.SendQueueBytes = DefaultSendQueueBytes
	}
	if o.InboundQueueBytes <= 0 {
		o.InboundQueueBytes = DefaultInboundQueueBytes
	}
	setDur(&o.HelloTimeout, DefaultHelloTimeout)
	setDur(&o.UnsignedChannelTTL, DefaultUnsignedTTL)
	o.UnsignedChannelTTL = max(o.UnsignedChannelTTL, o.AuthSessionTTL)
	setInt(&o.MaxConns, DefaultMaxConns)
	setInt(&o.MaxAuthValueBytes, DefaultMaxAuthValueBytes)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// checkAPIKey refuses a weak system API key with a message that never
// quotes it.
func checkAPIKey(k string) error {
	if k == "" {
		return nil
	}
	distinct := map[byte]bool{}
	for i := 0; i < len(k); i++ {
		if k[i] <= ' ' || k[i] == 0x7f {
			return errors.New("connector: the system API key must not contain white space or control characters")
		}
		distinct[k[i]] = true
	}
	if len(k) < MinAPIKeyLength || len(distinct) < MinAPIKeyDistinct {
		return fmt.Errorf("connector: the system API key is too weak: use at least %d characters with at least %d different ones (for example `openssl rand -hex 24`)",
			MinAPIKeyLength, MinAPIKeyDistinct)
	}
	return nil
}
