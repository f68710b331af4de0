package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bounds of a channel's key/value state (see [ConnectorStore.PutChannelState]).
// They are fixed: the state is what a connector must remember across
// restarts (reply context tokens, poll offsets, the last chat), not a
// general-purpose store.
const (
	// MaxChannelStateKeys is the number of keys one channel may hold.
	MaxChannelStateKeys = 64
	// MaxChannelStateKeyBytes is the length of a key, in bytes.
	MaxChannelStateKeyBytes = 128
	// MaxChannelStateValueBytes is the length of a value, in bytes (16 KiB).
	MaxChannelStateValueBytes = 16 << 10
	// MaxChannelStateBytes bounds the whole state of one channel (64 KiB):
	// the sum over its keys of len(key) + len(value), in bytes, plaintext.
	MaxChannelStateBytes = 64 << 10
)

// ErrChannelStateFull is matched (errors.Is) by the error of a
// PutChannelState that would exceed one of the MaxChannelState* bounds; the
// error is a [*ChannelStateLimitError], which also matches ErrLimit.
var ErrChannelStateFull = errors.New("store: channel state full")

// ErrChannelStateKey is returned (wrapped) for an invalid channel state key:
// empty, not valid UTF-8, or holding a NUL byte.
var ErrChannelStateKey = errors.New("store: invalid channel state key")

// Channel state bounds named in a [ChannelStateLimitError].
const (
	BoundChannelStateKeys       = "keys"        // MaxChannelStateKeys
	BoundChannelStateKeyBytes   = "key bytes"   // MaxChannelStateKeyBytes
	BoundChannelStateValueBytes = "value bytes" // MaxChannelStateValueBytes
	BoundChannelStateBytes      = "total bytes" // MaxChannelStateBytes
)

// ChannelStateLimitError reports a PutChannelState refused by a bound; the
// channel's state is unchanged. It matches ErrChannelStateFull and ErrLimit.
type ChannelStateLimitError struct {
	Bound string // one of the BoundChannelState* names
	Limit int    // the bound's value
	Got   int    // the count or size the Put would have made
}

func (e *ChannelStateLimitError) Error() string {
	return fmt.Sprintf("store: channel state full: %s %d, at most %d", e.Bound, e.Got, e.Limit)
}

// Is makes errors.Is(err, ErrChannelStateFull) and errors.Is(err, ErrLimit)
// hold.
func (e *ChannelStateLimitError) Is(target error) bool {
	return target == ErrChannelStateFull || target == ErrLimit
}

func stateValueAAD(cardID, channelID, key string) []byte {
	return aad("channel_state.value", cardID, channelID, key)
}

// checkStateKey fails with ErrChannelStateKey for a key that is empty, not
// UTF-8 (PostgreSQL TEXT would refuse it) or holds a NUL byte (which
// separates the parts of the additional data).
func checkStateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty", ErrChannelStateKey)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: not UTF-8", ErrChannelStateKey)
	case strings.IndexByte(key, 0) >= 0:
		return fmt.Errorf("%w: holds a NUL byte", ErrChannelStateKey)
	}
	return nil
}

// PutChannelState sets key to value in the state of an existing channel
// (ErrNotFound otherwise). The value is encrypted at rest like a binding;
// nil is stored as empty. A Put that would exceed a MaxChannelState* bound
// fails with a [*ChannelStateLimitError] (errors.Is ErrChannelStateFull)
// and changes nothing; overwriting a key is measured with its new size.
//
// The bounds hold under concurrent Puts, also from several processes: the
// count and the check run in the write transaction, which on PostgreSQL
// first locks the channel's row (SELECT ... FOR UPDATE, which also orders
// the Put against a DeleteChannel) and on SQLite is the single writer's
// (BEGIN IMMEDIATE, group committed).
func (db *DB) PutChannelState(ctx context.Context, cardID, channelID, key string, value []byte) error {
	if err := checkStateKey(key); err != nil {
		return fmt.Errorf("store: put channel state: %w", err)
	}
	if len(key) > MaxChannelStateKeyBytes {
		return fmt.Errorf("store: put channel state: %w",
			&ChannelStateLimitError{Bound: BoundChannelStateKeyBytes, Limit: MaxChannelStateKeyBytes, Got: len(key)})
	}
	if len(value) > MaxChannelStateValueBytes {
		return fmt.Errorf("store: put channel state %q: %w", key,
			&ChannelStateLimitError{Bound: BoundChannelStateValueBytes, Limit: MaxChannelStateValueBytes, Got: len(value)})
	}
	if value == nil {
		value = []byte{}
	}
	size := int64(len(key) + len(value))
	sealed := db.aead.seal(value, stateValueAAD(cardID, channelID, key))
	now := ts(db.now())
	return db.batch(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := db.lockChannelRow(ctx, tx, cardID, channelID); err != nil {
			return fmt.Errorf("store: put channel state: %w", err)
		}
		// old is the stored size of key, 0 when absent (a size counts the
		// key, so a stored key's is at least 1).
		var n, total, old int64
		if err := tx.QueryRowContext(ctx, db.q(`SELECT COUNT(*), COALESCE(CAST(SUM(size) AS BIGINT), 0),
			COALESCE(MAX(CASE WHEN state_key = ? THEN size END), 0)
			FROM channel_state WHERE card_id = ? AND channel_id = ?`), key, cardID, channelID).Scan(&n, &total, &old); err != nil {
			return fmt.Errorf("store: put channel state: count: %w", err)
		}
		if old == 0 {
			n++
		}
		if n > MaxChannelStateKeys {
			return fmt.Errorf("store: put channel state %q: %w", key,
				&ChannelStateLimitError{Bound: BoundChannelStateKeys, Limit: MaxChannelStateKeys, Got: int(n)})
		}
		if total = total - old + size; total > MaxChannelStateBytes {
			return fmt.Errorf("store: put channel state %q: %w", key,
				&ChannelStateLimitError{Bound: BoundChannelStateBytes, Limit: MaxChannelStateBytes, Got: int(total)})
		}
		if _, err := tx.ExecContext(ctx, db.q(`INSERT INTO channel_state (card_id, channel_id, state_key, value, size, updated_at)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (card_id, channel_id, state_key)
			DO UPDATE SET value = excluded.value, size = excluded.size, updated_at = excluded.updated_at`),
			cardID, channelID, key, sealed, size, now); err != nil {
			return fmt.Errorf("store: put channel state: %w", err)
		}
		return nil
	})
}

// lockChannelRow fails with ErrNotFound when the channel does not exist;
// on PostgreSQL it locks the channel's row until tx ends.
func (db *DB) lockChannelRow(ctx context.Context, tx *sql.Tx, cardID, channelID string) error {
	query := `SELECT 1 FROM channels WHERE card_id = ? AND channel_id = ?`
	if db.dialect == dialectPostgres {
		query += ` FOR UPDATE`
	}
	var one int
	if err := tx.QueryRowContext(ctx, db.q(query), cardID, channelID).Scan(&one); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("channel %s: %w", channelID, ErrNotFound)
		}
		return fmt.Errorf("lock channel: %w", err)
	}
	return nil
}

// GetChannelState returns the value of key in a channel's state
// (decrypted, never nil), or ErrNotFound when the key is not set.
func (db *DB) GetChannelState(ctx context.Context, cardID, channelID, key string) ([]byte, error) {
	if err := checkStateKey(key); err != nil {
		return nil, fmt.Errorf("store: get channel state: %w", err)
	}
	var sealed []byte
	err := db.r.QueryRowContext(ctx, db.q(`SELECT value FROM channel_state WHERE card_id = ? AND channel_id = ? AND state_key = ?`),
		cardID, channelID, key).Scan(&sealed)
	if err != nil {
		return nil, notFound(err, "get channel state")
	}
	value, err := db.aead.open(sealed, stateValueAAD(cardID, channelID, key))
	if err != nil {
		return nil, fmt.Errorf("store: get channel state %q: %w", key, err)
	}
	return value, nil
}

// DeleteChannelState removes key from a channel's state (no error when
// absent).
func (db *DB) DeleteChannelState(ctx context.Context, cardID, channelID, key string) error {
	if err := checkStateKey(key); err != nil {
		return fmt.Errorf("store: delete channel state: %w", err)
	}
	return db.batch(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, db.q(`DELETE FROM channel_state WHERE card_id = ? AND channel_id = ? AND state_key = ?`),
			cardID, channelID, key); err != nil {
			return fmt.Errorf("store: delete channel state: %w", err)
		}
		return nil
	})
}

// ListChannelState returns every key of a channel's state with its value
// (decrypted, never nil): an empty map when none is set, at most
// MaxChannelStateKeys entries.
func (db *DB) ListChannelState(ctx context.Context, cardID, channelID string) (map[string][]byte, error) {
	rows, err := db.r.QueryContext(ctx, db.q(`SELECT state_key, value FROM channel_state WHERE card_id = ? AND channel_id = ?
		ORDER BY state_key LIMIT ?`), cardID, channelID, MaxChannelStateKeys)
	if err != nil {
		return nil, fmt.Errorf("store: list channel state: %w", err)
	}
	defer rows.Close()
	out := make(map[string][]byte)
	for rows.Next() {
		var key string
		var sealed []byte
		if err := rows.Scan(&key, &sealed); err != nil {
			return nil, fmt.Errorf("store: list channel state: %w", err)
		}
		value, err := db.aead.open(sealed, stateValueAAD(cardID, channelID, key))
		if err != nil {
			return nil, fmt.Errorf("store: list channel state %q: %w", key, err)
		}
		out[key] = value
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list channel state: %w", err)
	}
	return out, nil
}

// ClearChannelState removes every key of a channel's state (no error when
// there is none). DeleteChannel does it too.
func (db *DB) ClearChannelState(ctx context.Context, cardID, channelID string) error {
	return db.batch(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, db.q(`DELETE FROM channel_state WHERE card_id = ? AND channel_id = ?`), cardID, channelID); err != nil {
			return fmt.Errorf("store: clear channel state: %w", err)
		}
		return nil
	})
}
