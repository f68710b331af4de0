package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the numbered migrations of a dialect directory
// (NNNN_name.sql), in order.
func migrations(dir string) ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, dir)
	if err != nil {
		return nil, fmt.Errorf("store: migrations: %w", err)
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("store: migration %q is not named NNNN_name.sql", e.Name())
		}
		data, err := fs.ReadFile(migrationFS, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("store: migration %s: %w", e.Name(), err)
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(data)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// migrate applies the pending migrations, each in its own transaction
// together with its schema_migrations row. Two processes starting at once
// are serialised by BEGIN IMMEDIATE (SQLite) or an advisory lock
// (PostgreSQL); the second finds the work done.
func (db *DB) migrate(ctx context.Context) error {
	dir := "migrations/sqlite"
	if db.dialect == dialectPostgres {
		dir = "migrations/postgres"
	}
	list, err := migrations(dir)
	if err != nil {
		return err
	}
	return db.tx(ctx, func(tx *sql.Tx) error {
		if err := db.lockMigrations(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
			return fmt.Errorf("store: create schema_migrations: %w", err)
		}
		var current int
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
			return fmt.Errorf("store: read schema version: %w", err)
		}
		if err := checkSchemaNotNewer(current, list); err != nil {
			return err
		}
		for _, m := range list {
			if m.version <= current {
				continue
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("store: migration %s: %w", m.name, err)
			}
			if _, err := tx.ExecContext(ctx, db.q(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`),
				m.version, m.name, ts(db.now())); err != nil {
				return fmt.Errorf("store: record migration %s: %w", m.name, err)
			}
		}
		return nil
	})
}

// SchemaVersion returns the highest applied migration.
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := db.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("store: schema version: %w", err)
	}
	return v, nil
}

// lockMigrations serialises migrations of one schema across processes
// (PostgreSQL; SQLite's BEGIN IMMEDIATE already does).
func (db *DB) lockMigrations(ctx context.Context, tx *sql.Tx) error {
	if db.dialect != dialectPostgres {
		return nil
	}
	var schema string
	if err := tx.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return fmt.Errorf("store: current schema: %w", err)
	}
	return db.lock(ctx, tx, "xconn schema migrations:"+schema)
}
