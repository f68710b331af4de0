package host

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// postgresDSN creates a fresh schema for the test and returns a DSN whose
// search_path is that schema; the schema is dropped at the end.
func postgresDSN(t *testing.T) string {
	t.Helper()
	base := os.Getenv("XCONN_TEST_POSTGRES")
	if base == "" {
		t.Skip("XCONN_TEST_POSTGRES is not set; PostgreSQL tests skip")
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "h_" + hex.EncodeToString(b)
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		admin, err := sql.Open("pgx", base)
		if err != nil {
			t.Error(err)
			return
		}
		defer admin.Close()
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
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
