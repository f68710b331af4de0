package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// AcquireLease takes or renews the lease name for holder until now+ttl in
// one statement, so two processes never both hold it. It reports false when
// another holder has an unexpired lease. More than Options.MaxLeases names
// fail with ErrLimit.
func (db *DB) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	now := db.now()
	var ok bool
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if err := db.lock(ctx, tx, "lease:"+name); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, db.q(`UPDATE leases SET holder = ?, expires_at = ? WHERE name = ? AND (holder = ? OR expires_at <= ?)`),
			holder, ts(now.Add(ttl)), name, holder, ts(now))
		if err != nil {
			return fmt.Errorf("store: acquire lease: %w", err)
		}
		if affected(res) > 0 {
			ok = true
			return nil
		}
		if _, err := tx.ExecContext(ctx, db.q(`DELETE FROM leases WHERE expires_at <= ?`), ts(now.Add(-time.Hour))); err != nil {
			return fmt.Errorf("store: acquire lease: %w", err)
		}
		if err := db.checkCount(ctx, tx, `SELECT COUNT(*) FROM leases`, db.opts.MaxLeases, "leases"); err != nil {
			return err
		}
		res, err = tx.ExecContext(ctx, db.q(`INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`),
			name, holder, ts(now.Add(ttl)))
		if err != nil {
			return fmt.Errorf("store: acquire lease: %w", err)
		}
		ok = affected(res) > 0
		return nil
	})
	return ok, err
}

// ReleaseLease gives up the lease if holder holds it.
func (db *DB) ReleaseLease(ctx context.Context, name, holder string) error {
	if _, err := db.w.ExecContext(ctx, db.q(`DELETE FROM leases WHERE name = ? AND holder = ?`), name, holder); err != nil {
		return fmt.Errorf("store: release lease: %w", err)
	}
	return nil
}
