package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// SchemaError is returned by Open when the database's schema is newer
// than this binary's migrations: a newer xconn has migrated it, and
// migrations are forward-only, so this binary refuses to run on it rather
// than misread it. Upgrade the binary (or restore a backup taken before
// the upgrade).
type SchemaError struct {
	Database int // highest migration applied to the database
	Binary   int // highest migration this binary knows
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("store: the database schema is at migration %d, newer than this binary's %d: "+
		"a newer xconn has migrated it and migrations are forward-only; run that version or newer", e.Database, e.Binary)
}

// LatestSchemaVersion returns the highest migration this binary applies
// for dialect ("sqlite" or "postgres").
func LatestSchemaVersion(dialect string) (int, error) {
	dir := "migrations/sqlite"
	if dialect == "postgres" {
		dir = "migrations/postgres"
	}
	list, err := migrations(dir)
	if err != nil {
		return 0, err
	}
	if len(list) == 0 {
		return 0, nil
	}
	return list[len(list)-1].version, nil
}

// checkSchemaNotNewer returns a *SchemaError when current is past the last
// of list (the binary's migrations).
func checkSchemaNotNewer(current int, list []migration) error {
	latest := 0
	if len(list) > 0 {
		latest = list[len(list)-1].version
	}
	if current > latest {
		return &SchemaError{Database: current, Binary: latest}
	}
	return nil
}

// ErrMigrationsPending is returned by CheckSchema when the database is
// behind this binary's migrations (another process is migrating it, or a
// migration failed).
var ErrMigrationsPending = errors.New("store: migrations pending")

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.r.PingContext(ctx); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	return nil
}

// CheckSchema reports whether the database is at exactly this binary's
// schema: nil when it is, an error wrapping ErrMigrationsPending when it
// is behind, a *SchemaError when it is newer, or the store's error.
func (db *DB) CheckSchema(ctx context.Context) error {
	latest, err := LatestSchemaVersion(db.Dialect())
	if err != nil {
		return err
	}
	v, err := db.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	switch {
	case v < latest:
		return fmt.Errorf("%w: the database is at migration %d, this binary needs %d", ErrMigrationsPending, v, latest)
	case v > latest:
		return &SchemaError{Database: v, Binary: latest}
	}
	return nil
}

// LeaseHolder returns the holder of the lease name and when it expires,
// or "" when nobody holds it unexpired.
func (db *DB) LeaseHolder(ctx context.Context, name string) (string, time.Time, error) {
	var holder string
	var exp int64
	err := db.r.QueryRowContext(ctx, db.q(`SELECT holder, expires_at FROM leases WHERE name = ? AND expires_at > ?`),
		name, ts(db.now())).Scan(&holder, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("store: lease holder: %w", err)
	}
	return holder, fromTS(exp), nil
}
