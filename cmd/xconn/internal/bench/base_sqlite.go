package bench

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver, as in package store
)

// sqliteBatch is the batch size of the batched SQLite baseline.
const sqliteBatch = 64

// openBaselineSQLite opens path with the settings package store uses (WAL,
// synchronous NORMAL, one writer connection, immediate transactions).
func openBaselineSQLite(path string) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("bench: open sqlite: %w", err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS bench_outbox (
		channel TEXT NOT NULL, message_id TEXT NOT NULL, payload BLOB NOT NULL, created_at INTEGER NOT NULL,
		PRIMARY KEY (channel, message_id))`); err != nil {
		db.Close()
		return nil, fmt.Errorf("bench: create table: %w", err)
	}
	return db, nil
}

// runSQLite measures the physical limit of the durable queues: one insert
// and one delete per message, each in its own transaction, then both
// batched by sqliteBatch messages per transaction.
func runSQLite(ctx context.Context, cfg Config, _ *env) ([]Result, error) {
	dir, clean, err := scenarioDir(cfg, "sqlite")
	if err != nil {
		return nil, err
	}
	defer clean()
	db, err := openBaselineSQLite(filepath.Join(dir, "baseline.db"))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	payload := make([]byte, 200)
	seq := 0
	single := func(ctx context.Context, _ int) error {
		seq++
		id := "m" + strconv.Itoa(seq)
		if err := inTx(ctx, db, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO bench_outbox (channel, message_id, payload, created_at) VALUES (?, ?, ?, ?)`,
				"ch", id, payload, time.Now().UnixMilli())
			return err
		}); err != nil {
			return err
		}
		return inTx(ctx, db, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `DELETE FROM bench_outbox WHERE channel = ? AND message_id = ?`, "ch", id)
			return err
		})
	}
	m, err := runLoad(ctx, load{workers: 1, warmup: cfg.Warmup, duration: cfg.Duration, op: single})
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	one := m.result(nameSQLiteSingle, "msg/s")
	batch := func(ctx context.Context, _ int) error {
		ids := make([]string, sqliteBatch)
		for i := range ids {
			seq++
			ids[i] = "m" + strconv.Itoa(seq)
		}
		if err := inTx(ctx, db, func(tx *sql.Tx) error {
			for _, id := range ids {
				if _, err := tx.ExecContext(ctx, `INSERT INTO bench_outbox (channel, message_id, payload, created_at) VALUES (?, ?, ?, ?)`,
					"ch", id, payload, time.Now().UnixMilli()); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
		return inTx(ctx, db, func(tx *sql.Tx) error {
			for _, id := range ids {
				if _, err := tx.ExecContext(ctx, `DELETE FROM bench_outbox WHERE channel = ? AND message_id = ?`, "ch", id); err != nil {
					return err
				}
			}
			return nil
		})
	}
	m, err = runLoad(ctx, load{workers: 1, warmup: cfg.Warmup, duration: cfg.Duration, op: batch})
	if err != nil {
		return nil, fmt.Errorf("sqlite batch: %w", err)
	}
	// One op moved sqliteBatch messages: report per message.
	m.ops *= sqliteBatch
	m.hist = Histogram{}
	bat := m.result(nameSQLiteBatch, "msg/s")
	return []Result{one, bat}, nil
}

func inTx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("bench: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return fmt.Errorf("bench: sqlite: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("bench: commit: %w", err)
	}
	return nil
}
