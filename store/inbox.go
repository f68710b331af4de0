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
	r, err := scanInbox(rRow(ctx, db.r, &db.hot.rInbox, queue, channel, messageID))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return delivery.InboxRecord{}, false, nil
	case err != nil:
		return delivery.InboxRecord{}, false, fmt.Errorf("store: inbox get: %w", err)
	}
	return r, true, nil
}

// InboxPut implements delivery.InboxStorage (group committed on SQLite:
// it returns after the record is committed).
func (db *DB) InboxPut(ctx context.Context, r delivery.InboxRecord, maxPerChannel int) (delivery.InboxRecord, bool, error) {
	var existing delivery.InboxRecord
	var inserted bool
	err := db.batch(ctx, func(ctx context.Context, tx *sql.Tx) error {
		existing, inserted = delivery.InboxRecord{}, false
		res, err := txExec(ctx, tx, &db.hot.inInsert, r.Queue, r.Channel, r.MessageID, r.Hash, ts(r.At))
		if err != nil {
			return fmt.Errorf("store: inbox put: %w", err)
		}
		if inserted = affected(res) > 0; !inserted {
			existing, err = scanInbox(txRow(ctx, tx, &db.hot.inLookup, r.Queue, r.Channel, r.MessageID))
			if err != nil {
				return fmt.Errorf("store: inbox put: %w", err)
			}
			return nil
		}
		if maxPerChannel <= 0 {
			return nil
		}
		var n int
		if err := txRow(ctx, tx, &db.hot.inCount, r.Queue, r.Channel).Scan(&n); err != nil {
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

	_ delivery.OutboxHeadStorage       = (*DB)(nil)
	_ delivery.OutboxFinishNextStorage = (*DB)(nil)
)
