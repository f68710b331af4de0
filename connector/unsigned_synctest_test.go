package connector_test

import (
	"context"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// TestUnsignedChannelsReclaimedSynctest is review item 6: a channel opened
// and never signed in is deleted UnsignedChannelTTL (default 30 min) after
// its last change, while its lease lives (before, such channels stayed
// until the lease expired, and a flood of opens filled the table); a
// signed-in channel of the same instance stays.
func TestUnsignedChannelsReclaimedSynctest(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "x.db"), store.Options{DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		now := time.Now()
		const cid, unsigned, signed = "conn_unsigned_instance_00000", "cch_never_signed_in_00000000", "cch_signed_in_000000000000000"
		if err := db.PutInstance(ctx, store.Instance{CardID: sdkfixture.FixtureCardID, ConnectorID: cid, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		for id, st := range map[string]protocol.ConnectionStatus{unsigned: protocol.StatusCreated, signed: protocol.StatusConnected} {
			if err := db.PutChannel(ctx, store.Channel{CardID: sdkfixture.FixtureCardID, ChannelID: id, ConnectorID: cid,
				Status: st, CreatedAt: now, UpdatedAt: now}); err != nil {
				t.Fatal(err)
			}
		}
		card := sdkfixture.FixtureCard(protocol.ProfileIMv1)
		card.AuthFlows = nil
		srv, err := connector.New(connector.Options{Card: card, Store: db, DataDir: dir, LeaseGrace: 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer srv.Close(ctx)

		time.Sleep(connector.DefaultUnsignedTTL - time.Minute)
		synctest.Wait()
		if _, err := srv.Channel(unsigned); err != nil {
			t.Fatalf("channel without sign-in reclaimed before the TTL: %v", err)
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if _, err := srv.Channel(unsigned); err == nil {
			t.Fatal("channel without sign-in kept after UnsignedChannelTTL")
		}
		if _, err := db.GetChannel(ctx, sdkfixture.FixtureCardID, unsigned); err == nil {
			t.Fatal("channel without sign-in kept in the store after UnsignedChannelTTL")
		}
		if _, err := srv.Channel(signed); err != nil {
			t.Fatalf("signed-in channel reclaimed: %v", err)
		}
	})
}
