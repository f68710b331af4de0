package store

import (
	"context"
	"database/sql"
	"fmt"
)

const channelCols = `card_id, channel_id, connector_id, status, flow_id, binding, display_name, account_hint, created_at, updated_at`

func (db *DB) bindingAAD(cardID, channelID string) []byte {
	return aad("channels.binding", cardID, channelID)
}

// PutChannel inserts or updates a channel (keeping CreatedAt of an existing
// one); a new channel beyond Options.MaxChannels per card fails with
// ErrLimit. Binding is encrypted. On SQLite the write goes through the
// group committer, so concurrent PutChannel calls (and the delivery
// engine's writes) share one commit.
func (db *DB) PutChannel(ctx context.Context, ch Channel) error {
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
		res, err := tx.ExecContext(ctx, db.q(`UPDATE channels SET connector_id = ?, status = ?, flow_id = ?, binding = ?,
			display_name = ?, account_hint = ?, updated_at = ? WHERE card_id = ? AND channel_id = ?`),
			ch.ConnectorID, ch.Status, ch.FlowID, binding, ch.DisplayName, ch.AccountHint, ts(ch.UpdatedAt), ch.CardID, ch.ChannelID)
		if err != nil {
			return fmt.Errorf("store: put channel: %w", err)
		}
		if affected(res) > 0 {
			return nil
		}
		return db.insertChannel(ctx, tx, st, ch, binding)
	})
}

func (db *DB) scanChannel(s interface{ Scan(...any) error }) (Channel, error) {
	var ch Channel
	var created, updated int64
	var binding []byte
	if err := s.Scan(&ch.CardID, &ch.ChannelID, &ch.ConnectorID, &ch.Status, &ch.FlowID, &binding,
		&ch.DisplayName, &ch.AccountHint, &created, &updated); err != nil {
		return Channel{}, err
	}
	ch.CreatedAt, ch.UpdatedAt = fromTS(created), fromTS(updated)
	plain, err := db.aead.open(binding, db.bindingAAD(ch.CardID, ch.ChannelID))
	if err != nil {
		return Channel{}, err
	}
	ch.Binding = plain
	return ch, nil
}

// GetChannel returns a channel (Binding decrypted) or ErrNotFound.
func (db *DB) GetChannel(ctx context.Context, cardID, channelID string) (Channel, error) {
	ch, err := db.scanChannel(db.r.QueryRowContext(ctx, db.q(`SELECT `+channelCols+` FROM channels WHERE card_id = ? AND channel_id = ?`), cardID, channelID))
	if err != nil {
		return Channel{}, notFound(err, "get channel")
	}
	return ch, nil
}

// ListChannels lists the channels of one instance, or all of the card when
// connectorID is "", oldest first; bounded by Options.MaxChannels.
func (db *DB) ListChannels(ctx context.Context, cardID, connectorID string) ([]Channel, error) {
	query := `SELECT ` + channelCols + ` FROM channels WHERE card_id = ?`
	args := []any{cardID}
	if connectorID != "" {
		query += ` AND connector_id = ?`
		args = append(args, connectorID)
	}
	query += ` ORDER BY created_at, channel_id LIMIT ?`
	args = append(args, db.opts.MaxChannels)
	rows, err := db.r.QueryContext(ctx, db.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("store: list channels: %w", err)
	}
	return collect(rows, db.scanChannel, "list channels")
}

// DeleteChannel removes a channel with its auth sessions, tool-call records,
// file records and key/value state, in one transaction. The state goes after
// the channel's row: on PostgreSQL that delete waits for a PutChannelState
// holding the row's lock, so the state it wrote is seen and removed.
func (db *DB) DeleteChannel(ctx context.Context, cardID, channelID string) error {
	return db.tx(ctx, func(tx *sql.Tx) error {
		for _, table := range []string{"auth_sessions", "tool_calls", "files", "channels", "channel_state"} {
			if _, err := tx.ExecContext(ctx, db.q(`DELETE FROM `+table+` WHERE card_id = ? AND channel_id = ?`), cardID, channelID); err != nil {
				return fmt.Errorf("store: delete channel (%s): %w", table, err)
			}
		}
		return nil
	})
}
