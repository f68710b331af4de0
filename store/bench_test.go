package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xconn/xconn/delivery"
)

// Benchmarks of outbox enqueue→ack throughput next to the raw rate of the
// same database doing one insert and one delete per message:
//
//	go test -run '^$' -bench Outbox -benchtime 2s ./store/
//
// (PostgreSQL rows appear when XCONN_TEST_POSTGRES is set.)
//
//   - outbox_enqueue_to_ack: one producer, Enqueue after Enqueue, 16
//     channels; the delivery loop acks concurrently.
//   - outbox_enqueue_to_ack_parallel: benchProducers producers at once over
//     benchChannels channels with at most benchWindow messages unacked (4
//     per channel, as `xconn bench` inbound/outbound keep), what a connector
//     with many users does; on SQLite their writes are group committed, and
//     the mean batch size is reported as ops/commit.
//   - raw_insert_delete: one INSERT and one DELETE per message, each its own
//     transaction.
//   - raw_insert_delete_batched: the same statements, benchRawBatch
//     messages per transaction (each transaction inserts benchRawBatch new
//     rows and deletes the ones the previous transaction inserted), the
//     batching a group commit can reach at best.

const (
	benchChannels  = 16
	benchProducers = 64
	benchWindow    = 4 * benchChannels
	benchRawBatch  = 64
)

func benchDSNs(b *testing.B) map[string]func(b *testing.B) string {
	return map[string]func(b *testing.B) string{
		"sqlite": func(b *testing.B) string { return "sqlite:" + filepath.Join(b.TempDir(), "bench.db") },
		"postgres": func(b *testing.B) string {
			if os.Getenv("XCONN_TEST_POSTGRES") == "" {
				b.Skip("XCONN_TEST_POSTGRES is not set")
			}
			return postgresDSN(b)
		},
	}
}

func BenchmarkOutbox(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		mk := benchDSNs(b)[backend]
		b.Run(backend+"/outbox_enqueue_to_ack", func(b *testing.B) { benchOutbox(b, mk(b), 1, 0) })
		b.Run(backend+"/outbox_enqueue_to_ack_parallel", func(b *testing.B) { benchOutbox(b, mk(b), benchProducers, benchWindow) })
		b.Run(backend+"/raw_insert_delete", func(b *testing.B) { benchRaw(b, mk(b), 1) })
		b.Run(backend+"/raw_insert_delete_batched", func(b *testing.B) { benchRaw(b, mk(b), benchRawBatch) })
	}
}

// benchOutbox enqueues b.N messages from producers goroutines, at most
// window unacked (0: no bound), and waits until every one was acked.
func benchOutbox(b *testing.B, dsn string, producers, window int) {
	db := openBench(b, dsn)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	left := make(chan struct{}, b.N)
	var slots chan struct{}
	if window > 0 {
		slots = make(chan struct{}, window)
	}
	ob, err := delivery.NewOutbox(delivery.OutboxOptions{Storage: db, Queue: "bench",
		Send: func(ctx context.Context, e delivery.Entry) error { return nil },
		OnOutcome: func(delivery.Outcome) {
			if slots != nil {
				<-slots
			}
			left <- struct{}{}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { ob.Run(ctx); close(done) }()
	payload := make([]byte, 256)
	var batches0, ops0 int64
	if db.gc != nil {
		batches0, ops0 = db.gc.batches.Load(), db.gc.batched.Load()
	}
	b.ResetTimer()
	cpu0 := cpuTime(b)
	runProducers(b, producers, func(i int) error {
		if slots != nil {
			slots <- struct{}{}
		}
		_, err := ob.Enqueue(ctx, fmt.Sprint("ch", i%benchChannels), fmt.Sprint("m", i), payload)
		return err
	})
	for range b.N {
		<-left
	}
	b.StopTimer()
	reportRate(b, cpu0)
	reportOpsPerCommit(b, db, batches0, ops0)
	cancel()
	<-done
}

// benchRaw inserts and deletes b.N rows, batch messages per transaction.
func benchRaw(b *testing.B, dsn string, batch int) {
	db := openBench(b, dsn)
	ctx := context.Background()
	if _, err := db.w.ExecContext(ctx, `CREATE TABLE bench_raw (id TEXT PRIMARY KEY, payload BYTEA)`); err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 256)
	ins, del := db.q(`INSERT INTO bench_raw (id, payload) VALUES (?, ?)`), db.q(`DELETE FROM bench_raw WHERE id = ?`)
	b.ResetTimer()
	cpu0 := cpuTime(b)
	if batch <= 1 {
		for i := range b.N {
			id := fmt.Sprint("m", i)
			if _, err := db.w.ExecContext(ctx, ins, id, payload); err != nil {
				b.Fatal(err)
			}
			if _, err := db.w.ExecContext(ctx, del, id); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		for start := 0; start < b.N+batch; start += batch {
			err := db.tx(ctx, func(tx *sql.Tx) error {
				for i := start; i < min(start+batch, b.N); i++ {
					if _, err := tx.ExecContext(ctx, ins, fmt.Sprint("m", i), payload); err != nil {
						return err
					}
				}
				for i := max(start-batch, 0); i < min(start, b.N); i++ {
					if _, err := tx.ExecContext(ctx, del, fmt.Sprint("m", i)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	reportRate(b, cpu0)
}

// cpuTime is the CPU time (user and system) the process used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportRate reports msgs/s and the process CPU time per message since
// cpu0: on a shared machine the CPU cost is the steadier figure.
func reportRate(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/msg")
}

func openBench(b *testing.B, dsn string) *DB {
	db, err := Open(context.Background(), dsn, Options{Key: testKey})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// BenchmarkInbox measures the receiver's side of a delivered message: the
// lookup of its message_id (Inbox.Begin) and the record of it
// (Inbox.Commit), from benchProducers goroutines over benchChannels
// channels at once, as the host does under the chat load:
//
//	go test -run '^$' -bench Inbox -benchtime 2s ./store/
func BenchmarkInbox(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		mk := benchDSNs(b)[backend]
		b.Run(backend+"/inbox_get_put_parallel", func(b *testing.B) { benchInbox(b, mk(b)) })
	}
}

func benchInbox(b *testing.B, dsn string) {
	db := openBench(b, dsn)
	ctx := context.Background()
	in, err := delivery.NewInbox(delivery.InboxOptions{Storage: db, Queue: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	var batches0, ops0 int64
	if db.gc != nil {
		batches0, ops0 = db.gc.batches.Load(), db.gc.batched.Load()
	}
	b.ResetTimer()
	cpu0 := cpuTime(b)
	runProducers(b, benchProducers, func(i int) error {
		ch, id := fmt.Sprint("ch", i%benchChannels), fmt.Sprint("m", i)
		c := delivery.Content{Text: id}
		v, err := in.Begin(ctx, ch, id, c)
		if err == nil && v == delivery.VerdictNew {
			_, err = in.Commit(ctx, ch, id, c)
		}
		return err
	})
	b.StopTimer()
	reportRate(b, cpu0)
	reportOpsPerCommit(b, db, batches0, ops0)
}

// runProducers runs op for i = 0 .. b.N-1 from producers goroutines (i
// modulo producers each) and fails b with the first error.
func runProducers(b *testing.B, producers int, op func(i int) error) {
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for p := range producers {
		wg.Go(func() {
			for i := p; i < b.N; i += producers {
				if err := op(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

// reportOpsPerCommit reports the mean operations per commit of db's group
// committer since its counters read batches0 and ops0.
func reportOpsPerCommit(b *testing.B, db *DB, batches0, ops0 int64) {
	if db.gc == nil {
		return
	}
	if n := db.gc.batches.Load() - batches0; n > 0 {
		b.ReportMetric(float64(db.gc.batched.Load()-ops0)/float64(n), "ops/commit")
	}
}
