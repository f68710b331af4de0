package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/xconn/xconn/delivery"
)

// Group commit. The hot write operations of the delivery engine (outbox
// enqueue, finish and retry, inbox put) are handed to one committer
// goroutine that runs every operation waiting at that moment in one
// transaction and commits once. A caller returns only after the COMMIT of
// its batch returned, so what it was told is stored is in the WAL: with
// SQLite's synchronous=NORMAL a committed transaction survives a crash of
// the process (SIGKILL included); only an operating system crash or power
// loss can lose the last commits; PostgreSQL's commit is durable as the
// server is configured (one WAL flush per batch instead of per operation).
//
// On PostgreSQL the advisory locks of a batch's enqueues (one per channel)
// are held until its commit. Two processes whose batches take two such
// locks in opposite orders deadlock; PostgreSQL aborts one transaction
// and, as after any failed batch, its operations run again one
// transaction each.
//
// While one commit runs the next operations queue up, so concurrent callers
// share the cost of one commit. A lone caller never waits; after a batch of
// waitAfter operations or more the committer waits up to delay for more.

// DefaultGroupCommitMax is the default of [Options.GroupCommitMax].
const DefaultGroupCommitMax = 256

// DefaultGroupCommitDelay is the default of [Options.GroupCommitDelay] on
// SQLite.
// A commit's cost is mostly fixed (its WAL frames: the pages of every
// B-tree it touched, written one frame at a time), so the operations per
// commit set the CPU per message. At 200 µs a moderately loaded committer
// stayed in small batches (2-5 operations per commit at 64 chat channels;
// the wait starts only after a batch of waitAfter or more); at 1 ms the
// chat path's batches grew to 8-48 and the process CPU per message fell by
// 10-25 % (xconn bench inbound/outbound at 64 channels, two A/B pairs:
// 184-209 -> 177-180 µs inbound, 244-247 -> 187-196 µs outbound; 2 ms gave
// no more). A lone caller still never waits.
const DefaultGroupCommitDelay = time.Millisecond

// pgGroupCommitDelay is the default wait on PostgreSQL, where the gain was
// not shown (its batches are network round trips on four workers, and the
// A/B runs moved within the machine's noise).
const pgGroupCommitDelay = 200 * time.Microsecond

// waitAfter is the size of a batch from which the committer waits for the
// next batch to fill: smaller batches mean a caller or two, who would only
// lose time.
const waitAfter = 4

// errClosed is returned by operations submitted after Close.
var errClosed = errors.New("store: closed")

// gcOp is one operation waiting for the committer.
type gcOp struct {
	ctx context.Context
	f   func(ctx context.Context, tx *sql.Tx) error
	// grp, when set, marks an outbox enqueue or finish or an inbox put
	// that a batch runs together with the others of its kind, a few
	// statements for all of them (batch.go); f runs it alone when the
	// batch fails.
	grp  *gcGroups
	done chan error // capacity 1
}

// committer owns the goroutines that run batched write transactions: one
// on the single SQLite writer connection, a few on PostgreSQL. Its methods
// are safe for concurrent use.
type committer struct {
	db      *DB
	w       *sql.DB
	maxOps  int
	delay   time.Duration
	ops     chan *gcOp // bounded: maxOps
	quit    chan struct{}
	stopped chan struct{}

	mu     sync.RWMutex // guards closed against sends in flight
	closed bool

	// free recycles operations (and their done channels) between calls.
	free sync.Pool

	// workers is the number of goroutines running batches: one on SQLite
	// (one writer connection), a few on PostgreSQL, where a batch's
	// statements are network round trips and concurrent transactions
	// overlap them.
	workers int

	// batches and batched count the committed transactions and the operations
	// in them (for benchmarks: batched/batches is the mean batch size);
	// busy is the time spent running and committing them.
	batches, batched atomic.Int64
	busy             atomic.Int64 // nanoseconds
	// fallbacks counts the batches rolled back whose operations then ran
	// one transaction each (a group's statement or an operation failed).
	fallbacks atomic.Int64
}

// gcState is the scratch space of one worker of a committer.
type gcState struct {
	// errs holds the results of the batch being run.
	errs []error
	// enqs, fins and inbs collect the grouped operations of the batch.
	enqs []*gcOp
	fins []*gcOp
	inbs []*gcOp
}

// newCommitter starts the committer's workers goroutines; close stops
// them.
func newCommitter(db *DB, maxOps int, delay time.Duration, workers int) *committer {
	c := &committer{db: db, w: db.w, maxOps: maxOps, delay: delay, ops: make(chan *gcOp, maxOps),
		quit: make(chan struct{}), stopped: make(chan struct{}), workers: max(workers, 1)}
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(c.loop)
	}
	go func() {
		wg.Wait()
		close(c.stopped)
	}()
	return c
}

// do runs f in a batched write transaction and returns f's error, or the
// error of the transaction. f must use only tx (the writer connection is
// held by the batch) and must not keep tx. When do returns nil the effects
// of f are committed.
func (c *committer) do(ctx context.Context, f func(ctx context.Context, tx *sql.Tx) error) error {
	return c.doOp(ctx, f, nil)
}

// doOp is do for an operation that may be grouped (grp set).
func (c *committer) doOp(ctx context.Context, f func(ctx context.Context, tx *sql.Tx) error, grp *gcGroups) error {
	op, _ := c.free.Get().(*gcOp)
	if op == nil {
		op = &gcOp{done: make(chan error, 1)}
	}
	op.ctx, op.f, op.grp = ctx, f, grp
	defer func() {
		// op.done is empty again: it was never sent, or its answer was
		// taken below.
		op.ctx, op.f, op.grp = nil, nil, nil
		c.free.Put(op)
	}()
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return errClosed
	}
	select {
	case c.ops <- op:
	case <-ctx.Done():
		c.mu.RUnlock()
		return ctx.Err()
	}
	c.mu.RUnlock()
	// Every queued operation is answered, also while closing; the batch is
	// bounded, so this wait is too.
	return <-op.done
}

// close stops accepting operations, lets the committer finish the queued
// ones and waits for it.
func (c *committer) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.stopped
		return
	}
	c.closed = true
	c.mu.Unlock()
	close(c.quit)
	<-c.stopped
}

func (c *committer) loop() {
	st := &gcState{}
	batch := make([]*gcOp, 0, c.maxOps)
	last := 0 // size of the previous batch
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case op := <-c.ops:
			batch = append(batch[:0], op)
		case <-c.quit:
			// No sender is left (closed is set under the lock); run what
			// is queued, then stop.
			for {
				batch = batch[:0]
				for len(batch) < c.maxOps {
					select {
					case op := <-c.ops:
						batch = append(batch, op)
						continue
					default:
					}
					break
				}
				if len(batch) == 0 {
					return
				}
				c.run(st, batch)
			}
		}
	fill:
		for len(batch) < c.maxOps {
			select {
			case op := <-c.ops:
				batch = append(batch, op)
			default:
				break fill
			}
		}
		// Under concurrency (the last batch held waitAfter operations or
		// more) wait up to delay for more, so that one commit serves more.
		if c.delay > 0 && last >= waitAfter && len(batch) < c.maxOps {
			timer.Reset(c.delay)
		wait:
			for len(batch) < c.maxOps {
				select {
				case op := <-c.ops:
					batch = append(batch, op)
				case <-timer.C:
					break wait
				}
			}
			timer.Stop()
		}
		last = len(batch)
		c.run(st, batch)
		clear(batch)
	}
}

// run executes batch in one transaction and answers every operation. The
// outbox finishes and the inbox puts of the batch run grouped, after the
// other operations (see batch.go). When an operation or a group fails,
// the transaction is rolled back (so the failure leaves nothing behind)
// and the others run again, one transaction each; operations reset their
// results when they start, so a second run is safe.
func (c *committer) run(st *gcState, batch []*gcOp) {
	start := time.Now()
	defer func() { c.busy.Add(int64(time.Since(start))) }()
	pg := c.db.dialect == dialectPostgres
	if len(batch) == 1 && (batch[0].grp == nil || pg) {
		// Alone (on PostgreSQL a grouped operation runs as many statements
		// alone as in its group).
		batch[0].done <- c.runOne(batch[0])
		return
	}
	if pg {
		// PostgreSQL: the enqueues last, in the order of their advisory
		// locks, so that concurrent batches take them in one order.
		slices.SortStableFunc(batch, func(a, b *gcOp) int {
			ka, kb := lockKey(a), lockKey(b)
			switch {
			case ka == nil && kb == nil:
				return 0
			case ka == nil:
				return -1
			case kb == nil:
				return 1
			}
			return cmp.Or(cmp.Compare(ka.Queue, kb.Queue), cmp.Compare(ka.Channel, kb.Channel))
		})
	}
	errs := append(st.errs[:0], make([]error, len(batch))...)
	st.errs = errs
	defer clear(errs)
	var nEnq, nFin, nInb int
	for _, op := range batch {
		if g := op.grp; g != nil {
			switch {
			case g.enq != nil:
				nEnq++
			case g.fin != nil:
				nFin++
			default:
				nInb++
			}
		}
	}
	// Multi-row statements are prepared before the transaction takes the
	// writer connection (once per size; see batch.go). When that fails,
	// the groups fail and their operations run alone.
	_ = c.db.prepareGroups(nEnq, nFin, nInb)
	// The transaction and the statements of the batch are not cancelled by
	// one caller's context: interrupting SQLite inside an explicit
	// transaction may roll back all of it. Each caller's context is checked
	// before its operation starts.
	tx, err := c.w.BeginTx(context.Background(), nil)
	if err != nil {
		err = fmt.Errorf("store: begin: %w", err)
		for _, op := range batch {
			op.done <- err
		}
		return
	}
	failed := -1
	if err := c.db.cache.check(context.Background(), c.db, tx); err != nil {
		failed = len(batch) // none failed: every operation runs alone
	}
	enqs, fins, inbs := st.enqs[:0], st.fins[:0], st.inbs[:0]
	for i, op := range batch {
		if failed >= 0 {
			break
		}
		if errs[i] = op.ctx.Err(); errs[i] != nil {
			continue
		}
		if g := op.grp; g != nil {
			switch {
			case g.enq != nil:
				enqs = append(enqs, op)
			case g.fin != nil:
				fins = append(fins, op)
			default:
				inbs = append(inbs, op)
			}
			continue
		}
		if errs[i] = op.f(context.WithoutCancel(op.ctx), tx); errs[i] != nil {
			failed = i
		}
	}
	// The groups run after the other operations, enqueues first: a serial
	// order like any other (the operations of one batch are concurrent).
	if failed < 0 && len(enqs) > 0 && c.db.enqueueGroup(tx, enqs) != nil {
		failed = len(batch)
	}
	if failed < 0 && len(fins) > 0 && c.db.finishGroup(tx, fins) != nil {
		failed = len(batch)
	}
	if failed < 0 && len(inbs) > 0 && c.db.inboxGroup(tx, inbs) != nil {
		failed = len(batch)
	}
	clear(enqs)
	clear(fins)
	clear(inbs)
	st.enqs, st.fins, st.inbs = enqs[:0], fins[:0], inbs[:0]
	if failed >= 0 {
		c.fallbacks.Add(1)
		tx.Rollback()
		c.db.cache.reset() // it may hold changes that were rolled back
		for i, op := range batch {
			switch {
			case i == failed && retryAlone(errs[i]):
				// A conflict with another process's transaction
				// (PostgreSQL: deadlock, serialization): alone it may pass.
				op.done <- c.runOne(op)
			case i == failed || errs[i] != nil && i < failed:
				op.done <- errs[i]
			default:
				op.done <- c.runOne(op)
			}
		}
		return
	}
	if err := tx.Commit(); err != nil {
		c.db.cache.reset()
		err = fmt.Errorf("store: commit: %w", err)
		for _, op := range batch {
			op.done <- err
		}
		return
	}
	c.batches.Add(1)
	c.batched.Add(int64(len(batch)))
	for i, op := range batch {
		op.done <- errs[i]
	}
}

// lockKey returns the entry of an enqueue (whose transaction takes the
// channel's advisory lock on PostgreSQL), nil for other operations.
func lockKey(op *gcOp) *delivery.Entry {
	if op.grp == nil || op.grp.enq == nil {
		return nil
	}
	return &op.grp.enq.e
}

// retryAlone reports whether err is a conflict between transactions that
// running the operation again, in a transaction of its own, may resolve:
// PostgreSQL's deadlock_detected (40P01) and serialization_failure (40001).
func retryAlone(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// runOne executes one operation in a transaction of its own.
func (c *committer) runOne(op *gcOp) error {
	if err := op.ctx.Err(); err != nil {
		return err
	}
	tx, err := c.w.BeginTx(context.Background(), nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	if err := c.db.cache.check(context.Background(), c.db, tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := op.f(context.WithoutCancel(op.ctx), tx); err != nil {
		tx.Rollback()
		c.db.cache.reset()
		return err
	}
	if err := tx.Commit(); err != nil {
		c.db.cache.reset()
		return fmt.Errorf("store: commit: %w", err)
	}
	c.batches.Add(1)
	c.batched.Add(1)
	return nil
}

// CommitStats are the counters of the SQLite group committer.
type CommitStats struct {
	// Commits is the number of write transactions committed.
	Commits int64
	// Ops is the number of operations in them: Ops/Commits is the mean
	// number of operations per commit.
	Ops int64
	// Busy is the time the committer spent running and committing them.
	Busy time.Duration
}

// CommitStats returns the group committer's counters since Open; zero on
// PostgreSQL, where each operation is a transaction of its own.
func (db *DB) CommitStats() CommitStats {
	if db.gc == nil {
		return CommitStats{}
	}
	return CommitStats{Commits: db.gc.batches.Load(), Ops: db.gc.batched.Load(), Busy: time.Duration(db.gc.busy.Load())}
}

// batch runs f in one write transaction, through the group committer. On
// success f's effects are committed.
func (db *DB) batch(ctx context.Context, f func(ctx context.Context, tx *sql.Tx) error) error {
	if db.gc == nil {
		return db.tx(ctx, func(tx *sql.Tx) error { return f(ctx, tx) })
	}
	return db.gc.do(ctx, f)
}
