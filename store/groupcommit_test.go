package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xconn/xconn/delivery"
)

// gcTestDB opens a SQLite store with a scratch table t (id TEXT PRIMARY KEY).
func gcTestDB(t *testing.T, opts Options) *DB {
	t.Helper()
	db := openDB(t, "sqlite:"+filepath.Join(t.TempDir(), "gc.db"), opts)
	if _, err := db.w.Exec(`CREATE TABLE t (id TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	return db
}

func gcInsert(id string, fail error) func(ctx context.Context, tx *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO t (id) VALUES (?)`, id); err != nil {
			return err
		}
		return fail
	}
}

func gcRows(t *testing.T, db *DB) map[string]bool {
	t.Helper()
	rows, err := db.r.Query(`SELECT id FROM t`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		got[id] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestGroupCommitIsolatesAFailedOperation: in one batch, an operation that
// wrote and then failed leaves nothing behind, and the others commit.
func TestGroupCommitIsolatesAFailedOperation(t *testing.T) {
	db := gcTestDB(t, Options{})
	boom := errors.New("boom")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	ops := []*gcOp{
		{ctx: context.Background(), f: gcInsert("a", nil)},
		{ctx: cancelled, f: gcInsert("never", nil)},
		{ctx: context.Background(), f: gcInsert("b", boom)},
		{ctx: context.Background(), f: gcInsert("c", nil)},
		{ctx: context.Background(), f: gcInsert("a", nil)}, // conflicts with the first
	}
	for _, op := range ops {
		op.done = make(chan error, 1)
	}
	db.gc.run(&gcState{}, ops)
	for i, op := range ops {
		err := <-op.done
		var ok bool
		switch i {
		case 0, 3:
			ok = err == nil
		case 1:
			ok = errors.Is(err, context.Canceled)
		case 2:
			ok = errors.Is(err, boom)
		case 4: // the duplicate key of op 0
			ok = err != nil && !errors.Is(err, boom)
		}
		if !ok {
			t.Errorf("op %d: err = %v", i, err)
		}
	}
	got := gcRows(t, db)
	if len(got) != 2 || !got["a"] || !got["c"] {
		t.Fatalf("rows = %v, want a and c", got)
	}
}

// TestGroupCommitConcurrentCallers: many callers at once, each told success
// only for a committed row, batched into fewer commits than callers.
func TestGroupCommitConcurrentCallers(t *testing.T) {
	db := gcTestDB(t, Options{GroupCommitMax: 8, GroupCommitDelay: time.Millisecond})
	const n = 200
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var fail error
			if i%10 == 0 {
				fail = errors.New("refused")
			}
			errs[i] = db.batch(context.Background(), gcInsert(fmt.Sprint("r", i), fail))
		}()
	}
	wg.Wait()
	got := gcRows(t, db)
	for i, err := range errs {
		id := fmt.Sprint("r", i)
		if (err == nil) != got[id] || (i%10 == 0) != (err != nil) {
			t.Errorf("%s: err %v, stored %v", id, err, got[id])
		}
	}
	if b, ops := db.gc.batches.Load(), db.gc.batched.Load(); b == 0 || ops < n-n/10 {
		t.Fatalf("%d commits for %d operations", b, ops)
	}
}

// TestGroupCommitClose: Close answers what is queued, later calls fail.
func TestGroupCommitClose(t *testing.T) {
	db, err := Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "c.db"), Options{Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.Exec(`CREATE TABLE t (id TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Before Close: committed; racing Close: committed or errClosed.
			if err := db.batch(context.Background(), gcInsert(fmt.Sprint("r", i), nil)); err != nil && !errors.Is(err, errClosed) {
				t.Errorf("batch: %v", err)
			}
		}()
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := db.batch(context.Background(), gcInsert("late", nil)); !errors.Is(err, errClosed) {
		t.Fatalf("after Close: %v, want errClosed", err)
	}
	if _, err := db.OutboxEnqueue(context.Background(), delivery.Entry{Queue: "q", Channel: "c", MessageID: "m"}, 10, time.Now()); err == nil {
		t.Fatal("enqueue after Close succeeded")
	}
}

// TestGroupCommitDelayDefaults: the committer waits up to 1 ms for more
// operations on SQLite (where bigger batches cut the CPU per message) and
// 200 µs on PostgreSQL, unless Options says otherwise.
func TestGroupCommitDelayDefaults(t *testing.T) {
	backends(t, func(t *testing.T, dsn string) {
		want := DefaultGroupCommitDelay
		if !strings.HasPrefix(dsn, "sqlite:") {
			want = pgGroupCommitDelay
		}
		for _, tc := range []struct {
			set, want time.Duration
		}{{0, want}, {3 * time.Millisecond, 3 * time.Millisecond}, {-1, -1}} {
			db, err := Open(context.Background(), dsn, Options{Key: testKey, GroupCommitDelay: tc.set})
			if err != nil {
				t.Fatal(err)
			}
			got := db.gc.delay
			db.Close()
			if got != tc.want {
				t.Errorf("GroupCommitDelay %v: committer waits %v, want %v", tc.set, got, tc.want)
			}
		}
	})
}
