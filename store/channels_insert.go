package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Inserting a channel checks Options.MaxChannels. Counting the card's
// channels costs a scan of its index entries, which grows with the table;
// on SQLite the count runs only when the table could hold too many rows:
// rowids are distinct positive integers (this package never sets them) and
// a new row takes the largest one, so the table holds at most the new
// row's rowid rows. The insert reports that rowid; at or below the bound
// the check is exact without counting, above it the count decides and a
// failed check fails the transaction, which the caller rolls back. The
// insert is prepared once when the DB holds a channelHot (see
// channels_hot.go), else SQLite prepares it again on every call.

// sqlInsertChannelSQLite inserts a channel (its rowid is the result's
// LastInsertId).
const sqlInsertChannelSQLite = `INSERT INTO channels (` + channelCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// CreateChannel inserts a new channel: what PutChannel does for an id that
// is not stored yet, in one statement on SQLite (group committed with the
// writes in flight). It fails with ErrConflict when the id is taken and
// with ErrLimit beyond Options.MaxChannels per card.
func (db *DB) CreateChannel(ctx context.Context, ch Channel) error {
	now := db.now()
	if ch.CreatedAt.IsZero() {
		ch.CreatedAt = now
	}
	if ch.UpdatedAt.IsZero() {
		ch.UpdatedAt = now
	}
	binding := db.aead.seal(ch.Binding, db.bindingAAD(ch.CardID, ch.ChannelID))
	st := db.channelInsertStmt(ctx)
	return db.batch(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := db.lock(ctx, tx, "channels:"+ch.CardID); err != nil {
			return err
		}
		if db.dialect == dialectPostgres {
			// Under the card's lock: check the id, then count and insert.
			if err := db.channelFree(ctx, tx, ch); err != nil {
				return err
			}
			return db.insertChannel(ctx, tx, st, ch, binding)
		}
		err := db.insertChannel(ctx, tx, st, ch, binding)
		if err != nil && !errors.Is(err, ErrLimit) {
			// A taken id fails the insert (primary key): say so.
			if ferr := db.channelFree(ctx, tx, ch); ferr != nil {
				return ferr
			}
		}
		return err
	})
}

// channelFree fails with ErrConflict when ch's id is stored.
func (db *DB) channelFree(ctx context.Context, tx *sql.Tx, ch Channel) error {
	var one int
	err := tx.QueryRowContext(ctx, db.q(`SELECT 1 FROM channels WHERE card_id = ? AND channel_id = ?`), ch.CardID, ch.ChannelID).Scan(&one)
	switch {
	case err == nil:
		return fmt.Errorf("store: create channel %s: %w", ch.ChannelID, ErrConflict)
	case errors.Is(err, sql.ErrNoRows):
		return nil
	default:
		return fmt.Errorf("store: create channel: %w", err)
	}
}

// insertChannel inserts the new channel ch (binding already sealed) in tx,
// failing with ErrLimit when the card holds Options.MaxChannels channels;
// st is db.channelInsertStmt's, taken before tx began (nil: by text).
// On an error the caller must roll tx back.
func (db *DB) insertChannel(ctx context.Context, tx *sql.Tx, st *sql.Stmt, ch Channel, binding []byte) error {
	if db.dialect == dialectSQLite {
		res, err := execInsertChannel(ctx, tx, st,
			ch.CardID, ch.ChannelID, ch.ConnectorID, ch.Status, ch.FlowID, binding, ch.DisplayName, ch.AccountHint,
			ts(ch.CreatedAt), ts(ch.UpdatedAt))
		if err != nil {
			return fmt.Errorf("store: put channel: %w", err)
		}
		if rowid, err := res.LastInsertId(); err == nil && rowid <= int64(db.opts.MaxChannels) {
			return nil
		}
		// Counted with the new row: at most MaxChannels may be stored.
		return db.checkCount(ctx, tx, `SELECT COUNT(*) - 1 FROM channels WHERE card_id = ?`, db.opts.MaxChannels, "channels", ch.CardID)
	}
	if err := db.checkCount(ctx, tx, `SELECT COUNT(*) FROM channels WHERE card_id = ?`, db.opts.MaxChannels, "channels", ch.CardID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, db.q(`INSERT INTO channels (`+channelCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		ch.CardID, ch.ChannelID, ch.ConnectorID, ch.Status, ch.FlowID, binding, ch.DisplayName, ch.AccountHint,
		ts(ch.CreatedAt), ts(ch.UpdatedAt)); err != nil {
		return fmt.Errorf("store: put channel: %w", err)
	}
	return nil
}
