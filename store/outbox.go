package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/protocol"
)

// Outbox storage of package delivery: table outbox holds pending entries
// (seq orders a channel), outbox_outcomes the bounded history of terminal
// outcomes. Every method is one transaction or one statement.

const outboxCols = `seq, queue, channel, message_id, payload, created_at, expires_at, attempts, next_attempt, last_error`

// outboxColsO is outboxCols qualified with alias o.
const outboxColsO = `o.seq, o.queue, o.channel, o.message_id, o.payload, o.created_at, o.expires_at, o.attempts, o.next_attempt, o.last_error`

func scanEntry(s interface{ Scan(...any) error }) (delivery.Entry, error) {
	var e delivery.Entry
	var created, exp, next int64
	err := s.Scan(&e.Seq, &e.Queue, &e.Channel, &e.MessageID, &e.Payload, &created, &exp, &e.Attempts, &next, &e.LastError)
	e.CreatedAt, e.ExpiresAt, e.NextAttempt = fromTS(created), fromTS(exp), fromTS(next)
	return e, err
}

const outcomeCols = `queue, channel, message_id, kind, code, message, attempts, created_at, expires_at, at`

func scanOutcome(s interface{ Scan(...any) error }) (delivery.Outcome, error) {
	var o delivery.Outcome
	var kind, code string
	var created, exp, at int64
	err := s.Scan(&o.Queue, &o.Channel, &o.MessageID, &kind, &code, &o.Message, &o.Attempts, &created, &exp, &at)
	o.Kind, o.Code = delivery.OutcomeKind(kind), protocol.Code(code)
	o.CreatedAt, o.ExpiresAt, o.At = fromTS(created), fromTS(exp), fromTS(at)
	return o, err
}

func (db *DB) recordOutcome(ctx context.Context, tx *sql.Tx, o delivery.Outcome) error {
	_, err := txExec(ctx, tx, &db.hot.ocUpsert,
		o.Queue, o.Channel, o.MessageID, string(o.Kind), string(o.Code), o.Message, o.Attempts, ts(o.CreatedAt), ts(o.ExpiresAt), ts(o.At))
	if err != nil {
		return fmt.Errorf("store: record outcome: %w", err)
	}
	return nil
}

// dropEntries deletes the entries selected by where (with args) and records
// an outcome of kind for each; it returns the outcomes.
func (db *DB) dropEntries(ctx context.Context, tx *sql.Tx, kind delivery.OutcomeKind, code protocol.Code, msg string, now time.Time, where string, args ...any) ([]delivery.Outcome, error) {
	rows, err := tx.QueryContext(ctx, db.q(`DELETE FROM outbox WHERE seq IN (`+where+`) RETURNING `+outboxCols), args...)
	if err != nil {
		return nil, fmt.Errorf("store: drop outbox entries: %w", err)
	}
	entries, err := collect(rows, scanEntry, "drop outbox entries")
	if err != nil {
		return nil, err
	}
	out := make([]delivery.Outcome, 0, len(entries))
	for _, e := range entries {
		o := delivery.Outcome{Queue: e.Queue, Channel: e.Channel, MessageID: e.MessageID, Kind: kind, Code: code,
			Message: msg, Attempts: e.Attempts, CreatedAt: e.CreatedAt, ExpiresAt: e.ExpiresAt, At: now}
		if err := db.recordOutcome(ctx, tx, o); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// OutboxEnqueue implements delivery.OutboxStorage. On SQLite it is group
// committed (see groupcommit.go): it returns after its transaction
// committed. There the common case is one statement: the channel's size
// and earliest expiry come from the writer's channel cache
// (outbox_cache.go), a message_id already pending is caught by the key's
// unique index and one already done by one read of the outcomes' key.
func (db *DB) OutboxEnqueue(ctx context.Context, e delivery.Entry, capacity int, now time.Time) (delivery.EnqueueResult, error) {
	req := enqueueReq{e: e, capacity: capacity, now: now}
	one := func(ctx context.Context, tx *sql.Tx) error { return db.enqueueOne(ctx, tx, &req) }
	var err error
	if db.gc == nil {
		err = db.batch(ctx, one)
	} else {
		err = db.gc.doOp(ctx, one, &gcGroups{enq: &req})
	}
	return req.res, err
}

// enqueueOne is one OutboxEnqueue in tx.
func (db *DB) enqueueOne(ctx context.Context, tx *sql.Tx, req *enqueueReq) error {
	e, capacity, now := req.e, req.capacity, req.now
	req.res = delivery.EnqueueResult{}
	res := &req.res
	{ // the body of one transaction (kept as a block: the diff of issue 22 stays small)
		if err := db.lock(ctx, tx, "outbox:"+e.Queue+"\x00"+e.Channel); err != nil {
			return err
		}
		if db.cache != nil {
			ok, err := db.enqueueCached(ctx, tx, &e, capacity, now, res)
			if err != nil || ok {
				return err
			}
			// Pending, done, expired or full: the probe below finds which,
			// and the channel is read again by the next enqueue.
			db.cache.forget(e.Queue, e.Channel)
		}
		var pending, done bool
		var minExp sql.NullInt64
		var n int
		if err := txRow(ctx, tx, &db.hot.obProbe, e.Queue, e.Channel, e.MessageID).Scan(&pending, &done, &minExp, &n); err != nil {
			return fmt.Errorf("store: enqueue: %w", err)
		}
		if pending {
			cur, err := scanEntry(txRow(ctx, tx, &db.hot.obLookup, e.Queue, e.Channel, e.MessageID))
			if err != nil {
				return fmt.Errorf("store: enqueue: %w", err)
			}
			res.Status, res.Entry = delivery.AlreadyPending, cur
			return nil
		}
		if done {
			o, err := scanOutcome(txRow(ctx, tx, &db.hot.ocLookup, e.Queue, e.Channel, e.MessageID))
			if err != nil {
				return fmt.Errorf("store: enqueue: %w", err)
			}
			res.Status, res.Outcome = delivery.AlreadyDone, o
			return nil
		}
		// Expiry is checked at enqueue; the delete runs only when due.
		if minExp.Valid && minExp.Int64 <= ts(now) {
			expired, err := db.dropEntries(ctx, tx, delivery.OutcomeExpired, "", "expired before delivery", now,
				`SELECT seq FROM outbox WHERE queue = ? AND channel = ? AND expires_at <= ?`, e.Queue, e.Channel, ts(now))
			if err != nil {
				return err
			}
			res.Dropped = expired
			n -= len(expired)
		}
		if capacity > 0 && n >= capacity {
			evicted, err := db.dropEntries(ctx, tx, delivery.OutcomeEvicted, delivery.CodeCapacityExceeded, "channel outbox full", now,
				`SELECT seq FROM outbox WHERE queue = ? AND channel = ? ORDER BY seq LIMIT ?`, e.Queue, e.Channel, n-capacity+1)
			if err != nil {
				return err
			}
			res.Dropped = append(res.Dropped, evicted...)
			n -= len(evicted)
		}
		if err := txRow(ctx, tx, &db.hot.obInsert,
			e.Queue, e.Channel, e.MessageID, nonNil(e.Payload), ts(e.CreatedAt), ts(e.ExpiresAt), e.Attempts, ts(e.NextAttempt), e.LastError).Scan(&e.Seq); err != nil {
			return fmt.Errorf("store: enqueue: %w", err)
		}
		res.Status, res.Entry, res.Head = delivery.Enqueued, e, n <= 0
		return nil
	}
}

// enqueueCached is the common enqueue on SQLite: when the cache says the
// channel has room and no expired entry, one INSERT stores e unless its
// key is pending or done. ok reports that e was stored (res is set);
// otherwise nothing changed.
func (db *DB) enqueueCached(ctx context.Context, tx *sql.Tx, e *delivery.Entry, capacity int, now time.Time, res *delivery.EnqueueResult) (bool, error) {
	ci, err := db.cache.get(ctx, db, tx, e.Queue, e.Channel)
	if err != nil {
		return false, err
	}
	if ci.minExp <= ts(now) || capacity > 0 && ci.n >= capacity {
		return false, nil
	}
	err = txRow(ctx, tx, &db.hot.obNew, e.Queue, e.Channel, e.MessageID, nonNil(e.Payload), ts(e.CreatedAt),
		ts(e.ExpiresAt), e.Attempts, ts(e.NextAttempt), e.LastError).Scan(&e.Seq)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("store: enqueue: %w", err)
	}
	db.cache.added(e.Queue, e.Channel, ts(e.ExpiresAt))
	res.Status, res.Entry, res.Head = delivery.Enqueued, *e, ci.n == 0
	return true, nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// cacheRemoved tells the channel cache (SQLite) that k entries left a
// channel.
func (db *DB) cacheRemoved(queue, channel string, k int) {
	if db.cache != nil {
		db.cache.removed(queue, channel, k)
	}
}

// isHead restricts outbox o to channel heads: no older entry in its channel.
const isHead = `NOT EXISTS (SELECT 1 FROM outbox p WHERE p.queue = o.queue AND p.channel = o.channel AND p.seq < o.seq)`

// OutboxDue implements delivery.OutboxStorage. It walks index outbox_due
// in NextAttempt order and keeps the channel heads.
func (db *DB) OutboxDue(ctx context.Context, queue string, now time.Time, limit int) ([]delivery.Entry, error) {
	rows, err := rQuery(ctx, db.r, &db.hot.rDue, queue, ts(now), max(limit, 0))
	if err != nil {
		return nil, fmt.Errorf("store: outbox due: %w", err)
	}
	return collect(rows, scanEntry, "outbox due")
}

// OutboxHead implements delivery.OutboxHeadStorage (index outbox_channel).
func (db *DB) OutboxHead(ctx context.Context, queue, channel string) (delivery.Entry, bool, error) {
	if err := ctx.Err(); err != nil {
		return delivery.Entry{}, false, err
	}
	e, err := scanEntry(rRow(pointRead(ctx), db.r, &db.hot.rHead, queue, channel))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return delivery.Entry{}, false, nil
	case err != nil:
		return delivery.Entry{}, false, fmt.Errorf("store: outbox head: %w", err)
	}
	return e, true, nil
}

// OutboxAfter implements delivery.OutboxAfterStorage: the entry following
// seq in its channel (on SQLite read from the key index's entries of the
// channel, which hold seq as rowid).
func (db *DB) OutboxAfter(ctx context.Context, queue, channel string, seq int64) (delivery.Entry, bool, error) {
	if err := ctx.Err(); err != nil {
		return delivery.Entry{}, false, err
	}
	// Combined with the reads of other channels (readgroup.go).
	e, ok, err := db.obAfter.get(afterKey{queue, channel, seq})
	if err != nil {
		return delivery.Entry{}, false, fmt.Errorf("store: outbox after: %w", err)
	}
	return e, ok, nil
}

// OutboxNextAttempt implements delivery.OutboxStorage.
func (db *DB) OutboxNextAttempt(ctx context.Context, queue string, after time.Time) (time.Time, bool, error) {
	var next sql.NullInt64
	if err := rRow(ctx, db.r, &db.hot.rNext, queue, ts(after)).Scan(&next); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, fmt.Errorf("store: outbox next attempt: %w", err)
	}
	if !next.Valid {
		return time.Time{}, false, nil
	}
	return fromTS(next.Int64), true, nil
}

// OutboxRetry implements delivery.OutboxStorage (group committed on SQLite).
func (db *DB) OutboxRetry(ctx context.Context, queue, channel, messageID string, attempts int, next time.Time, lastErr string) (bool, error) {
	var ok bool
	err := db.batch(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := txExec(ctx, tx, &db.hot.obRetry, attempts, ts(next), lastErr, queue, channel, messageID)
		if err != nil {
			return fmt.Errorf("store: outbox retry: %w", err)
		}
		ok = affected(res) > 0
		return nil
	})
	return ok, err
}

// OutboxReschedule implements delivery.OutboxStorage (group committed on
// SQLite).
func (db *DB) OutboxReschedule(ctx context.Context, queue, channel string, at time.Time) error {
	return db.batch(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := txExec(ctx, tx, &db.hot.obResched, ts(at), queue, channel, ts(at)); err != nil {
			return fmt.Errorf("store: outbox reschedule: %w", err)
		}
		return nil
	})
}

// OutboxFinish implements delivery.OutboxStorage (group committed on
// SQLite, where the finishes of one batch share their statements: it
// returns after the outcome is committed).
func (db *DB) OutboxFinish(ctx context.Context, o delivery.Outcome) (bool, error) {
	req := finishReq{o: o}
	err := db.finish(ctx, &req)
	return req.ok, err
}

// OutboxAmendExpired implements delivery.OutboxAmendStorage: it replaces
// an expired outcome of a key with no pending entry by o.
func (db *DB) OutboxAmendExpired(ctx context.Context, o delivery.Outcome) (bool, error) {
	done := false
	err := db.batch(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, db.q(`UPDATE outbox_outcomes SET kind = ?, code = ?, message = ?, attempts = ?, at = ?
			WHERE queue = ? AND channel = ? AND message_id = ? AND kind = ?
			AND NOT EXISTS (SELECT 1 FROM outbox WHERE queue = ? AND channel = ? AND message_id = ?)`),
			string(o.Kind), string(o.Code), o.Message, o.Attempts, ts(o.At),
			o.Queue, o.Channel, o.MessageID, string(delivery.OutcomeExpired),
			o.Queue, o.Channel, o.MessageID)
		if err != nil {
			return fmt.Errorf("store: amend outcome: %w", err)
		}
		done = affected(res) > 0
		return nil
	})
	return done, err
}

// OutboxFinishNext implements delivery.OutboxFinishNextStorage (group
// committed on SQLite): OutboxFinish and the channel's new head in one
// transaction.
func (db *DB) OutboxFinishNext(ctx context.Context, o delivery.Outcome) (bool, delivery.Entry, bool, error) {
	req := finishReq{o: o, next: true}
	err := db.finish(ctx, &req)
	return req.ok, req.head, req.hasHead, err
}

// finish runs one finish: grouped with the others of its batch on SQLite,
// alone in a transaction on PostgreSQL.
func (db *DB) finish(ctx context.Context, req *finishReq) error {
	one := func(ctx context.Context, tx *sql.Tx) error { return db.finishOne(ctx, tx, req) }
	if db.gc == nil {
		return db.batch(ctx, one)
	}
	return db.gc.doOp(ctx, one, &gcGroups{fin: req})
}

// finishOne is one finish in tx: the delete, the outcome and, when asked,
// the channel's next head.
func (db *DB) finishOne(ctx context.Context, tx *sql.Tx, req *finishReq) error {
	o := req.o
	req.ok, req.head, req.hasHead = false, delivery.Entry{}, false
	res, err := txExec(ctx, tx, &db.hot.obDelete, o.Queue, o.Channel, o.MessageID)
	if err != nil {
		return fmt.Errorf("store: outbox finish: %w", err)
	}
	if req.ok = affected(res) > 0; !req.ok {
		return nil
	}
	db.cacheRemoved(o.Queue, o.Channel, 1)
	if err := db.recordOutcome(ctx, tx, o); err != nil {
		return err
	}
	if !req.next {
		return nil
	}
	next, err := scanEntry(txRow(ctx, tx, &db.hot.obHead, o.Queue, o.Channel))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("store: outbox finish: next head: %w", err)
	}
	req.head, req.hasHead = next, true
	return nil
}

// OutboxExpire implements delivery.OutboxStorage.
func (db *DB) OutboxExpire(ctx context.Context, queue string, now time.Time, limit int) ([]delivery.Outcome, error) {
	var out []delivery.Outcome
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = db.dropEntries(ctx, tx, delivery.OutcomeExpired, "", "expired before delivery", now,
			`SELECT seq FROM outbox WHERE queue = ? AND expires_at <= ? ORDER BY expires_at LIMIT ?`, queue, ts(now), max(limit, 0))
		if len(out) > 0 {
			db.cache.reset() // while this transaction holds the writer
		}
		return err
	})
	return out, err
}

// OutboxPending implements delivery.OutboxStorage.
func (db *DB) OutboxPending(ctx context.Context, queue string) (int, error) {
	var n int
	if err := rRow(ctx, db.r, &db.hot.rPending, queue).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: outbox pending: %w", err)
	}
	return n, nil
}

// OutboxOutcome implements delivery.OutboxStorage.
func (db *DB) OutboxOutcome(ctx context.Context, queue, channel, messageID string) (delivery.Outcome, bool, error) {
	o, err := scanOutcome(rRow(ctx, db.r, &db.hot.rOutcome, queue, channel, messageID))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return delivery.Outcome{}, false, nil
	case err != nil:
		return delivery.Outcome{}, false, fmt.Errorf("store: outbox outcome: %w", err)
	}
	return o, true, nil
}

// OutboxOutcomes implements delivery.OutboxStorage.
func (db *DB) OutboxOutcomes(ctx context.Context, queue, channel string, limit int) ([]delivery.Outcome, error) {
	rows, err := db.r.QueryContext(ctx, db.q(`SELECT `+outcomeCols+` FROM outbox_outcomes WHERE queue = ? AND channel = ?
		ORDER BY at DESC, message_id DESC LIMIT ?`), queue, channel, max(limit, 0))
	if err != nil {
		return nil, fmt.Errorf("store: outbox outcomes: %w", err)
	}
	return collect(rows, scanOutcome, "outbox outcomes")
}

// OutboxPruneOutcomes implements delivery.OutboxStorage.
func (db *DB) OutboxPruneOutcomes(ctx context.Context, queue string, before time.Time, maxKeep int) (int, error) {
	var n int
	err := db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, db.q(`DELETE FROM outbox_outcomes WHERE queue = ? AND at < ?`), queue, ts(before))
		if err != nil {
			return fmt.Errorf("store: prune outcomes: %w", err)
		}
		n = affected(res)
		var count int
		if err := tx.QueryRowContext(ctx, db.q(`SELECT COUNT(*) FROM outbox_outcomes WHERE queue = ?`), queue).Scan(&count); err != nil {
			return fmt.Errorf("store: prune outcomes: %w", err)
		}
		if count <= maxKeep {
			return nil
		}
		res, err = tx.ExecContext(ctx, db.q(`DELETE FROM outbox_outcomes WHERE queue = ? AND (channel, message_id) IN (
			SELECT channel, message_id FROM outbox_outcomes WHERE queue = ? ORDER BY at DESC, channel DESC, message_id DESC `+db.offsetAll()+`)`),
			queue, queue, max(maxKeep, 0))
		if err != nil {
			return fmt.Errorf("store: prune outcomes: %w", err)
		}
		n += affected(res)
		return nil
	})
	return n, err
}

// OutboxDeleteChannel implements delivery.OutboxStorage.
func (db *DB) OutboxDeleteChannel(ctx context.Context, queue, channel string) (int, error) {
	var n int
	err := db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, db.q(`DELETE FROM outbox WHERE queue = ? AND channel = ?`), queue, channel)
		if err != nil {
			return fmt.Errorf("store: outbox delete channel: %w", err)
		}
		n = affected(res)
		if n > 0 && db.cache != nil {
			db.cache.forget(queue, channel) // while this transaction holds the writer
		}
		if _, err := tx.ExecContext(ctx, db.q(`DELETE FROM outbox_outcomes WHERE queue = ? AND channel = ?`), queue, channel); err != nil {
			return fmt.Errorf("store: outbox delete channel: %w", err)
		}
		return nil
	})
	return n, err
}
