package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

const fileCols = `card_id, ref, channel_id, direction, path, filename, mime_type, file_type, size, expires_at, created_at`

// PutFile inserts or updates a file record; a new record beyond
// Options.MaxFiles per card fails with ErrLimit.
func (db *DB) PutFile(ctx context.Context, f File) error {
	if f.CreatedAt.IsZero() {
		f.CreatedAt = db.now()
	}
	return db.tx(ctx, func(tx *sql.Tx) error {
		if err := db.lock(ctx, tx, "files:"+f.CardID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, db.q(`UPDATE files SET channel_id = ?, direction = ?, path = ?, filename = ?, mime_type = ?,
			file_type = ?, size = ?, expires_at = ? WHERE card_id = ? AND ref = ?`),
			f.ChannelID, f.Direction, f.Path, f.Filename, f.MimeType, f.FileType, f.Size, ts(f.ExpiresAt), f.CardID, f.Ref)
		if err != nil {
			return fmt.Errorf("store: put file: %w", err)
		}
		if affected(res) > 0 {
			return nil
		}
		if err := db.checkCount(ctx, tx, `SELECT COUNT(*) FROM files WHERE card_id = ?`, db.opts.MaxFiles, "files", f.CardID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, db.q(`INSERT INTO files (`+fileCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			f.CardID, f.Ref, f.ChannelID, f.Direction, f.Path, f.Filename, f.MimeType, f.FileType, f.Size, ts(f.ExpiresAt), ts(f.CreatedAt)); err != nil {
			return fmt.Errorf("store: put file: %w", err)
		}
		return nil
	})
}

func scanFile(s interface{ Scan(...any) error }) (File, error) {
	var f File
	var exp, created int64
	err := s.Scan(&f.CardID, &f.Ref, &f.ChannelID, &f.Direction, &f.Path, &f.Filename, &f.MimeType, &f.FileType, &f.Size, &exp, &created)
	f.ExpiresAt, f.CreatedAt = fromTS(exp), fromTS(created)
	return f, err
}

// GetFile returns a file record or ErrNotFound.
func (db *DB) GetFile(ctx context.Context, cardID, ref string) (File, error) {
	f, err := scanFile(db.r.QueryRowContext(ctx, db.q(`SELECT `+fileCols+` FROM files WHERE card_id = ? AND ref = ?`), cardID, ref))
	if err != nil {
		return File{}, notFound(err, "get file")
	}
	return f, nil
}

// DeleteFile removes a file record (no error when absent).
func (db *DB) DeleteFile(ctx context.Context, cardID, ref string) error {
	if _, err := db.w.ExecContext(ctx, db.q(`DELETE FROM files WHERE card_id = ? AND ref = ?`), cardID, ref); err != nil {
		return fmt.Errorf("store: delete file: %w", err)
	}
	return nil
}

// ExpiredFiles lists up to limit files of the card with ExpiresAt before t
// (and not zero), soonest first.
func (db *DB) ExpiredFiles(ctx context.Context, cardID string, t time.Time, limit int) ([]File, error) {
	rows, err := db.r.QueryContext(ctx, db.q(`SELECT `+fileCols+` FROM files WHERE card_id = ? AND expires_at > 0 AND expires_at < ?
		ORDER BY expires_at LIMIT ?`), cardID, ts(t), max(limit, 0))
	if err != nil {
		return nil, fmt.Errorf("store: expired files: %w", err)
	}
	return collect(rows, scanFile, "expired files")
}
