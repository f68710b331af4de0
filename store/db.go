package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	"github.com/xconn/xconn/delivery"
)

type dialect int

const (
	dialectSQLite dialect = iota + 1
	dialectPostgres
)

// DB is the durable store over SQLite or PostgreSQL. It implements
// ConnectorStore, HostStore, Leaser and the delivery package's storage
// interfaces. It is safe for concurrent use, also by several processes
// sharing one database.
type DB struct {
	dialect dialect
	// w takes every write; for SQLite it is one connection, so writers in
	// this process never collide (other processes wait on busy_timeout).
	w *sql.DB
	// r serves reads outside transactions (the same pool for PostgreSQL).
	r    *sql.DB
	aead *sealer
	opts Options
	// hot holds the statements of the delivery hot path (see hot.go).
	hot hotStmts
	// gc batches the hot write transactions (see groupcommit.go).
	gc *committer
	// cache is the writer's outbox channel cache on SQLite (see
	// outbox_cache.go); nil on PostgreSQL.
	cache *outboxCache
	// many holds the committer's multi-row statements and those of the
	// combined reads (batch.go).
	many manyStmts
	// inGet and obAfter combine the inbox lookups and the reads of a
	// channel's next outbox entry (readgroup.go).
	inGet   readGroup[inboxKey, delivery.InboxRecord]
	obAfter readGroup[afterKey, delivery.Entry]
	// ckpt checkpoints the WAL in the background on SQLite (see
	// checkpoint.go); nil on PostgreSQL.
	ckpt *checkpointer
	// chanHot holds the prepared channel insert (see channels_hot.go).
	chanHot channelHot
}

// Open opens the store named by dsn and applies the pending migrations:
// "sqlite:PATH" (WAL, foreign keys, busy timeout) or "postgres://..." /
// "postgresql://..." (pgx). Any other DSN is an error.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	opts = opts.withDefaults()
	if opts.DataDir != "" {
		if err := SecureDir(opts.DataDir); err != nil {
			return nil, err
		}
	}
	key, err := loadKey(opts)
	if err != nil {
		return nil, err
	}
	aead, err := newSealer(key)
	if err != nil {
		return nil, err
	}
	db := &DB{aead: aead, opts: opts}
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		db.dialect = dialectSQLite
		if err := db.openSQLite(strings.TrimPrefix(dsn, "sqlite:")); err != nil {
			return nil, err
		}
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		db.dialect = dialectPostgres
		pg, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, fmt.Errorf("store: open postgres: %w", err)
		}
		pg.SetMaxOpenConns(opts.MaxOpenConns)
		pg.SetMaxIdleConns(opts.MaxOpenConns)
		db.w, db.r = pg, pg
	default:
		return nil, errors.New(`store: unsupported DSN: want "sqlite:PATH" or "postgres://..."`)
	}
	if err := db.r.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.prepareHot(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if db.dialect == dialectSQLite {
		db.cache = newOutboxCache()
	}
	db.newReadGroups()
	workers := 1 // SQLite: one writer connection
	if db.dialect == dialectPostgres {
		workers = max(1, min(pgCommitWorkers, opts.MaxOpenConns/2))
	}
	delay := opts.GroupCommitDelay
	if delay == 0 {
		delay = DefaultGroupCommitDelay
		if db.dialect == dialectPostgres {
			delay = pgGroupCommitDelay
		}
	}
	db.gc = newCommitter(db, opts.GroupCommitMax, delay, workers)
	return db, nil
}

// pgCommitWorkers is the number of PostgreSQL transactions the committer
// runs at once (at most half of MaxOpenConns, so that reads get
// connections too).
const pgCommitWorkers = 4

// walCheckpointPages is the WAL size, in pages, from which a commit
// checkpoints (SQLite's default is 1,000). The delivery tables rewrite the
// same few hot pages at every commit and a checkpoint copies each distinct
// page once, then syncs the database file: with 4,096 pages (16 MiB of
// WAL at most) the committer runs a quarter of the checkpoints, which took
// about a tenth of its time in the chat benchmarks.
const walCheckpointPages = 4096

func (db *DB) openSQLite(path string) error {
	if path == "" || strings.ContainsAny(path, "?#") {
		return errors.New(`store: sqlite DSN needs a file path without "?" or "#"`)
	}
	if err := prepareSQLiteFiles(path); err != nil {
		return err
	}
	pragmas := []string{"busy_timeout(10000)", "journal_mode(WAL)", "foreign_keys(1)", "synchronous(NORMAL)",
		"wal_autocheckpoint(" + strconv.Itoa(walCheckpointPages) + ")",
		// Statement journals (a multi-row write that may need to undo
		// itself, like the committer's grouped statements) stay in memory
		// instead of being written to a temporary file.
		"temp_store(MEMORY)"}
	w, err := openSQLitePool(path, pragmas, true)
	if err != nil {
		return fmt.Errorf("store: open sqlite: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	// The writer switches the file to WAL before readers open.
	if err := pingSQLite(w); err != nil {
		w.Close()
		return fmt.Errorf("store: open sqlite: %w", err)
	}
	if err := restrictSQLiteFiles(path); err != nil {
		w.Close()
		return err
	}
	r, err := openSQLitePool(path, append(pragmas, "query_only(1)"), true)
	if err != nil {
		w.Close()
		return fmt.Errorf("store: open sqlite: %w", err)
	}
	r.SetMaxOpenConns(db.opts.MaxOpenConns)
	// Keep the readers open: a new SQLite connection costs its open, its
	// pragmas and a fresh prepare of every statement it runs.
	r.SetMaxIdleConns(db.opts.MaxOpenConns)
	ck, err := startCheckpointer(path)
	if err != nil {
		w.Close()
		r.Close()
		return err
	}
	db.w, db.r, db.ckpt = w, r, ck
	return nil
}

// sqliteBusyWait bounds how long Open retries a new file's switch to WAL
// (the busy timeout of every other wait).
const sqliteBusyWait = 10 * time.Second

// pingSQLite opens the first connection of pool, retrying while another
// connection (another process opening the same new file) switches it to
// WAL: the switch needs an exclusive lock, and SQLite answers SQLITE_BUSY
// at once instead of waiting for it (TestMigrationsConcurrentOpen failed
// on it a few times in a hundred).
func pingSQLite(pool *sql.DB) error {
	deadline := time.Now().Add(sqliteBusyWait)
	for d := time.Millisecond; ; d = min(2*d, 100*time.Millisecond) {
		err := pool.Ping()
		if err == nil || !isSQLiteBusy(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(d)
	}
}

// Close waits for the batched writes in progress, then closes the
// database handles. Operations after Close fail.
func (db *DB) Close() error {
	if db.gc != nil {
		db.gc.close()
	}
	ckErr := db.ckpt.close()
	db.closeHot()
	db.closeMany()
	db.chanHot.close()
	err := errors.Join(ckErr, db.w.Close())
	if db.r != db.w {
		err = errors.Join(err, db.r.Close())
	}
	return err
}

// Dialect returns "sqlite" or "postgres".
func (db *DB) Dialect() string {
	if db.dialect == dialectPostgres {
		return "postgres"
	}
	return "sqlite"
}

// q rewrites the ? placeholders of query for the dialect. Queries of this
// package never hold a literal "?".
func (db *DB) q(query string) string {
	if db.dialect != dialectPostgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// tx runs f in one write transaction (BEGIN IMMEDIATE on SQLite) and commits.
func (db *DB) tx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// lock serialises the transactions of two processes on one logical key in
// PostgreSQL (SQLite's BEGIN IMMEDIATE already serialises every writer).
func (db *DB) lock(ctx context.Context, tx *sql.Tx, key string) error {
	if db.dialect != dialectPostgres {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", lockID(key)); err != nil {
		return fmt.Errorf("store: lock: %w", err)
	}
	return nil
}

// lockID is the PostgreSQL advisory lock id of a logical key.
func lockID(key string) int64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return int64(h.Sum64())
}

// offsetAll is "skip ? rows, return the rest" in the dialect.
func (db *DB) offsetAll() string {
	if db.dialect == dialectPostgres {
		return "OFFSET ?"
	}
	return "LIMIT -1 OFFSET ?"
}

func (db *DB) now() time.Time { return db.opts.Now() }

// ts encodes a time as Unix nanoseconds, the zero time as 0.
func ts(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromTS decodes ts.
func fromTS(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// notFound maps sql.ErrNoRows to ErrNotFound with context.
func notFound(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: %s: %w", what, ErrNotFound)
	}
	return fmt.Errorf("store: %s: %w", what, err)
}

func affected(res sql.Result) int {
	n, err := res.RowsAffected()
	if err != nil {
		return 0
	}
	return int(n)
}
