package store

import (
	"context"
	"database/sql"
	"fmt"
)

const catalogCols = `card_id, base_url, api_key, connector_id, card, skill, health, last_error, created_at, updated_at`

func apiKeyAAD(cardID string) []byte { return aad("catalog.api_key", cardID) }

func (db *DB) sealKey(e CatalogEntry) []byte {
	if e.APIKey == "" {
		return nil
	}
	return db.aead.seal([]byte(e.APIKey), apiKeyAAD(e.CardID))
}

// InsertCatalog adds an entry (APIKey encrypted); an existing entry for
// the CardID fails with ErrConflict, more than Options.MaxCatalog entries
// with ErrLimit.
func (db *DB) InsertCatalog(ctx context.Context, e CatalogEntry) error {
	now := db.now()
	if e.CreatedAt.IsZero() {
		e.CreatedAt = now
	}
	if e.UpdatedAt.IsZero() {
		e.UpdatedAt = now
	}
	return db.tx(ctx, func(tx *sql.Tx) error {
		if err := db.lock(ctx, tx, "catalog"); err != nil {
			return err
		}
		if err := db.checkCount(ctx, tx, `SELECT COUNT(*) FROM catalog`, db.opts.MaxCatalog, "catalog"); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, db.q(`INSERT INTO catalog (`+catalogCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (card_id) DO NOTHING`),
			e.CardID, e.BaseURL, db.sealKey(e), e.ConnectorID, e.Card, e.Skill, e.Health, e.LastError, ts(e.CreatedAt), ts(e.UpdatedAt))
		if err != nil {
			return fmt.Errorf("store: insert catalog: %w", err)
		}
		if affected(res) == 0 {
			return fmt.Errorf("store: insert catalog %s: %w", e.CardID, ErrConflict)
		}
		return nil
	})
}

// UpdateCatalog rewrites an existing entry, keeping CreatedAt; a missing
// entry fails with ErrNotFound.
func (db *DB) UpdateCatalog(ctx context.Context, e CatalogEntry) error {
	if e.UpdatedAt.IsZero() {
		e.UpdatedAt = db.now()
	}
	res, err := db.w.ExecContext(ctx, db.q(`UPDATE catalog SET base_url = ?, api_key = ?, connector_id = ?, card = ?, skill = ?,
		health = ?, last_error = ?, updated_at = ? WHERE card_id = ?`),
		e.BaseURL, db.sealKey(e), e.ConnectorID, e.Card, e.Skill, e.Health, e.LastError, ts(e.UpdatedAt), e.CardID)
	if err != nil {
		return fmt.Errorf("store: update catalog: %w", err)
	}
	if affected(res) == 0 {
		return fmt.Errorf("store: update catalog %s: %w", e.CardID, ErrNotFound)
	}
	return nil
}

func (db *DB) scanCatalog(s interface{ Scan(...any) error }) (CatalogEntry, error) {
	var e CatalogEntry
	var key []byte
	var created, updated int64
	if err := s.Scan(&e.CardID, &e.BaseURL, &key, &e.ConnectorID, &e.Card, &e.Skill, &e.Health, &e.LastError, &created, &updated); err != nil {
		return CatalogEntry{}, err
	}
	e.CreatedAt, e.UpdatedAt = fromTS(created), fromTS(updated)
	plain, err := db.aead.open(key, apiKeyAAD(e.CardID))
	if err != nil {
		return CatalogEntry{}, err
	}
	e.APIKey = string(plain)
	return e, nil
}

// GetCatalog returns an entry (APIKey decrypted) or ErrNotFound.
func (db *DB) GetCatalog(ctx context.Context, cardID string) (CatalogEntry, error) {
	e, err := db.scanCatalog(db.r.QueryRowContext(ctx, db.q(`SELECT `+catalogCols+` FROM catalog WHERE card_id = ?`), cardID))
	if err != nil {
		return CatalogEntry{}, notFound(err, "get catalog")
	}
	return e, nil
}

// ListCatalog lists every entry by CardID (at most Options.MaxCatalog).
func (db *DB) ListCatalog(ctx context.Context) ([]CatalogEntry, error) {
	rows, err := db.r.QueryContext(ctx, db.q(`SELECT `+catalogCols+` FROM catalog ORDER BY card_id LIMIT ?`), db.opts.MaxCatalog)
	if err != nil {
		return nil, fmt.Errorf("store: list catalog: %w", err)
	}
	return collect(rows, db.scanCatalog, "list catalog")
}

// DeleteCatalog removes an entry (no error when absent).
func (db *DB) DeleteCatalog(ctx context.Context, cardID string) error {
	if _, err := db.w.ExecContext(ctx, db.q(`DELETE FROM catalog WHERE card_id = ?`), cardID); err != nil {
		return fmt.Errorf("store: delete catalog: %w", err)
	}
	return nil
}
