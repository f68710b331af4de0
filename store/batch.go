package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xconn/xconn/delivery"
)

// Grouped operations of the committer. The outbox enqueues, the
// outbox finishes (one per ack) and the inbox puts (one per received
// message) waiting in one batch run as a few statements for all of them
// instead of one to three each: enqueues as one INSERT; finishes as one
// DELETE of every acked entry, one INSERT of their outcomes and one read
// of the channels' next heads; inbox puts as one INSERT of the records
// and one update of the channels' record counts. Results are the same as
// running the operations one after the other in batch order.
//
// On PostgreSQL, where each statement is a network round trip, the
// enqueues first take their channels' advisory locks (one statement, in
// the order the one-by-one path takes them) and read the channels' pending
// counts and earliest expiries (one statement) where SQLite asks the
// writer's channel cache. A lone operation runs alone there.

// gcGroups names the group of an operation: exactly one field is set.
type gcGroups struct {
	enq *enqueueReq
	fin *finishReq
	inb *inboxReq
}

// enqueueReq is an outbox enqueue waiting in a batch, with its result.
type enqueueReq struct {
	e        delivery.Entry
	capacity int
	now      time.Time

	res delivery.EnqueueResult
}

// finishReq is an outbox finish waiting in a batch, with its results.
type finishReq struct {
	o    delivery.Outcome
	next bool // read the channel's next head

	ok      bool
	head    delivery.Entry
	hasHead bool
}

// inboxReq is an inbox put waiting in a batch, with its results.
type inboxReq struct {
	r   delivery.InboxRecord
	max int

	existing delivery.InboxRecord
	inserted bool
}

// errGroup is returned by a group whose statements failed; the committer
// then runs every operation of the batch alone.
var errGroup = errors.New("store: grouped statement failed")

type rowKey struct{ queue, channel, id string }

// Multi-row statements. Each kind takes its rows as VALUES tuples of
// bound parameters; a statement is prepared once per power-of-two row
// count (padded with NULL rows, which match nothing and are filtered out)
// and batches larger than maxManyRows run in chunks.
type manyKind int

const (
	mObInsert manyKind = iota // outbox entries
	mObFinish                 // delete acked entries
	mOcInsert                 // their outcomes
	mObHeads                  // the channels' next heads
	mInInsert                 // inbox records
	mInCount                  // inbox record counts
	mObChans                  // the channels' pending counts and earliest expiries (PostgreSQL)
	mInGet                    // inbox records by key (a read, on the reader pool)
	mObAfter                  // the channels' next entries after a seq (a read)
	numMany
)

// manyRead reports whether kind k is a read outside transactions, run on
// the reader pool (readgroup.go).
func manyRead(k manyKind) bool { return k == mInGet || k == mObAfter }

// maxManyRows bounds the rows of one multi-row statement.
const maxManyRows = 256

// manyBuckets is the number of power-of-two sizes up to maxManyRows.
const manyBuckets = 9

var manyCols = [numMany]int{9, 3, 10, 2, 5, 3, 2, 3, 3}

// manyTypes are the PostgreSQL types of each kind's columns: a parameter
// in VALUES has no type of its own there ("t" text, "b" bytea, "i" bigint).
var manyTypes = [numMany]string{"tttbiiiit", "ttt", "ttttttiiii", "tt", "tttti", "tti", "tt", "ttt", "tti"}

// manySQL returns the text of kind k for rows rows in dialect d. On
// PostgreSQL every parameter is cast to its column's type, and the
// inserted outbox rows carry their VALUES position as a constant, so that
// seq follows it whatever plan the server picks.
func manySQL(d dialect, k manyKind, rows int) string {
	var b strings.Builder
	cols := manyCols[k]
	pg := d == dialectPostgres
	n := 0
	for i := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for c := range cols {
			if c > 0 {
				b.WriteByte(',')
			}
			if !pg {
				b.WriteByte('?')
				continue
			}
			n++
			b.WriteString("$" + strconv.Itoa(n))
			switch manyTypes[k][c] {
			case 't':
				b.WriteString("::text")
			case 'b':
				b.WriteString("::bytea")
			default:
				b.WriteString("::bigint")
			}
		}
		if pg && k == mObInsert {
			b.WriteString("," + strconv.Itoa(i))
		}
		b.WriteByte(')')
	}
	v := b.String()
	switch k {
	case mObInsert:
		// Rows are inserted in VALUES order, so seq follows it.
		sel, order := "v.*", ""
		if pg {
			sel, order = "v.column1, v.column2, v.column3, v.column4, v.column5, v.column6, v.column7, v.column8, v.column9", " ORDER BY v.column10"
		}
		return `INSERT INTO outbox (queue, channel, message_id, payload, created_at, expires_at, attempts, next_attempt, last_error)
			SELECT ` + sel + ` FROM (VALUES ` + v + `) v WHERE v.column1 IS NOT NULL
			AND NOT EXISTS (SELECT 1 FROM outbox_outcomes o WHERE o.queue = v.column1 AND o.channel = v.column2 AND o.message_id = v.column3)` + order + `
			ON CONFLICT (queue, channel, message_id) DO NOTHING RETURNING seq, queue, channel, message_id`
	case mInGet:
		return `SELECT i.queue, i.channel, i.message_id, i.hash, i.at FROM (VALUES ` + v + `) v
			JOIN inbox i ON i.queue = v.column1 AND i.channel = v.column2 AND i.message_id = v.column3`
	case mObAfter:
		return `SELECT v.column3, ` + outboxColsO + ` FROM (VALUES ` + v + `) v
			JOIN outbox o ON o.seq = (SELECT MIN(p.seq) FROM outbox p WHERE p.queue = v.column1 AND p.channel = v.column2 AND p.seq > v.column3)`
	case mObChans:
		return `SELECT v.column1, v.column2,
			(SELECT COUNT(*) FROM outbox o WHERE o.queue = v.column1 AND o.channel = v.column2),
			(SELECT MIN(expires_at) FROM outbox o WHERE o.queue = v.column1 AND o.channel = v.column2)
			FROM (VALUES ` + v + `) v WHERE v.column1 IS NOT NULL`
	case mObFinish:
		return `DELETE FROM outbox WHERE (queue, channel, message_id) IN (VALUES ` + v + `) RETURNING queue, channel, message_id`
	case mOcInsert:
		return `INSERT INTO outbox_outcomes (` + outcomeCols + `) SELECT v.* FROM (VALUES ` + v + `) v WHERE v.column1 IS NOT NULL
			ON CONFLICT (queue, channel, message_id) DO UPDATE SET kind = excluded.kind, code = excluded.code,
			message = excluded.message, attempts = excluded.attempts, created_at = excluded.created_at,
			expires_at = excluded.expires_at, at = excluded.at`
	case mObHeads:
		return `SELECT ` + outboxCols + ` FROM outbox WHERE seq IN (SELECT
			(SELECT MIN(p.seq) FROM outbox p WHERE p.queue = v.column1 AND p.channel = v.column2) FROM (VALUES ` + v + `) v)`
	case mInInsert:
		return `INSERT INTO inbox (queue, channel, message_id, hash, at) SELECT v.* FROM (VALUES ` + v + `) v WHERE v.column1 IS NOT NULL
			ON CONFLICT (queue, channel, message_id) DO NOTHING RETURNING queue, channel, message_id`
	default: // mInCount
		return `INSERT INTO inbox_counts (queue, channel, n) SELECT v.* FROM (VALUES ` + v + `) v WHERE v.column1 IS NOT NULL
			ON CONFLICT (queue, channel) DO UPDATE SET n = inbox_counts.n + excluded.n RETURNING queue, channel, n`
	}
}

// manyStmts holds the prepared multi-row statements of the writer.
type manyStmts struct {
	mu sync.Mutex
	st [numMany][manyBuckets]*sql.Stmt
}

// bucket returns the padded row count for n rows (1 <= n <=
// maxManyRows) and its index.
func bucket(n int) (rows, idx int) {
	idx = bits.Len(uint(n - 1))
	return 1 << idx, idx
}

// prepareMany prepares, outside any transaction, the statements of kind k
// for up to n rows (every size up to n's, since a statement may get fewer
// rows than the operations of its group).
func (db *DB) prepareMany(k manyKind, n int) error {
	if n <= 0 {
		return nil
	}
	_, top := bucket(min(n, maxManyRows))
	for idx := 0; idx <= top; idx++ {
		db.many.mu.Lock()
		have := db.many.st[k][idx] != nil
		db.many.mu.Unlock()
		if have {
			continue
		}
		pool := db.w
		if manyRead(k) {
			pool = db.r
		}
		st, err := pool.PrepareContext(context.Background(), manySQL(db.dialect, k, 1<<idx))
		if err != nil {
			return fmt.Errorf("store: prepare: %w", err)
		}
		db.many.mu.Lock()
		if db.many.st[k][idx] == nil {
			db.many.st[k][idx] = st
			st = nil
		}
		db.many.mu.Unlock()
		if st != nil {
			st.Close()
		}
	}
	return nil
}

// closeMany closes the multi-row statements.
func (db *DB) closeMany() {
	db.many.mu.Lock()
	defer db.many.mu.Unlock()
	for k := range db.many.st {
		for i, st := range db.many.st[k] {
			if st != nil {
				st.Close()
				db.many.st[k][i] = nil
			}
		}
	}
}

// manyRows holds the parameters of a multi-row statement's rows in one
// slice, row after row, so that a batch's rows cost one allocation rather
// than one per row. Not safe for concurrent use.
type manyRows struct {
	k    manyKind
	args []any
}

// newManyRows returns room for n rows of kind k.
func newManyRows(k manyKind, n int) manyRows {
	return manyRows{k: k, args: make([]any, 0, n*manyCols[k])}
}

// add appends a row: manyCols[m.k] values.
func (m *manyRows) add(vals ...any) { m.args = append(m.args, vals...) }

// len is the number of rows added.
func (m *manyRows) len() int { return len(m.args) / manyCols[m.k] }

// manyQuery runs the kind of rows in tx (a read kind: outside
// transactions, tx nil) over its rows, maxManyRows at a time, and calls
// scan for every result row.
func (db *DB) manyQuery(tx *sql.Tx, rows manyRows, scan func(*sql.Rows) error) error {
	ctx := context.Background()
	k := rows.k
	cols := manyCols[k]
	rest := rows.args
	if len(rest)%cols != 0 {
		return errGroup // a row of the wrong width: run the operations alone
	}
	for len(rest) > 0 {
		c := min(len(rest)/cols, maxManyRows)
		chunk := rest[:c*cols]
		rest = rest[c*cols:]
		n, idx := bucket(c)
		db.many.mu.Lock()
		st := db.many.st[k][idx]
		db.many.mu.Unlock()
		if st == nil {
			return errGroup // not prepared: run the operations alone
		}
		args := chunk
		if n > c { // the statement has n rows: the rest are NULL rows
			args = make([]any, n*cols)
			copy(args, chunk)
		}
		if scan == nil {
			if _, err := tx.StmtContext(ctx, st).ExecContext(ctx, args...); err != nil {
				return errGroup
			}
			continue
		}
		if tx != nil {
			st = tx.StmtContext(ctx, st)
		}
		res, err := st.QueryContext(ctx, args...)
		if err != nil {
			if tx == nil {
				return err
			}
			return errGroup
		}
		for res.Next() {
			if err := scan(res); err != nil {
				res.Close()
				return errGroup
			}
		}
		if res.Close() != nil || res.Err() != nil {
			return errGroup
		}
	}
	return nil
}

// prepareGroups prepares, before the batch's transaction, the multi-row
// statements its groups may need.
func (db *DB) prepareGroups(enqs, fins, inbs int) error {
	chans := 0
	if db.cache == nil { // PostgreSQL reads the enqueues' channels (SQLite's cache answers)
		chans = enqs
	}
	for _, p := range []struct {
		k manyKind
		n int
	}{{mObInsert, enqs}, {mObChans, chans}, {mObFinish, fins}, {mOcInsert, fins}, {mObHeads, fins}, {mInInsert, inbs}, {mInCount, inbs}} {
		if err := db.prepareMany(p.k, p.n); err != nil {
			return err
		}
	}
	return nil
}

// enqueueGroup runs the enqueues ops (op.grp.enq set) in tx. When the
// channel cache says that each of them finds room and no expired entry in
// its channel, one INSERT stores them all (in batch order, so seq follows
// it) except those whose key is pending or done; those, and every enqueue
// of a group that does not qualify, run one by one in batch order.
func (db *DB) enqueueGroup(tx *sql.Tx, ops []*gcOp) error {
	ctx := context.Background()
	type chanState struct {
		ci    chanInfo
		added int
	}
	chans := make(map[chanKey]*chanState, len(ops))
	var infos map[chanKey]chanInfo
	if db.cache == nil { // PostgreSQL: no cache, read under the channels' locks
		var err error
		if infos, err = db.lockedChanInfos(tx, ops); err != nil {
			return err
		}
	}
	simple := true
	for _, op := range ops {
		r := op.grp.enq
		r.res = delivery.EnqueueResult{}
		e := &r.e
		k := chanKey{e.Queue, e.Channel}
		st := chans[k]
		if st == nil {
			ci, ok := infos[k]
			if infos == nil {
				var err error
				if ci, err = db.cache.get(ctx, db, tx, e.Queue, e.Channel); err != nil {
					return errGroup
				}
			} else if !ok {
				return errGroup
			}
			st = &chanState{ci: ci}
			chans[k] = st
		}
		if st.ci.minExp <= ts(r.now) || r.capacity > 0 && st.ci.n+st.added >= r.capacity {
			simple = false
			break
		}
		st.added++
	}
	if !simple {
		for _, op := range ops {
			if err := op.f(context.WithoutCancel(op.ctx), tx); err != nil {
				return err
			}
		}
		return nil
	}
	rows := newManyRows(mObInsert, len(ops))
	for _, op := range ops {
		e := &op.grp.enq.e
		rows.add(e.Queue, e.Channel, e.MessageID, nonNil(e.Payload), ts(e.CreatedAt), ts(e.ExpiresAt), e.Attempts, ts(e.NextAttempt), e.LastError)
	}
	seqs := make(map[rowKey]int64, len(ops))
	err := db.manyQuery(tx, rows, func(r *sql.Rows) error {
		var k rowKey
		var seq int64
		if err := r.Scan(&seq, &k.queue, &k.channel, &k.id); err != nil {
			return err
		}
		seqs[k] = seq
		return nil
	})
	if err != nil {
		return err
	}
	for k := range chans {
		chans[k].added = 0
	}
	for _, op := range ops {
		r := op.grp.enq
		e := r.e
		k := rowKey{e.Queue, e.Channel, e.MessageID}
		seq, ok := seqs[k]
		if !ok {
			// Pending or done before this batch, or put earlier in it: the
			// probe of a lone enqueue says which.
			if err := op.f(context.WithoutCancel(op.ctx), tx); err != nil {
				return err
			}
			continue
		}
		delete(seqs, k)
		st := chans[chanKey{e.Queue, e.Channel}]
		e.Seq = seq
		r.res.Status, r.res.Entry, r.res.Head = delivery.Enqueued, e, st.ci.n+st.added == 0
		st.added++
		if db.cache != nil {
			db.cache.added(e.Queue, e.Channel, ts(e.ExpiresAt))
		}
	}
	return nil
}

// lockedChanInfos takes, on PostgreSQL, the advisory locks of the
// channels of the enqueues ops in their order (the committer sorted the
// batch so that every transaction takes them in one order, as the
// one-by-one path does), then reads each channel's pending count and
// earliest expiry in one statement: what a lone enqueue's probe reads,
// under the same locks, so that another process's enqueue cannot change
// them before this transaction commits.
func (db *DB) lockedChanInfos(tx *sql.Tx, ops []*gcOp) (map[chanKey]chanInfo, error) {
	ctx := context.Background()
	infos := make(map[chanKey]chanInfo, len(ops))
	var locks []int64
	rows := newManyRows(mObChans, len(ops))
	for _, op := range ops {
		e := &op.grp.enq.e
		k := chanKey{e.Queue, e.Channel}
		if _, ok := infos[k]; ok {
			continue
		}
		infos[k] = chanInfo{}
		locks = append(locks, lockID("outbox:"+e.Queue+"\x00"+e.Channel))
		rows.add(e.Queue, e.Channel)
	}
	// unnest yields the keys in array order, and each row's lock is taken
	// as the row is counted.
	if _, err := tx.ExecContext(ctx, `SELECT COUNT(pg_advisory_xact_lock(k)) FROM unnest($1::bigint[]) AS t(k)`, locks); err != nil {
		return nil, errGroup
	}
	clear(infos)
	err := db.manyQuery(tx, rows, func(r *sql.Rows) error {
		var k chanKey
		var n int
		var minExp sql.NullInt64
		if err := r.Scan(&k.queue, &k.channel, &n, &minExp); err != nil {
			return err
		}
		ci := chanInfo{n: n, minExp: noExpiry}
		if minExp.Valid {
			ci.minExp = minExp.Int64
		}
		infos[k] = ci
		return nil
	})
	if err != nil {
		return nil, err
	}
	return infos, nil
}

// finishGroup runs the finishes ops (op.grp.fin set) in tx.
func (db *DB) finishGroup(tx *sql.Tx, ops []*gcOp) error {
	rows := newManyRows(mObFinish, len(ops))
	for _, op := range ops {
		f := op.grp.fin
		f.ok, f.head, f.hasHead = false, delivery.Entry{}, false
		rows.add(f.o.Queue, f.o.Channel, f.o.MessageID)
	}
	deleted := make(map[rowKey]bool, len(ops))
	err := db.manyQuery(tx, rows, func(r *sql.Rows) error {
		var k rowKey
		if err := r.Scan(&k.queue, &k.channel, &k.id); err != nil {
			return err
		}
		deleted[k] = true
		return nil
	})
	if err != nil {
		return err
	}
	// Outcomes of the deleted entries, in batch order (the first finish
	// of a key is the one that found it pending).
	ocs := newManyRows(mOcInsert, len(deleted))
	var heads manyRows
	seen := map[chanKey]bool{}
	for _, op := range ops {
		f := op.grp.fin
		o := &f.o
		k := rowKey{o.Queue, o.Channel, o.MessageID}
		if !deleted[k] {
			continue
		}
		delete(deleted, k)
		f.ok = true
		db.cacheRemoved(o.Queue, o.Channel, 1)
		if ck := (chanKey{o.Queue, o.Channel}); f.next && !seen[ck] {
			seen[ck] = true
			if heads.args == nil {
				heads = newManyRows(mObHeads, len(ops))
			}
			heads.add(o.Queue, o.Channel)
		}
		ocs.add(o.Queue, o.Channel, o.MessageID, string(o.Kind), string(o.Code), o.Message,
			o.Attempts, ts(o.CreatedAt), ts(o.ExpiresAt), ts(o.At))
	}
	if ocs.len() > 0 {
		if err := db.manyQuery(tx, ocs, nil); err != nil {
			return err
		}
	}
	if heads.args == nil {
		return nil
	}
	next := make(map[chanKey]delivery.Entry, heads.len())
	err = db.manyQuery(tx, heads, func(r *sql.Rows) error {
		e, err := scanEntry(r)
		if err != nil {
			return err
		}
		next[chanKey{e.Queue, e.Channel}] = e
		return nil
	})
	if err != nil {
		return err
	}
	for _, op := range ops {
		f := op.grp.fin
		if !f.ok || !f.next {
			continue
		}
		if e, ok := next[chanKey{f.o.Queue, f.o.Channel}]; ok {
			f.head, f.hasHead = e, true
		}
	}
	return nil
}

// inboxGroup runs the inbox puts ops (op.grp.inb set) in tx.
func (db *DB) inboxGroup(tx *sql.Tx, ops []*gcOp) error {
	ctx := context.Background()
	rows := newManyRows(mInInsert, len(ops))
	for _, op := range ops {
		q := op.grp.inb
		q.existing, q.inserted = delivery.InboxRecord{}, false
		r := &q.r
		rows.add(r.Queue, r.Channel, r.MessageID, r.Hash, ts(r.At))
	}
	inserted := make(map[rowKey]bool, len(ops))
	err := db.manyQuery(tx, rows, func(r *sql.Rows) error {
		var k rowKey
		if err := r.Scan(&k.queue, &k.channel, &k.id); err != nil {
			return err
		}
		inserted[k] = true
		return nil
	})
	if err != nil {
		return err
	}
	type chanAdd struct {
		k   int
		max int
	}
	adds := map[chanKey]*chanAdd{}
	var order []chanKey
	for _, op := range ops {
		q := op.grp.inb
		r := &q.r
		k := rowKey{r.Queue, r.Channel, r.MessageID}
		if inserted[k] {
			delete(inserted, k)
			q.inserted = true
			ck := chanKey{r.Queue, r.Channel}
			a := adds[ck]
			if a == nil {
				a = &chanAdd{max: q.max}
				adds[ck] = a
				order = append(order, ck)
			}
			a.k++
			if q.max > 0 && (a.max <= 0 || q.max < a.max) {
				a.max = q.max
			}
			continue
		}
		// The key existed before this batch or was put earlier in it.
		ex, err := scanInbox(txRow(ctx, tx, &db.hot.inLookup, r.Queue, r.Channel, r.MessageID))
		if err != nil {
			return fmt.Errorf("store: inbox put: %w", err)
		}
		q.existing = ex
	}
	if len(order) == 0 {
		return nil
	}
	// In one order in every transaction: two PostgreSQL batches updating
	// the same counts must not wait for each other's rows crosswise.
	slices.SortFunc(order, func(a, b chanKey) int {
		return cmp.Or(cmp.Compare(a.queue, b.queue), cmp.Compare(a.channel, b.channel))
	})
	counts := newManyRows(mInCount, len(order))
	for _, ck := range order {
		counts.add(ck.queue, ck.channel, adds[ck].k)
	}
	type over struct {
		ck     chanKey
		excess int
	}
	var trims []over
	err = db.manyQuery(tx, counts, func(r *sql.Rows) error {
		var ck chanKey
		var cnt int
		if err := r.Scan(&ck.queue, &ck.channel, &cnt); err != nil {
			return err
		}
		if a := adds[ck]; a != nil && a.max > 0 && cnt > a.max {
			trims = append(trims, over{ck, cnt - a.max})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, t := range trims {
		if err := db.inboxTrim(ctx, tx, t.ck.queue, t.ck.channel, t.excess); err != nil {
			return err
		}
	}
	return nil
}

// txQuery runs the query s in tx.
func txQuery(ctx context.Context, tx *sql.Tx, s *hotStmt, args ...any) (*sql.Rows, error) {
	if s.st == nil {
		return tx.QueryContext(ctx, s.query, args...)
	}
	return tx.StmtContext(ctx, s.st).QueryContext(ctx, args...)
}
