package connector_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// notSignedIn are the statuses isAuthenticated refuses.
var notSignedIn = []protocol.ConnectionStatus{protocol.StatusCreated, protocol.StatusAuthenticating,
	protocol.StatusExpired, protocol.StatusRevoked}

// wantNotAuthenticated checks that err is a *protocol.Error with code
// connection_not_authenticated whose message names the channel.
func wantNotAuthenticated(t *testing.T, err error, channel string) {
	t.Helper()
	var perr *protocol.Error
	if !errors.As(err, &perr) || perr.Code != protocol.CodeConnectionNotAuthenticated {
		t.Fatalf("error = %v, want a *protocol.Error with code %s", err, protocol.CodeConnectionNotAuthenticated)
	}
	if !strings.Contains(perr.Message, channel) {
		t.Fatalf("error message %q does not name the channel %s", perr.Message, channel)
	}
}

// filesIn counts the regular files under dir (the transfer-plane cache),
// not counting the data directory's lock file.
func filesIn(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && d.Name() != connector.DataDirLockFile {
			n++
		}
		return err
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return n
}

// TestPublishRequiresSignedInChannel: Channel.Publish on a channel that is
// not signed in fails with connection_not_authenticated naming the channel
// and stores nothing (no outbox entry, no cached file); once signed in, the
// first chat.message is the one published then.
func TestPublishRequiresSignedInChannel(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	ctx := testCtx(t)
	c, _ := f.Connect(t, "")
	ack, err := c.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	id := ack.ConnectorChannelID
	h, err := f.Server.Channel(id)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range notSignedIn {
		if err := h.SetStatus(ctx, st); err != nil {
			t.Fatal(err)
		}
		err := h.Publish(ctx, connector.UserMessage{MessageID: "refused-" + string(st), Text: "not yet",
			Files: []connector.OutgoingFile{{Name: "a.txt", MimeType: "text/plain", Content: strings.NewReader("x")}}})
		wantNotAuthenticated(t, err, id)
	}
	if n, err := f.Store.OutboxPending(ctx, "connector.im.v2"); err != nil || n != 0 {
		t.Fatalf("outbox entries after refused publishes: %d %v", n, err)
	}
	if n := filesIn(t, f.Opts.DataDir); n != 0 {
		t.Fatalf("%d files cached for refused publishes", n)
	}
	// Signed in (and still signed in while offline): Publish works, and
	// the first message xAgent sees is this one.
	if err := h.SetStatus(ctx, protocol.StatusCreated); err != nil {
		t.Fatal(err)
	}
	openSignedOn(t, c, id)
	if err := h.SetStatus(ctx, protocol.StatusOffline); err != nil {
		t.Fatal(err)
	}
	if err := h.Publish(ctx, connector.UserMessage{MessageID: "signed-in", Text: "now"}); err != nil {
		t.Fatalf("publish on a signed-in channel: %v", err)
	}
	msg, err := c.NextOfType(ctx, protocol.TypeChatMessage)
	if err != nil {
		t.Fatal(err)
	}
	if p := decode[protocol.ChatMessagePayload](t, msg); p.MessageID != "signed-in" {
		t.Fatalf("first chat.message is %q, want signed-in", p.MessageID)
	}
	ackMessage(t, c, msg, protocol.AckAccepted, nil)
	// Logout makes the channel unauthenticated again.
	if err := h.Logout(ctx); err != nil {
		t.Fatal(err)
	}
	wantNotAuthenticated(t, h.Publish(ctx, connector.UserMessage{MessageID: "after-logout", Text: "bye"}), id)
}

// TestPushMessageRequiresSignedInChannel is the same rule for the IM v1
// message.push.
func TestPushMessageRequiresSignedInChannel(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Profiles: []protocol.Profile{protocol.ProfileIMv1}})
	ctx := testCtx(t)
	c, _ := f.Connect(t, "")
	ack, err := c.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	id := ack.ConnectorChannelID
	h, err := f.Server.Channel(id)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range notSignedIn {
		if err := h.SetStatus(ctx, st); err != nil {
			t.Fatal(err)
		}
		err := h.PushMessage(ctx, protocol.MessagePushPayload{MessageID: "refused-" + string(st), Text: "User message: not yet"})
		wantNotAuthenticated(t, err, id)
	}
	if n, err := f.Store.OutboxPending(ctx, "connector.im.v1"); err != nil || n != 0 {
		t.Fatalf("outbox entries after refused pushes: %d %v", n, err)
	}
	if err := h.SetStatus(ctx, protocol.StatusCreated); err != nil {
		t.Fatal(err)
	}
	openSignedOn(t, c, id)
	if err := h.PushMessage(ctx, protocol.MessagePushPayload{MessageID: "signed-in", SenderID: "u1", Text: "User message: now"}); err != nil {
		t.Fatalf("push on a signed-in channel: %v", err)
	}
	push, err := c.NextOfType(ctx, protocol.TypeMessagePush)
	if err != nil {
		t.Fatal(err)
	}
	if p := decode[protocol.MessagePushPayload](t, push); p.MessageID != "signed-in" {
		t.Fatalf("first message.push is %q, want signed-in", p.MessageID)
	}
}
