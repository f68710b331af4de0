package connectortest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/xconn/xconn/store"
)

// NewStore opens a SQLite store in a test directory and closes it when the
// test ends.
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
