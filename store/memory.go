package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// Hard bounds of one conversation's memory (see [HostStore.AppendMemory]).
// A caller's window is clamped to them: memory is what an agent replays to
// its model, not an archive.
const (
	// MaxMemoryEntries is the most entries one conversation keeps.
	MaxMemoryEntries = 1000
	// MaxMemoryEntryBytes bounds one entry (256 KiB).
	MaxMemoryEntryBytes = 256 << 10
	// MaxMemoryBytes bounds the entries of one conversation together (4 MiB).
	MaxMemoryBytes = 4 << 20
	// MaxMemoryConversationBytes bounds a conversation key, in bytes.
	MaxMemoryConversationBytes = 256
)

// ErrMemoryEntryTooLarge is returned (wrapped; it also matches ErrLimit) by
// an AppendMemory with an entry over MaxMemoryEntryBytes or over the
// caller's byte window: nothing is appended.
var ErrMemoryEntryTooLarge = fmt.Errorf("store: memory entry too large: %w", ErrLimit)

// MemoryEntry is one stored message of a conversation: opaque bytes (an
// agent's own encoding) with the order they were appended in.
type MemoryEntry struct {
	// Seq increases with every append to the conversation (1, 2, ...).
	Seq       int64
	Data      []byte
	CreatedAt time.Time
}

func memoryAAD(conversation string, seq int64) []byte {
	return aad("conversation_memory.data", conversation, strconv.FormatInt(seq, 10))
}

func checkConversation(conversation string) error {
	switch {
	case conversation == "":
		return errors.New("empty conversation key")
	case len(conversation) > MaxMemoryConversationBytes:
		return fmt.Errorf("conversation key of %d bytes, at most %d", len(conversation), MaxMemoryConversationBytes)
	case !utf8.ValidString(conversation):
		return errors.New("conversation key is not UTF-8")
	}
	for i := 0; i < len(conversation); i++ {
		if conversation[i] == 0 {
			return errors.New("conversation key holds a NUL byte")
		}
	}
	return nil
}

// memoryWindow clamps a caller's window to the hard bounds (<= 0 takes the bound).
func memoryWindow(maxEntries int, maxBytes int64) (int, int64) {
	if maxEntries <= 0 || maxEntries > MaxMemoryEntries {
		maxEntries = MaxMemoryEntries
	}
	if maxBytes <= 0 || maxBytes > MaxMemoryBytes {
		maxBytes = MaxMemoryBytes
	}
	return maxEntries, maxBytes
}

// AppendMemory appends entries, in order, to a conversation's memory, then
// drops its oldest entries until at most maxEntries entries of at most
// maxBytes bytes together remain (each clamped to MaxMemoryEntries and
// MaxMemoryBytes; zero or less takes the bound). Data is encrypted at rest
// like a binding. An entry over MaxMemoryEntryBytes or maxBytes fails with
// ErrMemoryEntryTooLarge and nothing is appended. The append and the trim
// are one transaction, so the bounds hold under concurrent appends, also
// from several processes (a PostgreSQL advisory lock per conversation; the
// single SQLite writer).
func (db *DB) AppendMemory(ctx context.Context, conversation string, entries [][]byte, maxEntries int, maxBytes int64) error {
	if err := checkConversation(conversation); err != nil {
		return fmt.Errorf("store: append memory: %w", err)
	}
	maxEntries, maxBytes = memoryWindow(maxEntries, maxBytes)
	for i, e := range entries {
		if len(e) > MaxMemoryEntryBytes || int64(len(e)) > maxBytes {
			return fmt.Errorf("store: append memory: entry %d of %d bytes: %w", i, len(e), ErrMemoryEntryTooLarge)
		}
	}
	if len(entries) == 0 {
		return nil
	}
	now := ts(db.now())
	return db.batch(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := db.lock(ctx, tx, "conversation_memory:"+conversation); err != nil {
			return fmt.Errorf("store: append memory: %w", err)
		}
		var last int64
		if err := tx.QueryRowContext(ctx, db.q(`SELECT COALESCE(MAX(seq), 0) FROM conversation_memory WHERE conversation = ?`),
			conversation).Scan(&last); err != nil {
			return fmt.Errorf("store: append memory: %w", err)
		}
		for _, e := range entries {
			last++
			if e == nil {
				e = []byte{}
			}
			if _, err := tx.ExecContext(ctx, db.q(`INSERT INTO conversation_memory (conversation, seq, data, size, created_at)
				VALUES (?, ?, ?, ?, ?)`), conversation, last, db.aead.seal(e, memoryAAD(conversation, last)), len(e), now); err != nil {
				return fmt.Errorf("store: append memory: %w", err)
			}
		}
		return db.trimMemory(ctx, tx, conversation, maxEntries, maxBytes)
	})
}

// trimMemory deletes the oldest entries of a conversation beyond the window.
func (db *DB) trimMemory(ctx context.Context, tx *sql.Tx, conversation string, maxEntries int, maxBytes int64) error {
	rows, err := tx.QueryContext(ctx, db.q(`SELECT seq, size FROM conversation_memory WHERE conversation = ? ORDER BY seq DESC`), conversation)
	if err != nil {
		return fmt.Errorf("store: trim memory: %w", err)
	}
	var n int
	var total, cut int64
	for rows.Next() {
		var seq, size int64
		if err := rows.Scan(&seq, &size); err != nil {
			rows.Close()
			return fmt.Errorf("store: trim memory: %w", err)
		}
		n++
		total += size
		if n > maxEntries || total > maxBytes {
			cut = seq // this one and every older one go
			break
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: trim memory: %w", err)
	}
	if cut == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, db.q(`DELETE FROM conversation_memory WHERE conversation = ? AND seq <= ?`), conversation, cut); err != nil {
		return fmt.Errorf("store: trim memory: %w", err)
	}
	return nil
}

// ListMemory returns a conversation's entries, oldest first (decrypted,
// never nil Data): at most MaxMemoryEntries, none for an unknown
// conversation.
func (db *DB) ListMemory(ctx context.Context, conversation string) ([]MemoryEntry, error) {
	if err := checkConversation(conversation); err != nil {
		return nil, fmt.Errorf("store: list memory: %w", err)
	}
	rows, err := db.r.QueryContext(ctx, db.q(`SELECT seq, data, created_at FROM conversation_memory WHERE conversation = ?
		ORDER BY seq LIMIT ?`), conversation, MaxMemoryEntries)
	if err != nil {
		return nil, fmt.Errorf("store: list memory: %w", err)
	}
	defer rows.Close()
	var out []MemoryEntry
	for rows.Next() {
		var e MemoryEntry
		var sealed []byte
		var created int64
		if err := rows.Scan(&e.Seq, &sealed, &created); err != nil {
			return nil, fmt.Errorf("store: list memory: %w", err)
		}
		if e.Data, err = db.aead.open(sealed, memoryAAD(conversation, e.Seq)); err != nil {
			return nil, fmt.Errorf("store: list memory: entry %d: %w", e.Seq, err)
		}
		if e.Data == nil {
			e.Data = []byte{}
		}
		e.CreatedAt = fromTS(created)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list memory: %w", err)
	}
	return out, nil
}

// ClearMemory removes every entry of a conversation (no error when there
// is none). DeleteUserChannel does it for the conversation named by the
// user channel's id.
func (db *DB) ClearMemory(ctx context.Context, conversation string) error {
	return db.batch(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, db.q(`DELETE FROM conversation_memory WHERE conversation = ?`), conversation); err != nil {
			return fmt.Errorf("store: clear memory: %w", err)
		}
		return nil
	})
}
