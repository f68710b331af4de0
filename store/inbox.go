package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/xconn/xconn/delivery"
)

func scanInbox(s interface{ Scan(...any) error }) (delivery.InboxRecord, error) {
	var r delivery.InboxRecord
	var at int64
	err := s.Scan(&r.Queue, &r.Channel, &r.MessageID, &r.Hash, &at)
	r.At = fromTS(at)
	return r, err
}

// InboxGet implements delivery.InboxStorage.
func (db *DB) InboxGet(ctx context.Context, queue, channel, messageID string) (delivery.InboxRecord, bool, error) {
	r, err := scanInbox(db.r.QueryRowContext(ctx, db.q(`SELECT queue, channel, message_id, hash, at FROM inbox
		WHERE queue = ? AND channel = ? AND message_id = ?`), queue, channel, messageID))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return delivery.InboxRecord{}, false, nil
	case err != nil:
		return delivery.InboxRecord{}, false, fmt.Errorf("store: inbox get: %w", err)
	}
	return r, true, nil
}

// InboxPut implements delivery.InboxStorage.
func (db *DB) InboxPut(ctx context.Context, r delivery.InboxRecord, maxPerChannel int) (delivery.InboxRecord, bool, error) {
	var existing delivery.InboxRecord
	var inserted bool
	err := db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, db.q(`INSERT INTO inbox (queue, channel, message_id, hash, at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (queue, channel, message_id) DO NOTHING`), r.Queue, r.Channel, r.MessageID, r.Hash, ts(r.At))
		if err != nil {
			return fmt.Errorf("store: inbox put: %w", err)
		}
		if inserted = affected(res) > 0; !inserted {
			existing, err = scanInbox(tx.QueryRowContext(ctx, db.q(`SELECT queue, channel, message_id, hash, at FROM inbox
				WHERE queue = ? AND channel = ? AND message_id = ?`), r.Queue, r.Channel, r.MessageID))
			if err != nil {
				return fmt.Errorf("store: inbox put: %w", err)
			}
			return nil
		}
		if maxPerChannel <= 0 {
			return nil
		}
		var n int
		if err := tx.QueryRowContext(ctx, db.q(`SELECT COUNT(*) FROM inbox WHERE queue = ? AND channel = ?`), r.Queue, r.Channel).Scan(&n); err != nil {
			return fmt.Errorf("store: inbox put: %w", err)
		}
		if n <= maxPerChannel {
			return nil
		}
		if _, err := tx.ExecContext(ctx, db.q(`DELETE FROM inbox WHERE queue = ? AND channel = ? AND message_id IN (
			SELECT message_id FROM inbox WHERE queue = ? AND channel = ? ORDER BY at DESC, message_id DESC `+db.offsetAll()+`)`),
			r.Queue, r.Channel, r.Queue, r.Channel, maxPerChannel); err != nil {
			return fmt.Errorf("store: inbox trim: %w", err)
		}
		return nil
	})
	return existing, inserted, err
}

// InboxPrune implements delivery.InboxStorage.
func (db *DB) InboxPrune(ctx context.Context, queue string, before time.Time) (int, error) {
	res, err := db.w.ExecContext(ctx, db.q(`DELETE FROM inbox WHERE queue = ? AND at < ?`), queue, ts(before))
	if err != nil {
		return 0, fmt.Errorf("store: inbox prune: %w", err)
	}
	return affected(res), nil
}

// InboxDeleteChannel implements delivery.InboxStorage.
func (db *DB) InboxDeleteChannel(ctx context.Context, queue, channel string) (int, error) {
	res, err := db.w.ExecContext(ctx, db.q(`DELETE FROM inbox WHERE queue = ? AND channel = ?`), queue, channel)
	if err != nil {
		return 0, fmt.Errorf("store: inbox delete channel: %w", err)
	}
	return affected(res), nil
}

// Compile-time checks of the interfaces *DB implements.
var (
	_ ConnectorStore   = (*DB)(nil)
	_ HostStore        = (*DB)(nil)
	_ Leaser           = (*DB)(nil)
	_ delivery.Storage = (*DB)(nil)
)
