package store

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xconn/xconn/store/storetest"

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

// postgresDSN returns a DSN on a fresh PostgreSQL schema for the test (see
// storetest.PostgresDSN); it skips when XCONN_TEST_POSTGRES is unset.
func postgresDSN(t testing.TB) string {
	t.Helper()
	return storetest.PostgresDSN(t, "x_")
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

// openRaw opens a database without the store, as an older release left it:
// driver "sqlite" (raw "file:PATH", through the engine this build drives)
// or "pgx".
func openRaw(driver, raw string) (*sql.DB, error) {
	if driver == "sqlite" {
		return openSQLitePool(strings.TrimPrefix(raw, "file:"), nil, false)
	}
	return sql.Open(driver, raw)
}
