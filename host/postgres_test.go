package host

import (
	"context"
	"github.com/xconn/xconn/store/storetest"
	"testing"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// postgresDSN returns a DSN on a fresh PostgreSQL schema for the test (see
// storetest.PostgresDSN); it skips when XCONN_TEST_POSTGRES is unset.
func postgresDSN(t testing.TB) string {
	t.Helper()
	return storetest.PostgresDSN(t, "h_")
}

// The host on PostgreSQL: admission, sign-in, a final pending across a
// host restart, the channel reopened from the persisted record.
func TestPostgresHostRestart(t *testing.T) {
	t.Parallel()
	dsn := postgresDSN(t)
	dir := t.TempDir()
	open := func() *store.DB {
		db, err := store.Open(context.Background(), dsn, store.Options{DataDir: dir})
		if err != nil {
			t.Fatalf("store.Open: %v", err)
		}
		return db
	}
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHostOn(t, open(), dir, nil)
	th.admitOnline(t, f)
	uc := th.signinRoom(t, "pg", "im.fake")
	e, err := th.db.GetCatalog(ctxT(t), "im.fake")
	if err != nil || e.APIKey != f.apiKey {
		t.Fatalf("catalog on PostgreSQL: %+v %v", e, err)
	}
	f.set(func(f *fakeConnector) { f.noAckFinals = 1000 })
	r, _ := th.Reply(ctxT(t), uc.ID)
	id, err := r.Final(ctxT(t), "kept in PostgreSQL")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "attempted", func() bool { return f.count(protocol.TypeChatMessage) >= 1 })
	th.stop(t)

	f.set(func(f *fakeConnector) { f.noAckFinals = 0 })
	th2 := newTestHostOn(t, open(), dir, nil)
	if got := waitFinal(t, f); got.MessageID != id {
		t.Fatalf("final %s, want %s", got.MessageID, id)
	}
	ucs, err := th2.Channels(ctxT(t), "pg", "im.fake")
	if err != nil || len(ucs) != 1 || ucs[0].ID != uc.ID {
		t.Fatalf("channels after restart: %+v %v", ucs, err)
	}
}
