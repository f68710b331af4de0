package connector_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// handoffLogin and handoffBinding are the form and binding of the tests
// of issue 33 items 3, 5 and 8.
type handoffLogin struct {
	Token string `json:"token" secret:"true"`
	// Hand makes the sign-in hand its checked client to the SDK.
	Hand bool `json:"hand,omitempty"`
}

type handoffBinding struct {
	Token string `json:"token" secret:"true"`
}

// handoffTarget is the fake target: every check of a token (the sign-in
// handler's and the client constructor's) is counted, like a getMe.
type handoffTarget struct {
	checks  atomic.Int32
	closed  atomic.Int32
	mu      sync.Mutex
	reasons []connector.ClientReason
	revoked map[string]bool
	down    bool // the target cannot be reached
	runs    map[string]int
	// refuseRun makes the consumer find a token revoked (revoked after
	// the sign-in checked it).
	refuseRun map[string]bool
	// clients is the handle SetClient returned.
	clients *connector.Clients[handoffBinding, *handoffClient]
}

type handoffClient struct {
	t     *handoffTarget
	token string
}

func (c *handoffClient) Close() error { c.t.closed.Add(1); return nil }

var errTargetDown = &netDown{}

// netDown is a net.Error, as a dial failure is.
type netDown struct{}

func (*netDown) Error() string   { return "dial tcp 127.0.0.1:1: connect: connection refused" }
func (*netDown) Timeout() bool   { return false }
func (*netDown) Temporary() bool { return true }

func (ht *handoffTarget) check(token string) error {
	ht.checks.Add(1)
	ht.mu.Lock()
	defer ht.mu.Unlock()
	switch {
	case ht.down:
		return fmt.Errorf("target: auth.test: %w", errTargetDown)
	case ht.revoked[token]:
		return fmt.Errorf("target: auth.test: token_revoked: %w", connector.ErrRevoked)
	}
	return nil
}

const handoffKey = "handoff-test-key-0123456789"

func startHandoff(t *testing.T, st store.ConnectorStore, ht *handoffTarget) (*connector.Server, string) {
	t.Helper()
	srv, err := connector.New(connector.Options{Store: st, APIKey: handoffKey, DataDir: t.TempDir(),
		Identity: connector.Identity{CardID: "im.handoff", Name: "Handoff", Provider: "handoff", TargetType: protocol.TargetIM}})
	if err != nil {
		t.Fatal(err)
	}
	var clients *connector.Clients[handoffBinding, *handoffClient]
	if err := connector.AddForm(srv, "token_login", func(ctx context.Context, ch *connector.Channel, in handoffLogin) (connector.Account[handoffBinding], error) {
		if err := ht.check(in.Token); err != nil {
			return connector.Account[handoffBinding]{}, err
		}
		acct := connector.Account[handoffBinding]{Binding: handoffBinding{Token: in.Token}, DisplayName: "bot"}
		if in.Hand {
			return clients.With(acct, &handoffClient{t: ht, token: in.Token}), nil
		}
		return acct, nil
	}, connector.FlowOptions{Default: true}); err != nil {
		t.Fatal(err)
	}
	clients, err = connector.SetClient(srv, func(ctx context.Context, ch *connector.Channel, b handoffBinding, why connector.ClientReason) (*handoffClient, error) {
		ht.mu.Lock()
		ht.reasons = append(ht.reasons, why)
		ht.mu.Unlock()
		if err := ht.check(b.Token); err != nil {
			return nil, err
		}
		return &handoffClient{t: ht, token: b.Token}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ht.clients = clients
	if _, err := connector.AddConsumer(srv, connector.Consumer[string, handoffBinding]{
		Key: func(b handoffBinding) string { return b.Token },
		Run: func(ctx context.Context, tok string, m *connector.Members[handoffBinding]) error {
			ht.mu.Lock()
			ht.runs[tok]++
			refuse := ht.refuseRun[tok]
			ht.mu.Unlock()
			if refuse {
				return fmt.Errorf("target: events: invalid_auth: %w", connector.ErrRevoked)
			}
			if err := ht.check(tok); err != nil {
				return err
			}
			m.Connected(ctx)
			<-ctx.Done()
			return nil
		}}); err != nil {
		t.Fatal(err)
	}
	srv.OnAssistantMessage(func(context.Context, *connector.Channel, *connector.AssistantMessage) error { return nil })
	if err := srv.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		_ = srv.Close(context.Background())
	})
	return srv, hs.URL
}

func newHandoffTarget() *handoffTarget {
	return &handoffTarget{revoked: map[string]bool{}, runs: map[string]int{}, refuseRun: map[string]bool{}}
}

func connectHandoff(t *testing.T, base string) (*connectortest.Client, string) {
	t.Helper()
	return connectOpen(t, base, handoffKey)
}

// TestSignInChecksTheTargetOnce is issue 33 item 5: a sign-in handler that
// hands its checked client over with Clients.With makes the SDK install it
// without calling the constructor (one check of the target per sign-in
// instead of two); without a hand-over the constructor runs with
// ClientSignIn, and on restore with ClientRestore.
func TestSignInChecksTheTargetOnce(t *testing.T) {
	st := connectortest.NewStore(t)
	ht := newHandoffTarget()
	srv, base := startHandoff(t, st, ht)
	c, id := connectHandoff(t, base)
	ctx := testCtx(t)
	if _, err := c.SignInForm(ctx, id, "token_login", map[string]string{"token": "tok-handoff-1", "hand": "true"}); err != nil {
		t.Fatal(err)
	}
	if n := ht.checks.Load(); n != 2 { // the handler's, and the consumer's first poll
		t.Errorf("%d checks of the target for a sign-in that handed its client over, want 2 (handler, consumer)", n)
	}
	ht.mu.Lock()
	reasons := append([]connector.ClientReason(nil), ht.reasons...)
	ht.mu.Unlock()
	if len(reasons) != 0 {
		t.Errorf("constructor called %v for a sign-in that handed its client over", reasons)
	}
	ch, _ := srv.Channel(id)
	if at, ok := ch.SignedInAt(); !ok || at.IsZero() {
		t.Errorf("SignedInAt = %v, %v after a sign-in", at, ok)
	}

	c2, id2 := connectHandoff(t, base)
	if _, err := c2.SignInForm(ctx, id2, "token_login", map[string]string{"token": "tok-handoff-2"}); err != nil {
		t.Fatal(err)
	}
	ht.mu.Lock()
	reasons = append([]connector.ClientReason(nil), ht.reasons...)
	ht.mu.Unlock()
	if len(reasons) != 1 || reasons[0] != connector.ClientSignIn {
		t.Fatalf("constructor reasons %v, want [sign-in]", reasons)
	}

	// Restore: a new server on the same store makes both clients anew.
	_ = c.Close()
	_ = c2.Close()
	_ = srv.Close(context.Background())
	ht2 := newHandoffTarget()
	srv2, _ := startHandoff(t, st, ht2)
	eventually(t, "both channels restored", func() bool {
		ht2.mu.Lock()
		defer ht2.mu.Unlock()
		return len(ht2.reasons) == 2
	})
	ht2.mu.Lock()
	for _, r := range ht2.reasons {
		if r != connector.ClientRestore {
			t.Errorf("restore called the constructor with %v", r)
		}
	}
	ht2.mu.Unlock()
	ch2, _ := srv2.Channel(id)
	if at2, ok := ch2.SignedInAt(); !ok || at2.IsZero() {
		t.Errorf("SignedInAt after a restart = %v, %v", at2, ok)
	}
}

// TestHandedClientClosedWhenTheSignInFails: a client handed over by a
// sign-in that then fails (the credential is already bound elsewhere,
// Consumer.MaxChannels) is closed, not leaked.
func TestHandedClientClosedWhenTheSignInFails(t *testing.T) {
	ht := newHandoffTarget()
	srv, err := connector.New(connector.Options{Store: connectortest.NewStore(t), APIKey: handoffKey, DataDir: t.TempDir(),
		Identity: connector.Identity{CardID: "im.handoff", Name: "Handoff", Provider: "handoff", TargetType: protocol.TargetIM}})
	if err != nil {
		t.Fatal(err)
	}
	var clients *connector.Clients[handoffBinding, *handoffClient]
	_ = connector.AddForm(srv, "token_login", func(ctx context.Context, ch *connector.Channel, in handoffLogin) (connector.Account[handoffBinding], error) {
		return clients.With(connector.Account[handoffBinding]{Binding: handoffBinding{Token: in.Token}}, &handoffClient{t: ht}), nil
	}, connector.FlowOptions{})
	clients, _ = connector.SetClient(srv, func(context.Context, *connector.Channel, handoffBinding, connector.ClientReason) (*handoffClient, error) {
		return &handoffClient{t: ht}, nil
	})
	_, _ = connector.AddConsumer(srv, connector.Consumer[string, handoffBinding]{Key: func(b handoffBinding) string { return b.Token }, MaxChannels: 1})
	srv.OnAssistantMessage(func(context.Context, *connector.Channel, *connector.AssistantMessage) error { return nil })
	if err := srv.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); _ = srv.Close(context.Background()) })
	c, id := connectHandoff(t, hs.URL)
	if _, err := c.SignInForm(testCtx(t), id, "token_login", map[string]string{"token": "tok-shared"}); err != nil {
		t.Fatal(err)
	}
	c2, id2 := connectHandoff(t, hs.URL)
	_, err = c2.SignInForm(testCtx(t), id2, "token_login", map[string]string{"token": "tok-shared"})
	if err == nil {
		t.Fatal("a second channel signed in with an exclusive credential")
	}
	if n := ht.closed.Load(); n != 1 {
		t.Errorf("%d handed clients closed, want 1 (the refused sign-in's)", n)
	}
}

// TestTargetUnreachableSignIn is issue 33 item 8: a sign-in whose target
// cannot be reached (a network error) is answered with an auth.start.ack
// error carrying target_unreachable, and the channel keeps its status.
func TestTargetUnreachableSignIn(t *testing.T) {
	ht := newHandoffTarget()
	ht.down = true
	srv, base := startHandoff(t, connectortest.NewStore(t), ht)
	c, id := connectHandoff(t, base)
	_, err := c.SignInForm(testCtx(t), id, "token_login", map[string]string{"token": "tok-handoff-1"})
	if !isCode(err, connector.CodeTargetUnreachable) {
		t.Fatalf("sign-in with the target down: %v, want %s", err, connector.CodeTargetUnreachable)
	}
	if strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("the ack quotes the dial error: %v", err)
	}
	ch, _ := srv.Channel(id)
	if st := ch.Status(); st != protocol.StatusCreated {
		t.Errorf("status after an unreachable sign-in: %s, want created", st)
	}
	var perr *protocol.Error
	if !errors.As(err, &perr) {
		t.Fatalf("%T", err)
	}
}

// TestParkedConsumerResumesOnSignIn is issue 33 item 3 over the wire: a
// consumer that finds its token revoked marks the channel revoked (the
// Descriptor is pushed) and parks; signing the channel in again with the
// token, valid again, runs the consumer once more and the channel is
// connected.
func TestParkedConsumerResumesOnSignIn(t *testing.T) {
	ht := newHandoffTarget()
	srv, base := startHandoff(t, connectortest.NewStore(t), ht)
	c, id := connectHandoff(t, base)
	ctx := testCtx(t)
	const tok = "tok-later-revoked"
	runs := func() int {
		ht.mu.Lock()
		defer ht.mu.Unlock()
		return ht.runs[tok]
	}
	ht.mu.Lock()
	ht.refuseRun[tok] = true
	ht.mu.Unlock()
	if _, err := c.SignInForm(ctx, id, "token_login", map[string]string{"token": tok, "hand": "true"}); err != nil {
		t.Fatal(err)
	}
	d, err := c.ExpectStatus(ctx, id, protocol.StatusRevoked)
	if err != nil {
		t.Fatal(err)
	}
	if raw, _ := json.Marshal(d); strings.Contains(string(raw), tok) {
		t.Fatal("token in the Descriptor")
	}
	// The first Run may fail before the sign-in is stored; the sign-in's
	// commit then wakes it once more, so that it marks the stored channel.
	parked := runs()
	if parked < 1 || parked > 2 {
		t.Fatalf("Run called %d times for one sign-in, want 1 or 2", parked)
	}
	ht.mu.Lock()
	ht.refuseRun[tok] = false
	ht.mu.Unlock()
	if _, err := c.SignInForm(ctx, id, "token_login", map[string]string{"token": tok, "hand": "true"}); err != nil {
		t.Fatal(err)
	}
	ch, _ := srv.Channel(id)
	eventually(t, "the consumer resumed and the channel connected", func() bool {
		return runs() > parked && ch.Status() == protocol.StatusConnected
	})
}
