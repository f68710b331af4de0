package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/internal/qr"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// Limits and defaults.
const (
	// MinTokenLen is the shortest operator token accepted.
	MinTokenLen = 16
	// DefaultMaxErrors is the size of the recent-error ring.
	DefaultMaxErrors = 50
	// DefaultMaxClients bounds the event streams served at once.
	DefaultMaxClients = 8
	// StreamLifetime ends an event stream; the browser's EventSource
	// opens a new one (and is authenticated again).
	StreamLifetime = 10 * time.Minute
	// SessionTTL is the lifetime of a login cookie.
	SessionTTL = 12 * time.Hour
	// maxErrorText bounds one recorded error text.
	maxErrorText = 300
	// maxTracked bounds the per-channel records (last message times) and
	// the tracked sign-ins.
	maxTracked = 4096
	// maxQRImage bounds a connector's QR image data URL shown as is.
	maxQRImage = 256 << 10
	// queueCount is how far a channel's outbox is counted.
	queueCount = 100
)

// Options configures an [Admin].
type Options struct {
	// Host is the host shown. Required.
	Host *host.Host
	// Token is the operator token, at least MinTokenLen characters.
	Token string
	// Version is the program's version, shown in the header.
	Version string
	// Redact scrubs a text before it is recorded (the host's
	// connector.Redactor Scrub, which knows the API keys and form
	// input); nil keeps texts as they are (the host's own are
	// secret-free).
	Redact func(string) string
	// MaxErrors is the size of the recent-error ring (default
	// DefaultMaxErrors).
	MaxErrors int
	// MaxClients bounds the event streams served at once (default
	// DefaultMaxClients); one more is refused with 503.
	MaxClients int
	// Refresh is how often an open stream re-reads the host for changes
	// that raise no event (queue depths, a sign-in's QR); default 1 s.
	Refresh time.Duration
	// Logger receives the page's own logs (refused logins, streams
	// refused); nil discards them.
	Logger *slog.Logger
}

// Admin is the operator page of one host. Its hooks are safe for
// concurrent use; it runs no goroutine of its own.
type Admin struct {
	h      *host.Host
	opts   Options
	key    []byte // the token, as the session HMAC key
	log    *slog.Logger
	start  time.Time
	closed chan struct{}
	once   sync.Once

	mu      sync.Mutex
	gen     chan struct{} // closed and replaced at each change
	errs    []ErrorEntry  // ring of opts.MaxErrors
	errNext int
	errN    int
	last    map[string]*channelTimes // by card_id + "\x00" + connector_channel_id
	signins []*host.Signin
	clients int
	qrCache [2]string // QR text and its rendered data URL
}

type channelTimes struct{ in, out time.Time }

// New returns the page of o.Host. It fails when the token is shorter than
// MinTokenLen.
func New(o Options) (*Admin, error) {
	if o.Host == nil {
		return nil, errors.New("admin: Options.Host is required")
	}
	if len(o.Token) < MinTokenLen {
		return nil, fmt.Errorf("admin: the token has %d characters, at least %d are required", len(o.Token), MinTokenLen)
	}
	if strings.TrimSpace(o.Token) != o.Token {
		return nil, errors.New("admin: the token starts or ends with white space")
	}
	if o.MaxErrors <= 0 {
		o.MaxErrors = DefaultMaxErrors
	}
	if o.MaxClients <= 0 {
		o.MaxClients = DefaultMaxClients
	}
	if o.Refresh <= 0 {
		o.Refresh = time.Second
	}
	if o.Redact == nil {
		o.Redact = func(s string) string { return s }
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Admin{h: o.Host, opts: o, key: []byte(o.Token), log: log, start: time.Now(),
		closed: make(chan struct{}), gen: make(chan struct{}), errs: make([]ErrorEntry, o.MaxErrors),
		last: make(map[string]*channelTimes)}, nil
}

// Close ends the open event streams; the page answers no new ones. It is
// idempotent.
func (a *Admin) Close() {
	a.once.Do(func() { close(a.closed) })
}

// changed wakes the open event streams.
func (a *Admin) changed() {
	a.mu.Lock()
	close(a.gen)
	a.gen = make(chan struct{})
	a.mu.Unlock()
}

func (a *Admin) generation() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gen
}

// OnEvent takes a host event (host.Options.OnEvent): failures go to the
// recent errors, and every event wakes the open streams.
func (a *Admin) OnEvent(ev host.Event) {
	var msg string
	switch ev.Kind {
	case host.EventHealth:
		if ev.Health != host.HealthOK && ev.Health != host.HealthUnknown {
			msg = "health " + string(ev.Health) + " " + ev.Detail
		}
	case host.EventLink:
		if ev.Link == host.LinkBackoff || ev.Link == host.LinkStopped {
			msg = "data plane " + string(ev.Link) + " " + ev.Detail
		}
	case host.EventPushFailed:
		msg = "message.push failed " + ev.Detail
	case host.EventDescriptorIgnored:
		msg = "descriptor ignored " + ev.Detail
	case host.EventDelivery: // Detail: "message_id kind code"
		if f := strings.Fields(ev.Detail); len(f) < 2 || f[1] != string(delivery.OutcomeDelivered) {
			msg = "final not delivered: " + ev.Detail
		}
	}
	if msg != "" {
		a.record(ev.At, "host", ev.CardID, msg)
	}
	a.changed()
}

// OnPacket takes a data-plane packet (host.Options.OnPacket) and records
// the time of each chat message in and out of a channel.
func (a *Admin) OnPacket(dir protocol.Direction, cardID string, env *protocol.Envelope) {
	if env == nil || env.Type != protocol.TypeChatMessage || env.ConnectorChannelID == "" {
		return
	}
	k := cardID + "\x00" + env.ConnectorChannelID
	now := time.Now()
	a.mu.Lock()
	t := a.last[k]
	if t == nil {
		if len(a.last) >= maxTracked {
			a.mu.Unlock()
			return
		}
		t = &channelTimes{}
		a.last[k] = t
	}
	if dir == protocol.ToHost {
		t.in = now
	} else {
		t.out = now
	}
	a.mu.Unlock()
	a.changed()
}

// TrackSignin shows s on the page until it is done: its status, and its
// QR code while it waits for a scan. It does not read s.Updates (that is
// its owner's): the page reads s.State, and open streams see a change at
// their next refresh.
func (a *Admin) TrackSignin(s *host.Signin) {
	if s == nil {
		return
	}
	a.mu.Lock()
	a.signins = slices.DeleteFunc(a.signins, func(t *host.Signin) bool {
		select {
		case <-t.Done():
			return true
		default:
			return false
		}
	})
	if len(a.signins) < maxTracked {
		a.signins = append(a.signins, s)
	}
	a.mu.Unlock()
	a.changed()
}

// RecordError adds a failure to the recent errors, scrubbed and cut to a
// bounded length. source names the component ("host", "connector", the
// card id…).
func (a *Admin) RecordError(source, text string) {
	a.record(time.Now(), source, "", text)
	a.changed()
}

func (a *Admin) record(at time.Time, source, cardID, text string) {
	if at.IsZero() {
		at = time.Now()
	}
	text = cut(a.opts.Redact(strings.TrimSpace(text)), maxErrorText)
	a.mu.Lock()
	a.errs[a.errNext] = ErrorEntry{At: at, Source: source, CardID: cardID, Text: text}
	a.errNext = (a.errNext + 1) % len(a.errs)
	a.errN = min(a.errN+1, len(a.errs))
	a.mu.Unlock()
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// Snapshot is what the page shows at one moment.
type Snapshot struct {
	At         time.Time       `json:"at"`
	Version    string          `json:"version,omitempty"`
	Uptime     string          `json:"uptime"`
	Connectors []ConnectorView `json:"connectors"`
	Channels   []ChannelView   `json:"channels"`
	Outbox     OutboxView      `json:"outbox"`
	Errors     []ErrorEntry    `json:"errors"`
}

// ConnectorView is one admitted connector.
type ConnectorView struct {
	CardID       string   `json:"card_id"`
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	Protocol     string   `json:"protocol_version"`
	ConnectorID  string   `json:"connector_id,omitempty"`
	BaseURL      string   `json:"base_url"`
	Health       string   `json:"health"`
	Link         string   `json:"link"`
	Profiles     []string `json:"profiles"`
	LastError    string   `json:"last_error,omitempty"`
	FailedPushes int64    `json:"failed_pushes,omitempty"`
}

// Channel states shown; a Descriptor status not listed here is shown as
// it is.
const (
	StateSignedIn  = "signed in"
	StateWaitingQR = "waiting for QR scan"
	StateSigningIn = "signing in"
	StateExpired   = "expired"
	StateRevoked   = "revoked"
	StateSignedOut = "signed out"
)

// ChannelView is one user channel, or a first sign-in that has no channel
// record yet (ID empty).
type ChannelView struct {
	ID        string `json:"user_channel_id,omitempty"`
	UserID    string `json:"user_id"`
	CardID    string `json:"card_id"`
	ChannelID string `json:"connector_channel_id,omitempty"`
	// State is one of the State constants (or the Descriptor's status).
	State string `json:"state"`
	// Status is the Descriptor's connection.status, or the sign-in's.
	Status string `json:"status"`
	Label  string `json:"label,omitempty"`
	// QRImage is a data:image/png URL while the channel waits for a
	// QR scan.
	QRImage      string    `json:"qr_image,omitempty"`
	QRExpiresAt  time.Time `json:"qr_expires_at,omitzero"`
	Inbound      int       `json:"inbound_queue"`
	Outbox       int       `json:"outbox_queue"`
	OutboxCapped bool      `json:"outbox_capped,omitempty"`
	LastIn       time.Time `json:"last_in,omitzero"`
	LastOut      time.Time `json:"last_out,omitzero"`
}

// OutboxView is the host's outbox of assistant finals.
type OutboxView struct {
	Pending     int    `json:"pending"`
	Deliveries  int64  `json:"deliveries"`
	Failures    int64  `json:"failures"`
	Expirations int64  `json:"expirations"`
	LastError   string `json:"last_error,omitempty"`
}

// ErrorEntry is one recent error.
type ErrorEntry struct {
	At     time.Time `json:"at"`
	Source string    `json:"source"`
	CardID string    `json:"card_id,omitempty"`
	Text   string    `json:"text"`
}

// Snapshot reads the host's state now. A part the host cannot read is
// left out and noted in Errors' first entry.
func (a *Admin) Snapshot(ctx context.Context) Snapshot {
	now := time.Now()
	s := Snapshot{At: now, Version: a.opts.Version, Uptime: now.Sub(a.start).Round(time.Second).String()}
	var problems []string
	for _, c := range a.h.Connectors() {
		v := ConnectorView{CardID: c.CardID, ConnectorID: c.ConnectorID, BaseURL: displayURL(c.BaseURL),
			Health: string(c.Health), Link: string(c.Link), LastError: cut(a.opts.Redact(c.LastError), maxErrorText),
			FailedPushes: c.FailedPushes}
		if c.Card != nil {
			v.Name, v.Version, v.Protocol = c.Card.Connector.Name, c.Card.Connector.Version, c.Card.ProtocolVersion
		}
		for _, p := range c.Profiles {
			v.Profiles = append(v.Profiles, string(p))
		}
		s.Connectors = append(s.Connectors, v)
	}
	ucs, err := a.h.Channels(ctx, "", "")
	if err != nil {
		problems = append(problems, "channels: "+err.Error())
	}
	a.mu.Lock()
	signins := slices.Clone(a.signins)
	a.mu.Unlock()
	pending := map[string]host.SigninState{} // by connector_channel_id
	for _, si := range signins {
		st := si.State()
		if !st.Done {
			pending[st.ChannelID] = st
		}
	}
	seen := map[string]bool{}
	for _, uc := range ucs {
		v := a.channelView(ctx, uc)
		if st, ok := pending[uc.ChannelID]; ok {
			a.signinInto(&v, st)
			seen[uc.ChannelID] = true
		}
		s.Channels = append(s.Channels, v)
	}
	for _, si := range signins { // first sign-ins: no channel record yet
		st := si.State()
		if st.Done || seen[st.ChannelID] {
			continue
		}
		seen[st.ChannelID] = true
		v := ChannelView{ChannelID: st.ChannelID, UserID: si.UserID(), CardID: si.CardID()}
		a.signinInto(&v, st)
		s.Channels = append(s.Channels, v)
	}
	if st, err := a.h.OutboxStats(ctx); err == nil {
		s.Outbox = OutboxView{Pending: st.Pending, Deliveries: st.Deliveries, Failures: st.Failures,
			Expirations: st.Expirations, LastError: cut(a.opts.Redact(st.LastError), maxErrorText)}
	} else {
		problems = append(problems, "outbox: "+err.Error())
	}
	a.mu.Lock()
	for i := range a.errN { // newest first
		s.Errors = append(s.Errors, a.errs[(a.errNext-1-i+2*len(a.errs))%len(a.errs)])
	}
	a.mu.Unlock()
	if len(problems) > 0 {
		e := ErrorEntry{At: now, Source: "admin", Text: cut(a.opts.Redact(strings.Join(problems, "; ")), maxErrorText)}
		s.Errors = append([]ErrorEntry{e}, s.Errors...)
	}
	return s
}

func (a *Admin) channelView(ctx context.Context, uc store.UserChannel) ChannelView {
	v := ChannelView{ID: uc.ID, UserID: uc.UserID, CardID: uc.CardID, ChannelID: uc.ChannelID}
	var d protocol.Descriptor
	if json.Unmarshal(uc.Descriptor, &d) == nil {
		v.Status = d.Connection.Status
		v.Label = d.Target.DisplayName
		if v.Label == "" {
			v.Label = d.Target.Label
		}
	}
	switch {
	case v.Status == protocol.StatusExpired:
		v.State = StateExpired
	case v.Status == protocol.StatusRevoked:
		v.State = StateRevoked
	case !uc.Authenticated:
		v.State = StateSignedOut
	case v.Status == protocol.StatusConnected || v.Status == protocol.StatusCreated || v.Status == "":
		v.State = StateSignedIn
	default:
		v.State = v.Status // degraded, offline, error, authenticating
	}
	if q, err := a.h.ChannelQueue(ctx, uc.ID, queueCount); err == nil || errors.Is(err, errors.ErrUnsupported) {
		v.Inbound, v.Outbox, v.OutboxCapped = q.Inbound, q.Outbox, q.OutboxCapped
	}
	a.mu.Lock()
	if t := a.last[uc.CardID+"\x00"+uc.ChannelID]; t != nil {
		v.LastIn, v.LastOut = t.in, t.out
	}
	a.mu.Unlock()
	return v
}

// signinInto shows a running sign-in on v.
func (a *Admin) signinInto(v *ChannelView, st host.SigninState) {
	v.Status = string(st.Status)
	v.State = StateSigningIn
	img := a.qrImage(st)
	if img != "" && (st.Status == protocol.AuthPending || st.Status == protocol.AuthQRRefreshRequired) {
		v.State, v.QRImage, v.QRExpiresAt = StateWaitingQR, img, st.ExpiresAt
	}
}

// qrImage returns the QR of a sign-in as a PNG data URL: the connector's
// image when it is one, else rendered from the QR text. "" when neither.
func (a *Admin) qrImage(st host.SigninState) string {
	if strings.HasPrefix(st.QRCodeImage, "data:image/png;base64,") && len(st.QRCodeImage) <= maxQRImage {
		return st.QRCodeImage
	}
	if st.QRCodeText == "" {
		return ""
	}
	a.mu.Lock()
	if a.qrCache[0] == st.QRCodeText {
		defer a.mu.Unlock()
		return a.qrCache[1]
	}
	a.mu.Unlock()
	img, err := qr.PNGDataURL(st.QRCodeText, 0)
	if err != nil {
		return ""
	}
	a.mu.Lock()
	a.qrCache = [2]string{st.QRCodeText, img}
	a.mu.Unlock()
	return img
}

// displayURL is a base URL without userinfo, query or fragment.
func displayURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	u.User, u.RawQuery, u.Fragment, u.RawFragment, u.ForceQuery = nil, "", "", "", false
	return u.String()
}
