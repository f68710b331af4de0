package connector_test

import (
	"context"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

func TestLeaseExpiryCascades(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Adjust: func(o *connector.Options) {
		o.LeaseGrace = 300 * time.Millisecond
	}})
	ctx := testCtx(t)
	c, cid := f.Connect(t, "")
	ch := openSigned(t, c)
	// An unfinished QR session on a second channel.
	a2, _ := c.Open(ctx, "")
	env, _ := c.Request(ctx, protocol.TypeAuthStart, a2.ConnectorChannelID, protocol.AuthStartPayload{FlowID: sdkfixture.FlowQR})
	qr := decode[protocol.AuthStatePayload](t, env)
	h, _ := f.Server.Channel(ch)
	if _, err := h.Publish(ctx, connector.UserMessage{MessageID: "pending-1", Text: "never acked"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NextOfType(ctx, protocol.TypeChatMessage); err != nil {
		t.Fatal(err)
	}
	c.Close()
	in, err := f.Store.GetInstance(ctx, sdkfixture.FixtureCardID, cid)
	eventually(t, "grace persisted", func() bool {
		in, err = f.Store.GetInstance(ctx, sdkfixture.FixtureCardID, cid)
		return err == nil && !in.GraceUntil.IsZero()
	})
	eventually(t, "lease expiry", func() bool {
		_, err := f.Store.GetInstance(ctx, sdkfixture.FixtureCardID, cid)
		return err != nil
	})
	for _, id := range []string{ch, a2.ConnectorChannelID} {
		if _, err := f.Store.GetChannel(ctx, sdkfixture.FixtureCardID, id); err == nil {
			t.Fatalf("channel %s survived the lease", id)
		}
		if _, err := f.Server.Channel(id); !isCode(err, protocol.CodeConnectionNotFound) {
			t.Fatalf("channel %s still known: %v", id, err)
		}
	}
	if _, unb := f.Target.Hooks(); len(unb) != 1 || unb[0] != connector.UnbindLeaseExpired {
		t.Fatalf("unbind hooks %v", unb)
	}
	if _, err := f.Server.AuthLookup(qrToken(t, qr.QRCodeText)); err == nil {
		t.Fatal("unfinished sign-in session survived the lease")
	}
	// The same connector_id now gets a new one.
	_, fresh := f.Connect(t, cid)
	if fresh == cid {
		t.Fatal("expired connector_id restored")
	}
}

func TestLeaseReconnectCancelsExpiry(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Adjust: func(o *connector.Options) {
		o.LeaseGrace = 400 * time.Millisecond
	}})
	ctx := testCtx(t)
	c, cid := f.Connect(t, "")
	ch := openSigned(t, c)
	c.Close()
	c2, again := f.Connect(t, cid)
	if again != cid {
		t.Fatal("connector_id not restored within grace")
	}
	time.Sleep(800 * time.Millisecond) // twice the grace: nothing may expire while connected
	if _, err := c2.Open(ctx, ch); err != nil {
		t.Fatalf("channel lost while connected: %v", err)
	}
	in, err := f.Store.GetInstance(ctx, sdkfixture.FixtureCardID, cid)
	if err != nil || !in.GraceUntil.IsZero() {
		t.Fatalf("instance %+v %v", in, err)
	}
}

func TestRestoredChannelsWithoutHelloAreCleaned(t *testing.T) {
	t.Parallel()
	st := connectortest.NewStore(t)
	dir := t.TempDir()
	f1 := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Store: st, DataDir: dir})
	c, cid := f1.Connect(t, "")
	ch := openSigned(t, c)
	c.Close()
	f1.Close()
	// Simulate a crash while connected: no grace deadline recorded.
	ctx := context.Background()
	in, err := st.GetInstance(ctx, sdkfixture.FixtureCardID, cid)
	if err != nil {
		t.Fatal(err)
	}
	in.GraceUntil = time.Time{}
	if err := st.PutInstance(ctx, in); err != nil {
		t.Fatal(err)
	}
	f2 := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Store: st, DataDir: dir, Adjust: func(o *connector.Options) {
		o.LeaseGrace = 300 * time.Millisecond
	}})
	if binds, _ := f2.Target.Hooks(); len(binds) != 1 || binds[0] != ch {
		t.Fatalf("restored bound channel not handed to OnBind: %v", binds)
	}
	h, err := f2.Server.Channel(ch)
	if err != nil || !h.Authenticated() {
		t.Fatalf("restored channel %v", err)
	}
	if b, ok := h.Binding(); !ok || string(b.Data) != f2.Opts.Canary {
		t.Fatalf("binding not restored: %+v", b)
	}
	eventually(t, "cleanup of restored channels", func() bool {
		_, err := st.GetChannel(ctx, sdkfixture.FixtureCardID, ch)
		return err != nil
	})
	if _, unb := f2.Target.Hooks(); len(unb) != 1 || unb[0] != connector.UnbindLeaseExpired {
		t.Fatalf("unbind %v", unb)
	}
}
