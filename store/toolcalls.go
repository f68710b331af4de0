package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// GetToolCall returns the record of a tool call id, or ErrNotFound.
func (db *DB) GetToolCall(ctx context.Context, cardID, channelID, toolCallID string) (ToolCall, error) {
	var tc ToolCall
	var created int64
	err := db.r.QueryRowContext(ctx, db.q(`SELECT card_id, channel_id, tool_call_id, tool_id, args_hash, result, err_code, err_message, created_at
		FROM tool_calls WHERE card_id = ? AND channel_id = ? AND tool_call_id = ?`), cardID, channelID, toolCallID).
		Scan(&tc.CardID, &tc.ChannelID, &tc.ToolCallID, &tc.ToolID, &tc.ArgsHash, &tc.Result, &tc.ErrCode, &tc.ErrMessage, &created)
	if err != nil {
		return ToolCall{}, notFound(err, "get tool call")
	}
	tc.CreatedAt = fromTS(created)
	return tc, nil
}

// PutToolCall stores a record; a second record for the same key fails with
// ErrConflict. To stay bounded it first drops the card's records older than
// Options.ToolCallAge and, at Options.MaxToolCalls, the oldest ones.
func (db *DB) PutToolCall(ctx context.Context, tc ToolCall) error {
	now := db.now()
	if tc.CreatedAt.IsZero() {
		tc.CreatedAt = now
	}
	return db.tx(ctx, func(tx *sql.Tx) error {
		if err := db.lock(ctx, tx, "tool_calls:"+tc.CardID); err != nil {
			return err
		}
		if _, err := db.pruneToolCalls(ctx, tx, tc.CardID, now.Add(-db.opts.ToolCallAge), db.opts.MaxToolCalls-1); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, db.q(`INSERT INTO tool_calls (card_id, channel_id, tool_call_id, tool_id, args_hash, result, err_code, err_message, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (card_id, channel_id, tool_call_id) DO NOTHING`),
			tc.CardID, tc.ChannelID, tc.ToolCallID, tc.ToolID, tc.ArgsHash, tc.Result, tc.ErrCode, tc.ErrMessage, ts(tc.CreatedAt))
		if err != nil {
			return fmt.Errorf("store: put tool call: %w", err)
		}
		if affected(res) == 0 {
			return fmt.Errorf("store: put tool call %s: %w", tc.ToolCallID, ErrConflict)
		}
		return nil
	})
}

// PruneToolCalls drops the card's records older than t and keeps at most
// max of them (the newest).
func (db *DB) PruneToolCalls(ctx context.Context, cardID string, t time.Time, max int) (int, error) {
	var n int
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		n, err = db.pruneToolCalls(ctx, tx, cardID, t, max)
		return err
	})
	return n, err
}

func (db *DB) pruneToolCalls(ctx context.Context, tx *sql.Tx, cardID string, t time.Time, keep int) (int, error) {
	res, err := tx.ExecContext(ctx, db.q(`DELETE FROM tool_calls WHERE card_id = ? AND created_at < ?`), cardID, ts(t))
	if err != nil {
		return 0, fmt.Errorf("store: prune tool calls: %w", err)
	}
	n := affected(res)
	keep = max(keep, 0)
	var count int
	if err := tx.QueryRowContext(ctx, db.q(`SELECT COUNT(*) FROM tool_calls WHERE card_id = ?`), cardID).Scan(&count); err != nil {
		return 0, fmt.Errorf("store: prune tool calls: %w", err)
	}
	if count <= keep {
		return n, nil
	}
	res, err = tx.ExecContext(ctx, db.q(`DELETE FROM tool_calls WHERE card_id = ? AND (channel_id, tool_call_id) IN (
		SELECT channel_id, tool_call_id FROM tool_calls WHERE card_id = ?
		ORDER BY created_at DESC, channel_id DESC, tool_call_id DESC `+db.offsetAll()+`)`), cardID, cardID, keep)
	if err != nil {
		return 0, fmt.Errorf("store: prune tool calls: %w", err)
	}
	return n + affected(res), nil
}
