package bench

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, as in package store
)

// isPostgres reports whether dsn names a PostgreSQL server.
func isPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// pgSchema creates a schema of its own on the server of base and returns
// a DSN whose search_path is that schema, and a function that drops it.
func pgSchema(ctx context.Context, base, prefix string) (string, func(), error) {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := prefix + hex.EncodeToString(b)
	admin, err := sql.Open("pgx", base)
	if err != nil {
		return "", nil, fmt.Errorf("bench: postgres: %w", err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", nil, fmt.Errorf("bench: postgres: create schema: %w", err)
	}
	drop := func() {
		admin, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer admin.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = admin.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE")
	}
	u, err := url.Parse(base)
	if err != nil {
		drop()
		return "", nil, fmt.Errorf("bench: postgres DSN: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), drop, nil
}

// runPostgres measures the raw PostgreSQL baselines when Config.Store is a
// PostgreSQL DSN (no rows otherwise): one insert and one delete per
// message, each in its own transaction, then both batched by sqliteBatch
// messages per transaction, on a table shaped like the SQLite baseline's.
func runPostgres(ctx context.Context, cfg Config, _ *env) ([]Result, error) {
	if !isPostgres(cfg.Store) {
		return nil, nil
	}
	dsn, drop, err := pgSchema(ctx, cfg.Store, "xconn_bench_base_")
	if err != nil {
		return nil, err
	}
	defer drop()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("bench: postgres: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE bench_outbox (
		channel TEXT NOT NULL, message_id TEXT NOT NULL, payload BYTEA NOT NULL, created_at BIGINT NOT NULL,
		PRIMARY KEY (channel, message_id))`); err != nil {
		return nil, fmt.Errorf("bench: postgres: create table: %w", err)
	}
	const ins = `INSERT INTO bench_outbox (channel, message_id, payload, created_at) VALUES ($1, $2, $3, $4)`
	const del = `DELETE FROM bench_outbox WHERE channel = $1 AND message_id = $2`
	payload := make([]byte, 200)
	seq := 0
	single := func(ctx context.Context, _ int) error {
		seq++
		id := "m" + strconv.Itoa(seq)
		if err := inTx(ctx, db, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, ins, "ch", id, payload, time.Now().UnixMilli())
			return err
		}); err != nil {
			return err
		}
		return inTx(ctx, db, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, del, "ch", id)
			return err
		})
	}
	m, err := runLoad(ctx, load{workers: 1, warmup: cfg.Warmup, duration: cfg.Duration, op: single})
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	one := m.result(namePGSingle, "msg/s")
	batch := func(ctx context.Context, _ int) error {
		ids := make([]string, sqliteBatch)
		for i := range ids {
			seq++
			ids[i] = "m" + strconv.Itoa(seq)
		}
		if err := inTx(ctx, db, func(tx *sql.Tx) error {
			for _, id := range ids {
				if _, err := tx.ExecContext(ctx, ins, "ch", id, payload, time.Now().UnixMilli()); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
		return inTx(ctx, db, func(tx *sql.Tx) error {
			for _, id := range ids {
				if _, err := tx.ExecContext(ctx, del, "ch", id); err != nil {
					return err
				}
			}
			return nil
		})
	}
	m, err = runLoad(ctx, load{workers: 1, warmup: cfg.Warmup, duration: cfg.Duration, op: batch})
	if err != nil {
		return nil, fmt.Errorf("postgres batch: %w", err)
	}
	m.ops *= sqliteBatch
	m.hist = Histogram{}
	bat := m.result(namePGBatch, "msg/s")
	return []Result{one, bat}, nil
}
