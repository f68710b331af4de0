package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestSchemaNewerThanBinary checks that a database a newer binary has
// migrated is refused with a *SchemaError naming both versions, that
// CheckSchema says the same on an open handle, and that a database behind
// the binary reports pending migrations.
func TestSchemaNewerThanBinary(t *testing.T) {
	backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		db, err := Open(ctx, dsn, Options{Key: testKey})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		latest, err := LatestSchemaVersion(db.Dialect())
		if err != nil || latest == 0 {
			t.Fatalf("LatestSchemaVersion: %d, %v", latest, err)
		}
		if err := db.CheckSchema(ctx); err != nil {
			t.Fatalf("CheckSchema on a fresh store: %v", err)
		}
		if err := db.Ping(ctx); err != nil {
			t.Fatalf("Ping: %v", err)
		}
		// A newer binary ran migration latest+1.
		if _, err := db.w.ExecContext(ctx, db.q(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`),
			latest+1, "9999_from_the_future.sql", ts(time.Now())); err != nil {
			t.Fatal(err)
		}
		var se *SchemaError
		if err := db.CheckSchema(ctx); !errors.As(err, &se) || se.Database != latest+1 || se.Binary != latest {
			t.Fatalf("CheckSchema: %v, want a SchemaError %d > %d", err, latest+1, latest)
		}
		_, err = Open(ctx, dsn, Options{Key: testKey})
		if !errors.As(err, &se) || se.Database != latest+1 || se.Binary != latest {
			t.Fatalf("Open: %v, want a SchemaError", err)
		}
		if !strings.Contains(err.Error(), "newer than this binary") {
			t.Fatalf("message %q", err)
		}
		// Behind: the last migration forgotten.
		if _, err := db.w.ExecContext(ctx, db.q(`DELETE FROM schema_migrations WHERE version >= ?`), latest); err != nil {
			t.Fatal(err)
		}
		if err := db.CheckSchema(ctx); !errors.Is(err, ErrMigrationsPending) {
			t.Fatalf("CheckSchema behind: %v, want ErrMigrationsPending", err)
		}
	})
}

func TestLeaseHolder(t *testing.T) {
	eachDB(t, Options{}, func(t *testing.T, db *DB) {
		ctx := context.Background()
		if h, _, err := db.LeaseHolder(ctx, "serve:x"); err != nil || h != "" {
			t.Fatalf("free lease: %q, %v", h, err)
		}
		if ok, err := db.AcquireLease(ctx, "serve:x", "host-a/1/k", time.Minute); !ok || err != nil {
			t.Fatalf("acquire: %v %v", ok, err)
		}
		h, exp, err := db.LeaseHolder(ctx, "serve:x")
		if err != nil || h != "host-a/1/k" || time.Until(exp) <= 0 {
			t.Fatalf("held lease: %q %v %v", h, exp, err)
		}
		if err := db.ReleaseLease(ctx, "serve:x", "host-a/1/k"); err != nil {
			t.Fatal(err)
		}
		if h, _, err := db.LeaseHolder(ctx, "serve:x"); err != nil || h != "" {
			t.Fatalf("released lease: %q, %v", h, err)
		}
	})
}
