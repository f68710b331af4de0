package connector

import (
	"context"
	"sync"
	"time"

	"github.com/xconn/xconn/protocol"
)

// Binding is what a successful sign-in produces: the connector's target
// binding of one channel.
type Binding struct {
	// Data is the connector's opaque binding (tokens, cookies, account ids).
	// It is a secret: stored encrypted, never logged, never sent to xAgent.
	Data []byte
	// DisplayName is the display-level account name of the Descriptor.
	DisplayName string
	// AccountHint is a redacted account hint such as "0069***.bot".
	AccountHint string
	// Secrets lists values (tokens) that must never appear in logs, acks or
	// results; the SDK adds them to its redaction set and persists them
	// with the binding.
	Secrets []string

	// handoff is a client the sign-in handler built (Clients.With); only
	// attach uses it, and clone drops it.
	handoff *handoff
	// signedInAt is when the sign-in that produced the binding completed
	// (zero before it is stored); it survives restarts and UpdateBinding.
	signedInAt time.Time
}

// Input is the validated input of a form sign-in. It is read-only.
type Input struct {
	values map[string]string
}

// Get returns the value of a field ("" when absent).
func (in Input) Get(name string) string { return in.values[name] }

// Secret returns the value of a secret field. It is Get under a name that
// documents the intent; the SDK has already added the value to its
// redaction set.
func (in Input) Secret(name string) string { return in.values[name] }

// Has reports whether the field was given.
func (in Input) Has(name string) bool {
	_, ok := in.values[name]
	return ok
}

// AuthFlow is a sign-in flow registered with [Server.AddAuthFlow]: [Form]
// or [QR]. Flow values are immutable and safe for concurrent use.
type AuthFlow interface {
	flowType() string
}

// FormFunc signs a channel in from form input, already checked against the
// Card's fields (required, unknown, types). An error is reported as status
// failed with a secret-free message (a *protocol.Error message, else a
// generic one); a *protocol.Error with CodeInvalidAuthInput becomes an ack
// error instead.
type FormFunc func(ctx context.Context, ch *Channel, in Input) (Binding, error)

type formFlow struct{ fn FormFunc }

func (formFlow) flowType() string { return protocol.AuthFlowForm }

// Form returns a form sign-in flow.
func Form(fn FormFunc) AuthFlow { return formFlow{fn: fn} }

// QRSession is a live QR sign-in session handed to QRFlow callbacks.
type QRSession struct {
	// ID is the auth_session_id.
	ID string
	// Token is the SDK-issued unguessable token of the current QR code;
	// refresh issues a new one. Pass it to Server.AuthScanned,
	// Server.AuthComplete or Server.AuthFail.
	Token     string
	Channel   *Channel
	FlowID    string
	ExpiresAt time.Time

	data *qrData // see WithQRData
}

// qrData is a QR session's own state of its flow.
type qrData struct {
	mu sync.Mutex
	v  any
}

// WithQRData runs f, under a lock of the session, on the flow's own state
// of a QR sign-in session: a T, zero on first use (the target's QR id, the
// host to poll, how many codes were issued). The SDK keeps it as long as
// the session, within Options.MaxAuthSessions and AuthSessionTTL, and
// drops it with the session, so a flow keeps no table of its own. A
// session's Issue and Poll calls share it; a session outside the SDK (nil
// data) gets a fresh T each call.
func WithQRData[T any](s *QRSession, f func(*T)) {
	if s == nil || s.data == nil {
		f(new(T))
		return
	}
	s.data.mu.Lock()
	defer s.data.mu.Unlock()
	p, ok := s.data.v.(*T)
	if !ok {
		p = new(T)
		s.data.v = p
	}
	f(p)
}

// QRState is a state reported by QRFlow.Poll.
type QRState struct {
	// Status is pending, scanned, authenticated, failed, expired, or
	// qr_refresh_required when the target expired the code (the session
	// then waits for auth.status refresh=true, which issues a new code).
	Status protocol.AuthStatus
	// Binding is required when Status is authenticated.
	Binding *Binding
	// Message is a secret-free description.
	Message string
}

// QRFlow configures a QR sign-in flow.
type QRFlow struct {
	// Issue returns the QR text for a new or refreshed code; s.Token is the
	// SDK token of that code (put it in a login URL of your own web page).
	// nil makes the QR text the token itself.
	Issue func(ctx context.Context, s *QRSession) (string, error)
	// Poll, optional, is called on auth.status for connectors that poll
	// their target; connectors driven by their own web page use
	// Server.AuthScanned / AuthComplete / AuthFail instead.
	Poll func(ctx context.Context, s *QRSession) (QRState, error)
	// TTL is the lifetime of one QR code (default 2 min); after it the
	// status is qr_refresh_required until auth.status refresh=true.
	TTL time.Duration
	// PollInterval is the suggested polling interval (default 2 s).
	PollInterval time.Duration
	// ImageSize is the PNG size in pixels (default 256).
	ImageSize int
}

type qrFlow struct{ cfg QRFlow }

func (qrFlow) flowType() string { return protocol.AuthFlowQRLogin }

// QR returns a QR sign-in flow: the SDK issues the token, the QR text and a
// PNG data URL, handles expiry and refresh, and moves the session through
// pending, scanned and authenticated.
func QR(cfg QRFlow) AuthFlow {
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultQRTTL
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.ImageSize <= 0 {
		cfg.ImageSize = 256
	}
	return qrFlow{cfg: cfg}
}

// AuthInfo describes a sign-in session found by its QR token.
type AuthInfo struct {
	SessionID string
	ChannelID string
	FlowID    string
	Status    protocol.AuthStatus
	ExpiresAt time.Time
}
