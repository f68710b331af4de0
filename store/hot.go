package store

import (
	"context"
	"database/sql"
	"fmt"
)

// Prepared statements of the delivery hot path. Parsing and planning a
// statement costs more in SQLite than running these small ones, so on
// SQLite they are prepared once at Open (the driver keeps the compiled
// statement) and reused; on PostgreSQL pgx caches prepared statements per
// connection by itself, so the text is sent as is.

// hotStmt is one statement of the hot path: its text in the dialect and,
// on SQLite, the statement prepared on the writer (w) or reader (r) pool.
type hotStmt struct {
	query string
	st    *sql.Stmt
}

// hotStmts are the statements of the hot path, a fixed set.
type hotStmts struct {
	// writer, used inside transactions
	obProbe, obLookup, ocLookup, obInsert, obDelete, ocUpsert, obRetry                  hotStmt
	obHead, obResched, obNew, obChanInfo, obInsertMany, obFinish, ocInsertMany, obHeads hotStmt
	inInsertMany, inCountMany                                                           hotStmt
	inInsert, inLookup, inCountUp, inCountSub, inTrim, dataVersion                      hotStmt
	// readers
	rDue, rNext, rHead, rAfter, rPending, rOutcome, rInbox hotStmt
}

const (
	sqlObLookup = `SELECT ` + outboxCols + ` FROM outbox WHERE queue = ? AND channel = ? AND message_id = ?`
	sqlOcLookup = `SELECT ` + outcomeCols + ` FROM outbox_outcomes WHERE queue = ? AND channel = ? AND message_id = ?`
	// sqlObProbe answers, in one statement, what an enqueue must know:
	// whether the key is pending, whether it has an outcome, the channel's
	// earliest expiry and its size (index outbox_channel: a channel's entries).
	sqlObProbe = `SELECT EXISTS (SELECT 1 FROM outbox WHERE queue = ?1 AND channel = ?2 AND message_id = ?3),
		EXISTS (SELECT 1 FROM outbox_outcomes WHERE queue = ?1 AND channel = ?2 AND message_id = ?3),
		(SELECT MIN(expires_at) FROM outbox WHERE queue = ?1 AND channel = ?2),
		(SELECT COUNT(*) FROM outbox WHERE queue = ?1 AND channel = ?2)`
	// sqlObProbePG is sqlObProbe for PostgreSQL (db.q does not rewrite ?N).
	sqlObProbePG = `SELECT EXISTS (SELECT 1 FROM outbox WHERE queue = $1 AND channel = $2 AND message_id = $3),
		EXISTS (SELECT 1 FROM outbox_outcomes WHERE queue = $1 AND channel = $2 AND message_id = $3),
		(SELECT MIN(expires_at) FROM outbox WHERE queue = $1 AND channel = $2),
		(SELECT COUNT(*) FROM outbox WHERE queue = $1 AND channel = $2)`
	sqlObInsert = `INSERT INTO outbox (queue, channel, message_id, payload, created_at, expires_at, attempts, next_attempt, last_error)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`
	// sqlObNew is the common enqueue (SQLite), when the channel cache
	// says the channel has room and nothing expired: the insert happens
	// unless the key has an outcome (one read of its key) or is pending
	// (the key's unique index); no row means one of the two.
	sqlObNew = `INSERT INTO outbox (queue, channel, message_id, payload, created_at, expires_at, attempts, next_attempt, last_error)
		SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9
		WHERE NOT EXISTS (SELECT 1 FROM outbox_outcomes WHERE queue = ?1 AND channel = ?2 AND message_id = ?3)
		ON CONFLICT (queue, channel, message_id) DO NOTHING RETURNING seq`
	// sqlObChanInfo fills the channel cache: a channel's size and earliest
	// expiry (index outbox_channel: its few entries).
	sqlObChanInfo = `SELECT COUNT(*), MIN(expires_at) FROM outbox WHERE queue = ? AND channel = ?`
	sqlObDelete   = `DELETE FROM outbox WHERE queue = ? AND channel = ? AND message_id = ?`
	sqlOcUpsert   = `INSERT INTO outbox_outcomes (` + outcomeCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (queue, channel, message_id) DO UPDATE SET kind = excluded.kind, code = excluded.code,
		message = excluded.message, attempts = excluded.attempts, created_at = excluded.created_at,
		expires_at = excluded.expires_at, at = excluded.at`
	sqlObRetry = `UPDATE outbox SET attempts = ?, next_attempt = ?, last_error = ?
		WHERE queue = ? AND channel = ? AND message_id = ?`
	sqlInInsert = `INSERT INTO inbox (queue, channel, message_id, hash, at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (queue, channel, message_id) DO NOTHING`
	sqlInLookup = `SELECT queue, channel, message_id, hash, at FROM inbox WHERE queue = ? AND channel = ? AND message_id = ?`
	// sqlInGet is sqlInLookup without the key's columns, which the caller
	// has.
	sqlInGet = `SELECT hash, at FROM inbox WHERE queue = ? AND channel = ? AND message_id = ?`
	// sqlInCountUp counts an inserted record and returns the channel's new
	// count.
	sqlInCountUp = `INSERT INTO inbox_counts (queue, channel, n) VALUES (?, ?, 1)
		ON CONFLICT (queue, channel) DO UPDATE SET n = inbox_counts.n + 1 RETURNING n`
	sqlInCountSub = `UPDATE inbox_counts SET n = n - ? WHERE queue = ? AND channel = ?`
	// sqlInTrim deletes a channel's oldest records (the last ones in the
	// order "at DESC, message_id DESC" that InboxPut keeps).
	sqlInTrim = `DELETE FROM inbox WHERE queue = ? AND channel = ? AND message_id IN (
		SELECT message_id FROM inbox WHERE queue = ? AND channel = ? ORDER BY at, message_id LIMIT ?)`
	sqlDue = `SELECT ` + outboxColsO + ` FROM outbox o WHERE o.queue = ? AND o.next_attempt <= ? AND ` + isHead + `
		ORDER BY o.next_attempt, o.seq LIMIT ?`
	sqlNext = `SELECT o.next_attempt FROM outbox o WHERE o.queue = ? AND o.next_attempt > ? AND ` + isHead + `
		ORDER BY o.next_attempt LIMIT 1`
	sqlPending = `SELECT COUNT(*) FROM outbox WHERE queue = ?`
	sqlResched = `UPDATE outbox SET next_attempt = ? WHERE queue = ? AND channel = ? AND next_attempt > ?`
	// sqlHead reads a channel's head: the lowest seq from the channel's
	// entries in the key's index (SQLite keeps the rowid, seq, in it),
	// then that one row.
	sqlHead = `SELECT ` + outboxCols + ` FROM outbox WHERE seq = (SELECT MIN(seq) FROM outbox WHERE queue = ? AND channel = ?)`
	// sqlAfter reads the entry that follows seq in its channel.
	sqlAfter = `SELECT ` + outboxCols + ` FROM outbox WHERE seq = (SELECT MIN(seq) FROM outbox WHERE queue = ? AND channel = ? AND seq > ?)`
)

// prepareHot fills db.hot: the texts always, the prepared statements on
// SQLite. It runs after the migrations.
func (db *DB) prepareHot(ctx context.Context) error {
	h := &db.hot
	list := []struct {
		s    *hotStmt
		pool *sql.DB
		q    string
	}{
		{&h.obLookup, db.w, sqlObLookup}, {&h.ocLookup, db.w, sqlOcLookup}, {&h.obProbe, db.w, sqlObProbe},
		{&h.obInsert, db.w, sqlObInsert}, {&h.obNew, db.w, sqlObNew}, {&h.obChanInfo, db.w, sqlObChanInfo},
		{&h.obDelete, db.w, sqlObDelete}, {&h.ocUpsert, db.w, sqlOcUpsert},
		{&h.obRetry, db.w, sqlObRetry}, {&h.inInsert, db.w, sqlInInsert}, {&h.inLookup, db.w, sqlInLookup},
		{&h.inCountUp, db.w, sqlInCountUp}, {&h.inCountSub, db.w, sqlInCountSub}, {&h.inTrim, db.w, sqlInTrim}, {&h.obHead, db.w, sqlHead}, {&h.obResched, db.w, sqlResched},
		{&h.dataVersion, db.w, "PRAGMA data_version"},
		{&h.rDue, db.r, sqlDue}, {&h.rNext, db.r, sqlNext}, {&h.rHead, db.r, sqlHead}, {&h.rAfter, db.r, sqlAfter}, {&h.rPending, db.r, sqlPending},
		{&h.rOutcome, db.r, sqlOcLookup}, {&h.rInbox, db.r, sqlInGet},
	}
	for _, p := range list {
		p.s.query = db.q(p.q)
		if db.dialect != dialectSQLite {
			switch p.s {
			case &h.obProbe:
				p.s.query = sqlObProbePG
			case &h.obNew, &h.obChanInfo, &h.dataVersion:
				p.s.query = "" // SQLite only: PostgreSQL probes, one operation per transaction
			}
			continue
		}
		st, err := p.pool.PrepareContext(ctx, p.s.query)
		if err != nil {
			return fmt.Errorf("store: prepare: %w", err)
		}
		p.s.st = st
	}
	return nil
}

// closeHot closes the prepared statements.
func (db *DB) closeHot() {
	h := &db.hot
	for _, s := range []*hotStmt{&h.obLookup, &h.ocLookup, &h.obProbe, &h.obInsert, &h.obNew, &h.obChanInfo, &h.obDelete, &h.ocUpsert,
		&h.obRetry, &h.inInsert, &h.inLookup, &h.inCountUp, &h.inCountSub, &h.inTrim, &h.dataVersion, &h.obHead, &h.obResched, &h.rDue, &h.rNext, &h.rHead, &h.rAfter, &h.rPending, &h.rOutcome, &h.rInbox} {
		if s.st != nil {
			s.st.Close()
			s.st = nil
		}
	}
}

// txExec runs s in tx.
func txExec(ctx context.Context, tx *sql.Tx, s *hotStmt, args ...any) (sql.Result, error) {
	if s.st == nil {
		return tx.ExecContext(ctx, s.query, args...)
	}
	return tx.StmtContext(ctx, s.st).ExecContext(ctx, args...)
}

// txRow runs the one-row query s in tx.
func txRow(ctx context.Context, tx *sql.Tx, s *hotStmt, args ...any) *sql.Row {
	if s.st == nil {
		return tx.QueryRowContext(ctx, s.query, args...)
	}
	return tx.StmtContext(ctx, s.st).QueryRowContext(ctx, args...)
}

// Reads of the hot path run with a context that is never cancelled
// (pointRead): with a cancellable context, database/sql and the SQLite
// driver each start a goroutine per statement to watch it, which costs
// more than the one-row index lookup itself; such a lookup is not worth
// interrupting.
func pointRead(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// rQuery runs the read query s outside a transaction on pool.
func rQuery(ctx context.Context, pool *sql.DB, s *hotStmt, args ...any) (*sql.Rows, error) {
	if s.st == nil {
		return pool.QueryContext(ctx, s.query, args...)
	}
	return s.st.QueryContext(ctx, args...)
}

// rRow runs the one-row read query s outside a transaction on pool.
func rRow(ctx context.Context, pool *sql.DB, s *hotStmt, args ...any) *sql.Row {
	if s.st == nil {
		return pool.QueryRowContext(ctx, s.query, args...)
	}
	return s.st.QueryRowContext(ctx, args...)
}
