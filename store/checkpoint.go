package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"
)

// Background checkpoints (SQLite). A checkpoint copies the WAL's pages
// into the database file and syncs it; run by the committer inside a
// commit (SQLite's automatic checkpoint), it stalls every write waiting
// for that commit, which showed as the chat benchmarks' latency tail. One
// goroutine per DB checkpoints instead, on a connection of its own, in
// PASSIVE mode: it never waits for or blocks the writer. The writer's own
// automatic checkpoint stays, at walCheckpointPages, as the bound of the
// WAL should this goroutine fall behind.

// checkpointEvery is the period of the background checkpoint.
const checkpointEvery = 100 * time.Millisecond

// checkpointer owns the background checkpoint goroutine of a SQLite DB.
type checkpointer struct {
	db   *sql.DB
	stop chan struct{}
	done chan struct{}
	once sync.Once
	err  error
}

// startCheckpointer opens a connection to the SQLite file path and starts
// the goroutine; stop ends it and closes the connection.
func startCheckpointer(path string) (*checkpointer, error) {
	db, err := openSQLitePool(path, []string{"busy_timeout(10000)"}, false)
	if err != nil {
		return nil, fmt.Errorf("store: open sqlite checkpointer: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	c := &checkpointer{db: db, stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c, nil
}

func (c *checkpointer) loop() {
	defer close(c.done)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	ctx := context.Background()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		var busy, logFrames, done int
		// Errors (a busy database, a closed file at shutdown) only mean
		// that this round did nothing; the next one tries again.
		_ = c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logFrames, &done)
	}
}

// close stops the goroutine, waits for it and closes its connection.
func (c *checkpointer) close() error {
	if c == nil {
		return nil
	}
	c.once.Do(func() {
		close(c.stop)
		<-c.done
		c.err = c.db.Close()
	})
	return c.err
}
