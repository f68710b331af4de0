package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

const authCols = `card_id, id, channel_id, flow_id, status, expires_at, state, created_at, updated_at`

func stateAAD(cardID, id string) []byte { return aad("auth_sessions.state", cardID, id) }

// PutAuthSession inserts or updates a sign-in session; State is encrypted.
// A new session beyond Options.MaxAuthSessions per card first removes the
// card's expired sessions, then fails with ErrLimit.
func (db *DB) PutAuthSession(ctx context.Context, s AuthSession) error {
	now := db.now()
	if s.CreatedAt.IsZero() {
		s.CreatedAt = now
	}
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = now
	}
	state := db.aead.seal(s.State, stateAAD(s.CardID, s.ID))
	return db.tx(ctx, func(tx *sql.Tx) error {
		if err := db.lock(ctx, tx, "auth_sessions:"+s.CardID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, db.q(`UPDATE auth_sessions SET channel_id = ?, flow_id = ?, status = ?, expires_at = ?,
			state = ?, updated_at = ? WHERE card_id = ? AND id = ?`),
			s.ChannelID, s.FlowID, s.Status, ts(s.ExpiresAt), state, ts(s.UpdatedAt), s.CardID, s.ID)
		if err != nil {
			return fmt.Errorf("store: put auth session: %w", err)
		}
		if affected(res) > 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, db.q(`DELETE FROM auth_sessions WHERE card_id = ? AND expires_at < ?`), s.CardID, ts(now)); err != nil {
			return fmt.Errorf("store: put auth session: %w", err)
		}
		if err := db.checkCount(ctx, tx, `SELECT COUNT(*) FROM auth_sessions WHERE card_id = ?`, db.opts.MaxAuthSessions, "auth sessions", s.CardID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, db.q(`INSERT INTO auth_sessions (`+authCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			s.CardID, s.ID, s.ChannelID, s.FlowID, s.Status, ts(s.ExpiresAt), state, ts(s.CreatedAt), ts(s.UpdatedAt)); err != nil {
			return fmt.Errorf("store: put auth session: %w", err)
		}
		return nil
	})
}

// GetAuthSession returns a session (State decrypted) or ErrNotFound.
func (db *DB) GetAuthSession(ctx context.Context, cardID, id string) (AuthSession, error) {
	var s AuthSession
	var exp, created, updated int64
	var state []byte
	err := db.r.QueryRowContext(ctx, db.q(`SELECT `+authCols+` FROM auth_sessions WHERE card_id = ? AND id = ?`), cardID, id).
		Scan(&s.CardID, &s.ID, &s.ChannelID, &s.FlowID, &s.Status, &exp, &state, &created, &updated)
	if err != nil {
		return AuthSession{}, notFound(err, "get auth session")
	}
	s.ExpiresAt, s.CreatedAt, s.UpdatedAt = fromTS(exp), fromTS(created), fromTS(updated)
	if s.State, err = db.aead.open(state, stateAAD(s.CardID, s.ID)); err != nil {
		return AuthSession{}, err
	}
	return s, nil
}

// DeleteAuthSession removes a session (no error when absent).
func (db *DB) DeleteAuthSession(ctx context.Context, cardID, id string) error {
	if _, err := db.w.ExecContext(ctx, db.q(`DELETE FROM auth_sessions WHERE card_id = ? AND id = ?`), cardID, id); err != nil {
		return fmt.Errorf("store: delete auth session: %w", err)
	}
	return nil
}

// DeleteExpiredAuthSessions removes the card's sessions with ExpiresAt
// before t and returns how many.
func (db *DB) DeleteExpiredAuthSessions(ctx context.Context, cardID string, t time.Time) (int, error) {
	res, err := db.w.ExecContext(ctx, db.q(`DELETE FROM auth_sessions WHERE card_id = ? AND expires_at < ?`), cardID, ts(t))
	if err != nil {
		return 0, fmt.Errorf("store: delete expired auth sessions: %w", err)
	}
	return affected(res), nil
}
