// Package sdkfixture is the SDK's own test fixture: an in-process connector
// on package connector that exercises every part of the SDK (typed and raw
// tools, form and QR sign-in, IM v2 handlers, files, progress, secrets in
// errors) behind an httptest server, with a recording fake target. It is
// used by the tests of connector and host; it is not part of the public
// kit (see package connectortest) and is free to change with those tests.
package sdkfixture

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// FixtureOptions configures [StartFixture].
type FixtureOptions struct {
	// Profiles of the Card (default xagent.im.v2).
	Profiles []protocol.Profile
	// APIKey is the system API key ("" = none).
	APIKey string
	// Store to use; nil opens a fresh SQLite store.
	Store *store.DB
	// DataDir for files; "" uses a test directory.
	DataDir string
	// Adjust may change the connector options before New.
	Adjust func(*connector.Options)
	// Canary is the secret the target hands back as a token and embeds
	// in its errors; it must never leave the connector.
	Canary string
	// QRTTL is the lifetime of one QR code (default 2 min).
	QRTTL time.Duration
	// CardID overrides FixtureCardID (for a shared database); the Skill
	// name follows it.
	CardID string
}

// Fixture is a running in-process fixture connector behind an httptest
// server, with a recording fake target.
type Fixture struct {
	Server *connector.Server
	URL    string
	Store  *store.DB
	Logs   *SyncBuffer
	Target *FakeTarget
	Opts   FixtureOptions

	http   *httptest.Server
	closed bool
}

// SyncBuffer is a goroutine-safe bytes.Buffer for captured logs.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// FakeTarget records what the fixture connector did to its "target".
// Safe for concurrent use.
type FakeTarget struct {
	mu         sync.Mutex
	messages   []connector.AssistantMessage
	files      map[string][]byte
	deltas     []connector.AssistantDelta
	activities []connector.Activity
	sends      int
	binds      []string
	unbinds    []connector.UnbindReason
	failNext   error         // returned by the next message delivery
	holdNext   bool          // the next message delivery waits for its context to end, then succeeds
	holding    bool          // a held delivery is waiting
	blocked    int           // fixture_block calls running
	canceled   int           // fixture_block calls whose context ended
	release    chan struct{} // closed by ReleaseBlocked
}

// ReleaseBlocked makes every fixture_block call, running or future,
// return successfully (instead of waiting for its context). Safe to call
// more than once.
func (t *FakeTarget) ReleaseBlocked() {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.release:
	default:
		close(t.release)
	}
}

// Blocked returns how many fixture_block calls are running and how many
// ended because their context was cancelled.
func (t *FakeTarget) Blocked() (running, canceled int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.blocked, t.canceled
}

// Snapshot returns copies of the recorded slices.
func (t *FakeTarget) Snapshot() (msgs []connector.AssistantMessage, deltas []connector.AssistantDelta, acts []connector.Activity, sends int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]connector.AssistantMessage(nil), t.messages...), append([]connector.AssistantDelta(nil), t.deltas...),
		append([]connector.Activity(nil), t.activities...), t.sends
}

// Hooks returns the recorded bind channel ids and unbind reasons.
func (t *FakeTarget) Hooks() (binds []string, unbinds []connector.UnbindReason) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.binds...), append([]connector.UnbindReason(nil), t.unbinds...)
}

// SetHoldNext makes the next message delivery or ToolSend call wait until
// its context ends (the socket that carried it closed) and then succeed: a
// side effect that completes while the connection is gone.
func (t *FakeTarget) SetHoldNext() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.holdNext = true
}

// Holding reports whether a held delivery is waiting for its context.
func (t *FakeTarget) Holding() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.holding
}

// SetFailNext makes the next delivery fail with err.
func (t *FakeTarget) SetFailNext(err error) {
	t.mu.Lock()
	t.failNext = err
	t.mu.Unlock()
}

// FileBytes returns the bytes of a delivered file.
func (t *FakeTarget) FileBytes(ref string) []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.files[ref]
}

// EchoIn is the input of the echo tool.
type EchoIn struct {
	Text string `json:"text" desc:"Text to echo."`
}

// EchoOut is its result.
type EchoOut struct {
	Echo    string `json:"echo"`
	Channel string `json:"channel"`
}

// SendOut is the result of the side-effecting send tool.
type SendOut struct {
	Count int `json:"count"`
}

// FileIn names a file_ref.
type FileIn struct {
	FileRef string `json:"file_ref"`
}

// StartFixture builds, starts and serves the fixture connector; it is
// closed when the test ends (goroutines included).
func StartFixture(tb testing.TB, o FixtureOptions) *Fixture {
	tb.Helper()
	if o.Store == nil {
		o.Store = connectortest.NewStore(tb)
	}
	if o.DataDir == "" {
		o.DataDir = tb.TempDir()
	}
	if o.Canary == "" {
		o.Canary = "canary-target-token-7f3a9c"
	}
	f := &Fixture{Store: o.Store, Logs: &SyncBuffer{}, Target: &FakeTarget{files: map[string][]byte{}, release: make(chan struct{})}, Opts: o}
	card, skill := FixtureCard(o.Profiles...), FixtureSkillMD
	if o.CardID != "" {
		card.ConnectorCardID = o.CardID
		skill = strings.Replace(skill, protocol.PrimarySkillName(FixtureCardID), protocol.PrimarySkillName(o.CardID), 1)
	}
	opts := connector.Options{
		Card:       card,
		Skill:      []byte(skill),
		Store:      o.Store,
		APIKey:     o.APIKey,
		DataDir:    o.DataDir,
		Logger:     slog.New(slog.NewJSONHandler(f.Logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		LeaseGrace: time.Hour,
	}
	if o.Adjust != nil {
		o.Adjust(&opts)
	}
	srv, err := connector.New(opts)
	if err != nil {
		tb.Fatalf("connector.New: %v", err)
	}
	f.Server = srv
	if err := f.register(); err != nil {
		tb.Fatalf("register: %v", err)
	}
	if err := srv.Start(context.Background()); err != nil {
		tb.Fatalf("Start: %v", err)
	}
	f.http = httptest.NewServer(srv)
	f.URL = f.http.URL
	tb.Cleanup(func() { f.Close() })
	return f
}

// Close stops the HTTP server and the connector (waiting for both).
func (f *Fixture) Close() {
	if f.closed {
		return
	}
	f.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = f.Server.Close(ctx)
	f.http.CloseClientConnections()
	f.http.Close()
}

func (f *Fixture) register() error {
	s, t, canary := f.Server, f.Target, f.Opts.Canary
	errs := []error{
		connector.AddTool(s, ToolEcho, func(ctx context.Context, c *connector.Call, in EchoIn) (EchoOut, error) {
			return EchoOut{Echo: in.Text, Channel: c.Channel.ID()}, nil
		}, connector.ToolOptions{Title: "Echo", Description: "Echo text back."}),
		connector.AddTool(s, ToolSend, func(ctx context.Context, c *connector.Call, in EchoIn) (SendOut, error) {
			t.mu.Lock()
			hold := t.holdNext
			t.holdNext, t.holding = false, hold
			t.mu.Unlock()
			if hold { // completes after its socket closed
				<-ctx.Done()
			}
			t.mu.Lock()
			defer t.mu.Unlock()
			t.holding = false
			t.sends++
			return SendOut{Count: t.sends}, nil
		}, connector.ToolOptions{Description: "Send text to the target (side effect).", SideEffect: true}),
		connector.AddTool(s, ToolSlow, func(ctx context.Context, c *connector.Call, in struct{}) (struct{}, error) {
			<-ctx.Done()
			return struct{}{}, ctx.Err()
		}, connector.ToolOptions{Description: "Never finishes.", Timeout: 50 * time.Millisecond}),
		connector.AddTool(s, ToolBlock, func(ctx context.Context, c *connector.Call, in struct{}) (struct{}, error) {
			t.mu.Lock()
			t.blocked++
			t.mu.Unlock()
			select {
			case <-t.release:
				t.mu.Lock()
				t.blocked--
				t.mu.Unlock()
				return struct{}{}, nil
			case <-ctx.Done():
			}
			t.mu.Lock()
			t.blocked--
			t.canceled++
			t.mu.Unlock()
			return struct{}{}, ctx.Err()
		}, connector.ToolOptions{Description: "Blocks until cancelled or released.", Timeout: time.Minute}),
		connector.AddTool(s, ToolPanic, func(ctx context.Context, c *connector.Call, in struct{}) (struct{}, error) {
			panic("target exploded with token " + canary)
		}, connector.ToolOptions{Description: "Panics."}),
		connector.AddTool(s, ToolLeakError, func(ctx context.Context, c *connector.Call, in struct{}) (struct{}, error) {
			return struct{}{}, errors.New("target refused token=" + canary)
		}, connector.ToolOptions{Description: "Fails with a secret in the error."}),
		connector.AddTool(s, ToolLeakResult, func(ctx context.Context, c *connector.Call, in struct{}) (map[string]string, error) {
			b, _ := c.Channel.Binding()
			return map[string]string{"token": string(b.Data)}, nil
		}, connector.ToolOptions{Description: "Returns the binding token (must be scrubbed)."}),
		connector.AddTool(s, ToolProgress, func(ctx context.Context, c *connector.Call, in struct{}) (SendOut, error) {
			half := 0.5
			if err := c.Progress(ctx, "running", "half way", &half); err != nil {
				return SendOut{}, err
			}
			return SendOut{Count: 2}, c.Progress(ctx, "running", "done soon "+canary, nil)
		}, connector.ToolOptions{Description: "Reports progress."}),
		connector.AddTool(s, ToolWhoAmI, func(ctx context.Context, c *connector.Call, in struct{}) (EchoOut, error) {
			return EchoOut{Channel: c.Channel.ID()}, nil
		}, connector.ToolOptions{Description: "Available without sign-in.", Public: true}),
		s.AddRawTool(ToolSum, func(ctx context.Context, c *connector.Call, args json.RawMessage) (json.RawMessage, error) {
			var in struct{ A, B int }
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, err
			}
			return json.Marshal(map[string]int{"sum": in.A + in.B})
		}, connector.ToolOptions{Description: "Adds two integers.", InputSchema: json.RawMessage(
			`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false}`)}),
		s.AddRawTool(ToolArgs, func(ctx context.Context, c *connector.Call, args json.RawMessage) (json.RawMessage, error) {
			return args, nil
		}, connector.ToolOptions{Description: "Returns the arguments it received."}),
		connector.AddTool(s, ToolReadFile, func(ctx context.Context, c *connector.Call, in FileIn) (map[string]any, error) {
			file, err := c.Channel.OpenFile(ctx, in.FileRef)
			if err != nil {
				return nil, err
			}
			r, err := file.Open()
			if err != nil {
				return nil, err
			}
			defer r.Close()
			b, err := io.ReadAll(r)
			return map[string]any{"bytes": len(b), "filename": file.Filename}, err
		}, connector.ToolOptions{Description: "Reads an uploaded file."}),
	}
	if cardHas(f.Opts.Profiles, protocol.ProfileIMv2) {
		errs = append(errs, connector.AddTool(s, ToolIMv2Only, func(ctx context.Context, c *connector.Call, in struct{}) (struct{}, error) {
			return struct{}{}, nil
		}, connector.ToolOptions{Description: "An IM v2 tool.", Profile: protocol.ProfileIMv2}))
	}
	errs = append(errs,
		s.AddAuthFlow(FlowTokenForm, connector.Form(func(ctx context.Context, ch *connector.Channel, in connector.Input) (connector.Binding, error) {
			tok := in.Secret("token")
			if tok == BadToken {
				return connector.Binding{}, errors.New("target rejected token " + tok)
			}
			name := in.Get("name")
			if name == "" {
				name = "Fixture user"
			}
			return connector.Binding{Data: []byte(canary), DisplayName: name, AccountHint: "fx***", Secrets: []string{canary}}, nil
		})),
		s.AddAuthFlow(FlowQR, connector.QR(connector.QRFlow{
			Issue: func(ctx context.Context, q *connector.QRSession) (string, error) {
				return "https://fixture.invalid/login?t=" + q.Token, nil
			},
			TTL: f.Opts.QRTTL,
		})),
	)
	s.OnBind(func(ctx context.Context, ch *connector.Channel, b connector.Binding) error {
		t.mu.Lock()
		t.binds = append(t.binds, ch.ID())
		t.mu.Unlock()
		s.Logger().Debug("fixture: bound", "channel", ch.ID(), "token", string(b.Data), "note", "binding "+string(b.Data))
		return nil
	})
	s.OnUnbind(func(ctx context.Context, ch *connector.Channel, b connector.Binding, reason connector.UnbindReason) error {
		t.mu.Lock()
		t.unbinds = append(t.unbinds, reason)
		t.mu.Unlock()
		return nil
	})
	if cardHas(f.Opts.Profiles, protocol.ProfileIMv2) {
		s.OnAssistantMessage(func(ctx context.Context, ch *connector.Channel, m *connector.AssistantMessage) error {
			t.mu.Lock()
			fail, hold := t.failNext, t.holdNext
			t.failNext, t.holdNext, t.holding = nil, false, hold
			t.mu.Unlock()
			if fail != nil {
				return fail
			}
			if hold {
				<-ctx.Done()
				t.mu.Lock()
				t.holding = false
				t.mu.Unlock()
			}
			files := map[string][]byte{}
			for _, file := range m.Files {
				r, err := file.Open()
				if err != nil {
					return err
				}
				b, err := io.ReadAll(r)
				r.Close()
				if err != nil {
					return err
				}
				files[file.Ref] = b
			}
			t.mu.Lock()
			defer t.mu.Unlock()
			t.messages = append(t.messages, *m)
			for k, v := range files {
				t.files[k] = v
			}
			return nil
		})
		s.OnAssistantDelta(func(ctx context.Context, ch *connector.Channel, d *connector.AssistantDelta) error {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.deltas = append(t.deltas, *d)
			return nil
		})
		s.OnActivity(func(ctx context.Context, ch *connector.Channel, a connector.Activity) error {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.activities = append(t.activities, a)
			return nil
		})
	}
	return errors.Join(errs...)
}

func cardHas(profiles []protocol.Profile, p protocol.Profile) bool {
	if len(profiles) == 0 {
		return p == protocol.ProfileIMv2
	}
	for _, x := range profiles {
		if x == p {
			return true
		}
	}
	return false
}

// Connect dials the fixture, completes hello with the Card's profiles and
// returns the client and the issued connector_id. The client is closed when
// the test ends.
func (f *Fixture) Connect(tb testing.TB, connectorID string) (*connectortest.Client, string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := connectortest.Dial(ctx, f.URL, f.Opts.APIKey)
	if err != nil {
		tb.Fatalf("dial: %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	profiles := f.Opts.Profiles
	if len(profiles) == 0 {
		profiles = []protocol.Profile{protocol.ProfileIMv2}
	}
	ack, err := c.Hello(ctx, protocol.HelloPayload{ConnectorCardID: f.Server.Card().ConnectorCardID, ConnectorID: connectorID,
		ProtocolVersion: protocol.ProtocolVersion, SupportedProfiles: profiles})
	if err != nil {
		tb.Fatalf("hello: %v", err)
	}
	return c, ack.ConnectorID
}

// SignIn runs the token form flow on an open channel and returns the
// authenticated state.
func SignIn(ctx context.Context, c *connectortest.Client, channel, name string) (*protocol.AuthStatePayload, error) {
	return c.SignInForm(ctx, channel, FlowTokenForm, map[string]string{"token": "good-token-value", "name": name})
}
