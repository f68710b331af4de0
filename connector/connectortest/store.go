package connectortest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/xconn/xconn/store"
)

// NewStore opens a SQLite store (the SDK's default, one file) in
// tb.TempDir(), for connector.Options.Store, and closes it when the test
// ends. Each call returns a fresh, empty store.
func NewStore(tb testing.TB) *store.DB {
	tb.Helper()
	dir := tb.TempDir()
	db, err := store.Open(context.Background(), "sqlite:"+filepath.Join(dir, "xconn.db"), store.Options{DataDir: dir})
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	return db
}
