package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

const userChannelCols = `id, user_id, card_id, channel_id, session_id, authenticated, descriptor, created_at, updated_at`

// PutUserChannel inserts or updates by ID (keeping CreatedAt). A second
// record with the same (UserID, CardID, ChannelID) fails with ErrConflict;
// a new record beyond Options.MaxUserChannels with ErrLimit.
func (db *DB) PutUserChannel(ctx context.Context, uc UserChannel) error {
	now := db.now()
	if uc.CreatedAt.IsZero() {
		uc.CreatedAt = now
	}
	if uc.UpdatedAt.IsZero() {
		uc.UpdatedAt = now
	}
	return db.tx(ctx, func(tx *sql.Tx) error {
		if err := db.lock(ctx, tx, "user_channels"); err != nil {
			return err
		}
		var other string
		err := tx.QueryRowContext(ctx, db.q(`SELECT id FROM user_channels WHERE user_id = ? AND card_id = ? AND channel_id = ? AND id <> ?`),
			uc.UserID, uc.CardID, uc.ChannelID, uc.ID).Scan(&other)
		switch {
		case err == nil:
			return fmt.Errorf("store: put user channel: (user, card, channel) taken by %s: %w", other, ErrConflict)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("store: put user channel: %w", err)
		}
		res, err := tx.ExecContext(ctx, db.q(`UPDATE user_channels SET user_id = ?, card_id = ?, channel_id = ?, session_id = ?,
			authenticated = ?, descriptor = ?, updated_at = ? WHERE id = ?`),
			uc.UserID, uc.CardID, uc.ChannelID, uc.SessionID, b2i(uc.Authenticated), uc.Descriptor, ts(uc.UpdatedAt), uc.ID)
		if err != nil {
			return fmt.Errorf("store: put user channel: %w", err)
		}
		if affected(res) > 0 {
			return nil
		}
		if err := db.checkCount(ctx, tx, `SELECT COUNT(*) FROM user_channels`, db.opts.MaxUserChannels, "user channels"); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, db.q(`INSERT INTO user_channels (`+userChannelCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			uc.ID, uc.UserID, uc.CardID, uc.ChannelID, uc.SessionID, b2i(uc.Authenticated), uc.Descriptor, ts(uc.CreatedAt), ts(uc.UpdatedAt)); err != nil {
			return fmt.Errorf("store: put user channel: %w", err)
		}
		return nil
	})
}

func scanUserChannel(s interface{ Scan(...any) error }) (UserChannel, error) {
	var uc UserChannel
	var auth, created, updated int64
	err := s.Scan(&uc.ID, &uc.UserID, &uc.CardID, &uc.ChannelID, &uc.SessionID, &auth, &uc.Descriptor, &created, &updated)
	uc.Authenticated, uc.CreatedAt, uc.UpdatedAt = auth != 0, fromTS(created), fromTS(updated)
	return uc, err
}

// GetUserChannel returns a record by ID or ErrNotFound.
func (db *DB) GetUserChannel(ctx context.Context, id string) (UserChannel, error) {
	uc, err := scanUserChannel(db.r.QueryRowContext(ctx, db.q(`SELECT `+userChannelCols+` FROM user_channels WHERE id = ?`), id))
	if err != nil {
		return UserChannel{}, notFound(err, "get user channel")
	}
	return uc, nil
}

// FindUserChannel returns the record of (userID, cardID, channelID) or
// ErrNotFound.
func (db *DB) FindUserChannel(ctx context.Context, userID, cardID, channelID string) (UserChannel, error) {
	uc, err := scanUserChannel(db.r.QueryRowContext(ctx, db.q(`SELECT `+userChannelCols+` FROM user_channels
		WHERE user_id = ? AND card_id = ? AND channel_id = ?`), userID, cardID, channelID))
	if err != nil {
		return UserChannel{}, notFound(err, "find user channel")
	}
	return uc, nil
}

// ListUserChannels lists by user and card (userID "" lists every user's
// channels of the card), ordered by CreatedAt then ID, bounded by
// Options.MaxUserChannels.
func (db *DB) ListUserChannels(ctx context.Context, userID, cardID string) ([]UserChannel, error) {
	query := `SELECT ` + userChannelCols + ` FROM user_channels WHERE card_id = ?`
	args := []any{cardID}
	if userID != "" {
		query += ` AND user_id = ?`
		args = append(args, userID)
	}
	query += ` ORDER BY created_at, id LIMIT ?`
	args = append(args, db.opts.MaxUserChannels)
	rows, err := db.r.QueryContext(ctx, db.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("store: list user channels: %w", err)
	}
	return collect(rows, scanUserChannel, "list user channels")
}

// DeleteUserChannel removes a record and the conversation memory keyed by
// its ID (no error when absent).
func (db *DB) DeleteUserChannel(ctx context.Context, id string) error {
	return db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, db.q(`DELETE FROM user_channels WHERE id = ?`), id); err != nil {
			return fmt.Errorf("store: delete user channel: %w", err)
		}
		if _, err := tx.ExecContext(ctx, db.q(`DELETE FROM conversation_memory WHERE conversation = ?`), id); err != nil {
			return fmt.Errorf("store: delete user channel: memory: %w", err)
		}
		return nil
	})
}
