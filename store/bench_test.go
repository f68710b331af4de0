package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/xconn/xconn/delivery"
)

// Benchmarks of outbox enqueue→ack throughput next to the raw rate of the
// same database doing one insert and one delete per message:
//
//	go test -run '^$' -bench . ./store/
//
// (PostgreSQL rows appear when XCONN_TEST_POSTGRES is set.)

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
		b.Run(backend+"/outbox_enqueue_to_ack", func(b *testing.B) {
			db := openBench(b, mk(b))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			left := make(chan struct{}, b.N)
			ob, err := delivery.NewOutbox(delivery.OutboxOptions{Storage: db, Queue: "bench",
				Send:      func(ctx context.Context, e delivery.Entry) error { return nil },
				OnOutcome: func(delivery.Outcome) { left <- struct{}{} },
			})
			if err != nil {
				b.Fatal(err)
			}
			done := make(chan struct{})
			go func() { ob.Run(ctx); close(done) }()
			payload := make([]byte, 256)
			b.ResetTimer()
			for i := range b.N {
				if _, err := ob.Enqueue(ctx, fmt.Sprint("ch", i%16), fmt.Sprint("m", i), payload); err != nil {
					b.Fatal(err)
				}
			}
			for range b.N {
				<-left
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			cancel()
			<-done
		})
		b.Run(backend+"/raw_insert_delete", func(b *testing.B) {
			db := openBench(b, mk(b))
			ctx := context.Background()
			if _, err := db.w.ExecContext(ctx, `CREATE TABLE bench_raw (id TEXT PRIMARY KEY, payload BYTEA)`); err != nil {
				b.Fatal(err)
			}
			payload := make([]byte, 256)
			b.ResetTimer()
			for i := range b.N {
				id := fmt.Sprint("m", i)
				if _, err := db.w.ExecContext(ctx, db.q(`INSERT INTO bench_raw (id, payload) VALUES (?, ?)`), id, payload); err != nil {
					b.Fatal(err)
				}
				if _, err := db.w.ExecContext(ctx, db.q(`DELETE FROM bench_raw WHERE id = ?`), id); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

func openBench(b *testing.B, dsn string) *DB {
	db, err := Open(context.Background(), dsn, Options{Key: testKey})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}
