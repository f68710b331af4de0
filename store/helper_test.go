package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	goleak.VerifyTestMain(m,
		// database/sql keeps one opener goroutine per pool until Close; the
		// pools of a failed Open are closed, so this only covers timing.
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
	)
}

// testKey is a fixed key for tests that do not exercise the key file.
var testKey = []byte("0123456789abcdef0123456789abcdef")

// backends runs f against SQLite always and PostgreSQL when
// XCONN_TEST_POSTGRES is set, each on a fresh database.
func backends(t *testing.T, f func(t *testing.T, dsn string)) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		f(t, "sqlite:"+filepath.Join(t.TempDir(), "xconn.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		f(t, postgresDSN(t))
	})
}

// postgresDSN creates a fresh schema x_<random> for the test, returns a DSN
// whose search_path is that schema, and drops the schema at the end.
func postgresDSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv("XCONN_TEST_POSTGRES")
	if base == "" {
		t.Skip("XCONN_TEST_POSTGRES is not set; PostgreSQL tests skip")
	}
	b := make([]byte, 6)
	rand.Read(b)
	schema := "x_" + hex.EncodeToString(b)
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

// openDB opens dsn with the test key and closes it at the end.
func openDB(t *testing.T, dsn string, opts Options) *DB {
	t.Helper()
	if opts.Key == nil && opts.DataDir == "" {
		opts.Key = testKey
	}
	db, err := Open(context.Background(), dsn, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// eachDB runs f with a fresh *DB on every backend.
func eachDB(t *testing.T, opts Options, f func(t *testing.T, db *DB)) {
	backends(t, func(t *testing.T, dsn string) { f(t, openDB(t, dsn, opts)) })
}
