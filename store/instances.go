package store

import (
	"context"
	"database/sql"
	"fmt"
)

// PutInstance inserts or updates a connector instance; a new instance
// beyond Options.MaxInstances per card fails with ErrLimit.
func (db *DB) PutInstance(ctx context.Context, in Instance) error {
	if in.CreatedAt.IsZero() {
		in.CreatedAt = db.now()
	}
	return db.tx(ctx, func(tx *sql.Tx) error {
		if err := db.lock(ctx, tx, "instances:"+in.CardID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, db.q(`UPDATE instances SET grace_until = ? WHERE card_id = ? AND connector_id = ?`),
			ts(in.GraceUntil), in.CardID, in.ConnectorID)
		if err != nil {
			return fmt.Errorf("store: put instance: %w", err)
		}
		if affected(res) > 0 {
			return nil
		}
		if err := db.checkCount(ctx, tx, `SELECT COUNT(*) FROM instances WHERE card_id = ?`, db.opts.MaxInstances, "instances", in.CardID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, db.q(`INSERT INTO instances (card_id, connector_id, created_at, grace_until) VALUES (?, ?, ?, ?)`),
			in.CardID, in.ConnectorID, ts(in.CreatedAt), ts(in.GraceUntil)); err != nil {
			return fmt.Errorf("store: put instance: %w", err)
		}
		return nil
	})
}

// checkCount fails with ErrLimit when the count query (with args) reaches
// limit.
func (db *DB) checkCount(ctx context.Context, tx *sql.Tx, query string, limit int, what string, args ...any) error {
	var n int
	if err := tx.QueryRowContext(ctx, db.q(query), args...).Scan(&n); err != nil {
		return fmt.Errorf("store: count %s: %w", what, err)
	}
	if n >= limit {
		return fmt.Errorf("store: %s: at most %d: %w", what, limit, ErrLimit)
	}
	return nil
}

const instanceCols = `card_id, connector_id, created_at, grace_until`

func scanInstance(s interface{ Scan(...any) error }) (Instance, error) {
	var in Instance
	var created, grace int64
	err := s.Scan(&in.CardID, &in.ConnectorID, &created, &grace)
	in.CreatedAt, in.GraceUntil = fromTS(created), fromTS(grace)
	return in, err
}

// GetInstance returns an instance or ErrNotFound.
func (db *DB) GetInstance(ctx context.Context, cardID, connectorID string) (Instance, error) {
	in, err := scanInstance(db.r.QueryRowContext(ctx, db.q(`SELECT `+instanceCols+` FROM instances WHERE card_id = ? AND connector_id = ?`), cardID, connectorID))
	if err != nil {
		return Instance{}, notFound(err, "get instance")
	}
	return in, nil
}

// ListInstances lists the instances of a card (at most MaxInstances),
// oldest first.
func (db *DB) ListInstances(ctx context.Context, cardID string) ([]Instance, error) {
	rows, err := db.r.QueryContext(ctx, db.q(`SELECT `+instanceCols+` FROM instances WHERE card_id = ? ORDER BY created_at, connector_id LIMIT ?`), cardID, db.opts.MaxInstances)
	if err != nil {
		return nil, fmt.Errorf("store: list instances: %w", err)
	}
	return collect(rows, scanInstance, "list instances")
}

// DeleteInstance removes an instance; its channels stay (they name their
// owner and are reassigned or deleted by the caller).
func (db *DB) DeleteInstance(ctx context.Context, cardID, connectorID string) error {
	_, err := db.w.ExecContext(ctx, db.q(`DELETE FROM instances WHERE card_id = ? AND connector_id = ?`), cardID, connectorID)
	if err != nil {
		return fmt.Errorf("store: delete instance: %w", err)
	}
	return nil
}

// collect scans every row with scan and closes rows.
func collect[T any](rows *sql.Rows, scan func(interface{ Scan(...any) error }) (T, error), what string) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("store: %s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	return out, nil
}
