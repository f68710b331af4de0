package connector_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// TestRestoredLeaseDefaultGraceSynctest runs the default one-hour grace on
// a fake clock: channels restored at start with no hello survive 59
// minutes and are cleaned up (with their instance) after the hour.
func TestRestoredLeaseDefaultGraceSynctest(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "x.db"), store.Options{DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		now := time.Now()
		const cid, ch = "conn_restored_instance_000000", "cch_restored_channel_0000000"
		if err := db.PutInstance(ctx, store.Instance{CardID: sdkfixture.FixtureCardID, ConnectorID: cid, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if err := db.PutChannel(ctx, store.Channel{CardID: sdkfixture.FixtureCardID, ChannelID: ch, ConnectorID: cid,
			Status: protocol.StatusConnected, CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		card := sdkfixture.FixtureCard(protocol.ProfileIMv1)
		card.AuthFlows = nil
		srv, err := connector.New(connector.Options{Card: card, Store: db, DataDir: dir,
			FileTTL: 10 * time.Minute, OutboxTTL: 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var unbound []connector.UnbindReason
		srv.OnUnbind(func(ctx context.Context, c *connector.Channel, b connector.Binding, r connector.UnbindReason) error {
			unbound = append(unbound, r)
			return nil
		})
		if err := srv.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer srv.Close(ctx)

		h, err := srv.Channel(ch)
		if err != nil {
			t.Fatal(err)
		}
		early, err := h.CacheFile(ctx, connector.OutgoingFile{Name: "a.txt", Content: strings.NewReader("early")})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := db.GetFile(ctx, sdkfixture.FixtureCardID, early.FileRef)
		if err != nil {
			t.Fatal(err)
		}
		// The sweeper removes the expired file (record and bytes).
		time.Sleep(12 * time.Minute)
		synctest.Wait()
		if _, err := db.GetFile(ctx, sdkfixture.FixtureCardID, early.FileRef); err == nil {
			t.Fatal("expired file record kept")
		}
		if _, err := os.Stat(rec.Path); !os.IsNotExist(err) {
			t.Fatalf("expired file bytes kept: %v", err)
		}
		late, err := h.CacheFile(ctx, connector.OutgoingFile{Name: "b.txt", Content: strings.NewReader("late")})
		if err != nil {
			t.Fatal(err)
		}
		lateRec, _ := db.GetFile(ctx, sdkfixture.FixtureCardID, late.FileRef)

		time.Sleep(47 * time.Minute) // 59 minutes since start
		synctest.Wait()
		if _, err := db.GetChannel(ctx, sdkfixture.FixtureCardID, ch); err != nil {
			t.Fatalf("channel cleaned before the grace period: %v", err)
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if _, err := db.GetChannel(ctx, sdkfixture.FixtureCardID, ch); err == nil {
			t.Fatal("restored channel survived the grace period")
		}
		if _, err := db.GetInstance(ctx, sdkfixture.FixtureCardID, cid); err == nil {
			t.Fatal("instance survived the grace period")
		}
		if _, err := os.Stat(filepath.Dir(lateRec.Path)); !os.IsNotExist(err) {
			t.Fatalf("file directory of a deleted channel kept: %v", err)
		}
		if len(unbound) != 1 || unbound[0] != connector.UnbindLeaseExpired {
			t.Fatalf("unbind hook %v", unbound)
		}
	})
}
