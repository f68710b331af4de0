package connector_test

import (
	"strings"
	"testing"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

func TestChannelOpenReuseAndDescriptor(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	c, cid := f.Connect(t, "")
	ctx := testCtx(t)
	env, err := c.Request(ctx, protocol.TypeChannelOpen, "", protocol.EmptyPayload{})
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, env, protocol.TypeChannelOpenAck)
	ack := decode[protocol.ChannelOpenAckPayload](t, env)
	id := ack.ConnectorChannelID
	if !strings.HasPrefix(id, "cch_") || len(id) < 20 || env.ConnectorChannelID != id {
		t.Fatalf("channel id %q / envelope %q", id, env.ConnectorChannelID)
	}
	d := ack.ConnectionDescriptor
	if d == nil || d.Connection.Status != protocol.StatusCreated || d.Connection.ConnectorID != cid ||
		d.Connection.ConnectorChannelID != id {
		t.Fatalf("descriptor %+v", d)
	}
	card := f.Server.Card()
	if vs := protocol.ValidateDescriptorAgainstCard(d, card, id); len(vs) > 0 {
		t.Fatalf("descriptor invalid: %v", vs)
	}
	if d.ToolAvailable(sdkfixture.ToolEcho) || !d.ToolAvailable(sdkfixture.ToolWhoAmI) {
		t.Fatalf("tool availability before sign-in: %+v", d.Tools)
	}
	if _, err := f.Store.GetChannel(ctx, sdkfixture.FixtureCardID, id); err != nil {
		t.Fatalf("channel not persisted: %v", err)
	}
	// Reopening the known id reuses it; an unknown one gets a new id.
	again, err := c.Open(ctx, id)
	if err != nil || again.ConnectorChannelID != id {
		t.Fatalf("reopen: %v %+v", err, again)
	}
	other, err := c.Open(ctx, "cch_not_known_here")
	if err != nil || other.ConnectorChannelID == "cch_not_known_here" || other.ConnectorChannelID == id {
		t.Fatalf("unknown id: %v %+v", err, other)
	}
	// descriptor.get, then close: close stops the route but keeps sign-in state.
	openSignedOn(t, c, id)
	env, err = c.Request(ctx, protocol.TypeDescriptorGet, id, protocol.EmptyPayload{})
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, env, protocol.TypeDescriptorGetAck)
	if got := decode[protocol.DescriptorPayload](t, env).ConnectionDescriptor; got.Connection.Status != protocol.StatusConnected {
		t.Fatalf("status after sign-in = %s", got.Connection.Status)
	}
	env, err = c.Request(ctx, protocol.TypeChannelClose, id, protocol.EmptyPayload{})
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, env, protocol.TypeChannelCloseAck)
	if decode[protocol.StatusPayload](t, env).Status != "ok" {
		t.Fatal("close ack status")
	}
	env, err = c.Request(ctx, protocol.TypeDescriptorGet, id, protocol.EmptyPayload{})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, env, protocol.TypeError, protocol.CodeChannelNotOpen)
	reopened, err := c.Open(ctx, id)
	if err != nil || reopened.ConnectionDescriptor.Connection.Status != protocol.StatusConnected {
		t.Fatalf("sign-in state lost by channel.close: %v %+v", err, reopened)
	}
}

// openSignedOn signs an already open channel in.
func openSignedOn(t *testing.T, c *connectortest.Client, id string) {
	t.Helper()
	st, err := sdkfixture.SignIn(testCtx(t), c, id, "Ann")
	if err != nil || st.Status != protocol.AuthAuthenticated {
		t.Fatalf("sign in: %v %+v", err, st)
	}
}

func TestChannelOwnershipErrors(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	ctx := testCtx(t)
	a, cid := f.Connect(t, "")
	ack, err := a.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	id := ack.ConnectorChannelID
	// Same connector_id, second socket: the channel is open on the first.
	b, _ := f.Connect(t, cid)
	// Another connector_id.
	other, _ := f.Connect(t, "")
	cases := []struct {
		name    string
		c       *connectortest.Client
		channel string
		code    protocol.Code
	}{
		{"required", a, "", protocol.CodeConnectorChannelIDRequired},
		{"not found", a, "cch_does_not_exist", protocol.CodeConnectionNotFound},
		{"not owned", b, id, protocol.CodeConnectorChannelNotOwned},
		{"other connector", other, id, protocol.CodeConnectorChannelConnectorMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, err := tc.c.Request(ctx, protocol.TypeDescriptorGet, tc.channel, protocol.EmptyPayload{})
			if err != nil {
				t.Fatal(err)
			}
			wantCode(t, env, protocol.TypeError, tc.code)
			if env.RequestID == "" || env.ReplyTo == "" {
				t.Errorf("error packet lacks request_id/reply_to")
			}
		})
	}
	// Opening on b moves the route: now a gets not_owned.
	if _, err := b.Open(ctx, id); err != nil {
		t.Fatal(err)
	}
	env, err := a.Request(ctx, protocol.TypeDescriptorGet, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, env, protocol.TypeError, protocol.CodeConnectorChannelNotOwned)
	// A channel of another, still connected connector_id is not re-adopted
	// by other's channel.open (channel_adopt_test.go has the re-adoption).
	env, err = other.Request(ctx, protocol.TypeChannelOpen, id, protocol.EmptyPayload{})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, env, protocol.TypeError, protocol.CodeConnectorChannelConnectorMismatch)
	checkWire(t, a)
	checkWire(t, b)
	checkWire(t, other)
}
