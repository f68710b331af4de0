package store

import (
	"context"
	"database/sql"
	"sync"
)

// The prepared insert of channel creation.
//
// On SQLite, a statement run by its text is parsed and planned again on
// every call (the driver keeps no statement cache); for the small channel
// insert that is about half of its cost, paid on the group committer's one
// writer goroutine for every channel.open of a new channel. channelHot
// prepares it once on the writer pool, on the first insert and before its
// transaction (a creation must not fail because a statement could not be
// prepared: it then runs by its text), and closes it with the DB.

// channelHot holds the lazily prepared statements of channel creation.
// The zero value is ready; it is safe for concurrent use.
type channelHot struct {
	mu     sync.Mutex
	insert *sql.Stmt // prepared on the writer pool; nil until first use
	closed bool
}

// channelInsertStmt returns the prepared channel insert of db, nil when
// db is not SQLite (pgx caches prepared statements by itself) or the
// statement does not prepare. Call it outside a transaction.
func (db *DB) channelInsertStmt(ctx context.Context) *sql.Stmt {
	if db.dialect != dialectSQLite {
		return nil
	}
	return db.chanHot.insertStmt(ctx, db.w)
}

// insertStmt returns the channel insert prepared on w, preparing it on
// first use; nil when h is nil or closed or the statement does not
// prepare (the caller then runs it by its text). It must be called outside
// a transaction of w: on SQLite w has one connection, which a transaction
// holds until it ends.
func (h *channelHot) insertStmt(ctx context.Context, w *sql.DB) *sql.Stmt {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	if h.insert == nil {
		st, err := w.PrepareContext(ctx, sqlInsertChannelSQLite)
		if err != nil {
			return nil
		}
		h.insert = st
	}
	return h.insert
}

// execInsertChannel runs the SQLite channel insert in tx with args:
// prepared when st (from insertStmt on tx's pool) is not nil, else by its
// text.
func execInsertChannel(ctx context.Context, tx *sql.Tx, st *sql.Stmt, args ...any) (sql.Result, error) {
	if st != nil {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, sqlInsertChannelSQLite, args...)
}

// close closes the prepared statements; later inserts run by text.
func (h *channelHot) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	if h.insert != nil {
		h.insert.Close()
		h.insert = nil
	}
}
