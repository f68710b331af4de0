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
	if err := ctx.Err(); err != nil {
		return delivery.InboxRecord{}, false, err
	}
	// Combined with the lookups of other callers (readgroup.go); like
	// every point read of the hot path, not cancelled once started.
	r, ok, err := db.inGet.get(inboxKey{queue, channel, messageID})
	if err != nil {
		return delivery.InboxRecord{}, false, fmt.Errorf("store: inbox get: %w", err)
	}
	return r, ok, nil
}

// InboxPut implements delivery.InboxStorage (group committed on SQLite,
// where the puts of one batch share their statements: it returns after
// the record is committed). Table inbox_counts keeps each channel's record
// count, so that the bound is checked by one row.
func (db *DB) InboxPut(ctx context.Context, r delivery.InboxRecord, maxPerChannel int) (delivery.InboxRecord, bool, error) {
	req := inboxReq{r: r, max: maxPerChannel}
	one := func(ctx context.Context, tx *sql.Tx) error { return db.inboxPutOne(ctx, tx, &req) }
	var err error
	if db.gc == nil {
		err = db.batch(ctx, one)
	} else {
		err = db.gc.doOp(ctx, one, &gcGroups{inb: &req})
	}
	return req.existing, req.inserted, err
}

// inboxPutOne is one InboxPut in tx.
func (db *DB) inboxPutOne(ctx context.Context, tx *sql.Tx, req *inboxReq) error {
	r := req.r
	req.existing, req.inserted = delivery.InboxRecord{}, false
	res, err := txExec(ctx, tx, &db.hot.inInsert, r.Queue, r.Channel, r.MessageID, r.Hash, ts(r.At))
	if err != nil {
		return fmt.Errorf("store: inbox put: %w", err)
	}
	if req.inserted = affected(res) > 0; !req.inserted {
		req.existing, err = scanInbox(txRow(ctx, tx, &db.hot.inLookup, r.Queue, r.Channel, r.MessageID))
		if err != nil {
			return fmt.Errorf("store: inbox put: %w", err)
		}
		return nil
	}
	var n int
	if err := txRow(ctx, tx, &db.hot.inCountUp, r.Queue, r.Channel).Scan(&n); err != nil {
		return fmt.Errorf("store: inbox put: count: %w", err)
	}
	if req.max <= 0 || n <= req.max {
		return nil
	}
	return db.inboxTrim(ctx, tx, r.Queue, r.Channel, n-req.max)
}

// inboxTrim deletes the excess oldest records of a channel and lowers its
// count by what it deleted.
func (db *DB) inboxTrim(ctx context.Context, tx *sql.Tx, queue, channel string, excess int) error {
	res, err := txExec(ctx, tx, &db.hot.inTrim, queue, channel, queue, channel, excess)
	if err != nil {
		return fmt.Errorf("store: inbox trim: %w", err)
	}
	if k := affected(res); k > 0 {
		if _, err := txExec(ctx, tx, &db.hot.inCountSub, k, queue, channel); err != nil {
			return fmt.Errorf("store: inbox trim: count: %w", err)
		}
	}
	return nil
}

// InboxPrune implements delivery.InboxStorage. It lowers the counts of the
// channels it deleted from and forgets the channels left empty.
func (db *DB) InboxPrune(ctx context.Context, queue string, before time.Time) (int, error) {
	var n int
	err := db.tx(ctx, func(tx *sql.Tx) error {
		n = 0
		rows, err := tx.QueryContext(ctx, db.q(`DELETE FROM inbox WHERE queue = ? AND at < ? RETURNING channel`), queue, ts(before))
		if err != nil {
			return fmt.Errorf("store: inbox prune: %w", err)
		}
		per := map[string]int{}
		for rows.Next() {
			var ch string
			if err := rows.Scan(&ch); err != nil {
				rows.Close()
				return fmt.Errorf("store: inbox prune: %w", err)
			}
			per[ch]++
			n++
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("store: inbox prune: %w", err)
		}
		if n == 0 {
			return nil
		}
		for ch, k := range per {
			if _, err := txExec(ctx, tx, &db.hot.inCountSub, k, queue, ch); err != nil {
				return fmt.Errorf("store: inbox prune: count: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, db.q(`DELETE FROM inbox_counts WHERE queue = ? AND n <= 0`), queue); err != nil {
			return fmt.Errorf("store: inbox prune: count: %w", err)
		}
		return nil
	})
	return n, err
}

// InboxDeleteChannel implements delivery.InboxStorage.
func (db *DB) InboxDeleteChannel(ctx context.Context, queue, channel string) (int, error) {
	var n int
	err := db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, db.q(`DELETE FROM inbox WHERE queue = ? AND channel = ?`), queue, channel)
		if err != nil {
			return fmt.Errorf("store: inbox delete channel: %w", err)
		}
		n = affected(res)
		if _, err := tx.ExecContext(ctx, db.q(`DELETE FROM inbox_counts WHERE queue = ? AND channel = ?`), queue, channel); err != nil {
			return fmt.Errorf("store: inbox delete channel: count: %w", err)
		}
		return nil
	})
	return n, err
}

// Compile-time checks of the interfaces *DB implements.
var (
	_ ConnectorStore   = (*DB)(nil)
	_ HostStore        = (*DB)(nil)
	_ Leaser           = (*DB)(nil)
	_ delivery.Storage = (*DB)(nil)

	_ delivery.OutboxHeadStorage       = (*DB)(nil)
	_ delivery.OutboxFinishNextStorage = (*DB)(nil)
	_ delivery.OutboxAfterStorage      = (*DB)(nil)
)
