package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"sync"
)

// The outbox channel cache (SQLite). An enqueue must know whether its
// channel is full and whether an entry of the channel has expired; a
// scan of the channel's entries (COUNT(*), MIN(expires_at)) per enqueue
// costs index reads in every transaction. The writer connection keeps
// instead, per channel, the number of pending entries and a lower bound
// of their expiries, read once from the table and then kept up to date by
// the operations that change them (enqueue, finish, eviction, expiry).
//
// The cache is right only while this connection is the database's only
// writer. Every write transaction of the committer first reads PRAGMA
// data_version, which changes when another connection (another process)
// committed since this one last looked: then the cache is dropped and
// refilled from the table. Writes of this process that touch the outbox
// outside the committer's bookkeeping (the expiry sweep, a channel's
// deletion) drop it too, while they hold the writer connection. A batch
// that rolls back drops it as well, so a rolled-back change is never
// remembered.

// outboxCacheMax bounds the channels the cache holds; beyond it, it is
// dropped and refilled on demand.
const outboxCacheMax = 100_000

// noExpiry is the lower bound of the expiries of a channel without
// pending entries.
const noExpiry = math.MaxInt64

type chanKey struct{ queue, channel string }

// chanInfo is what the cache knows of one channel.
type chanInfo struct {
	// n is the number of pending entries.
	n int
	// minExp is at or before the earliest expires_at of the pending
	// entries (noExpiry when there are none): when now is before it, no
	// entry has expired.
	minExp int64
}

// outboxCache is the channel cache of the SQLite writer. Its methods are
// safe for concurrent use; the committer uses it inside its transactions.
type outboxCache struct {
	mu      sync.Mutex
	m       map[chanKey]*chanInfo
	version int64 // data_version last seen by the writer; -1: unknown
}

func newOutboxCache() *outboxCache {
	return &outboxCache{m: make(map[chanKey]*chanInfo), version: -1}
}

// reset drops everything the cache knows.
func (c *outboxCache) reset() {
	if c == nil {
		return
	}
	c.mu.Lock()
	clear(c.m)
	c.version = -1
	c.mu.Unlock()
}

// forget drops one channel.
func (c *outboxCache) forget(queue, channel string) {
	c.mu.Lock()
	delete(c.m, chanKey{queue, channel})
	c.mu.Unlock()
}

// check reads PRAGMA data_version in tx (the writer's transaction; the
// statement prepared once, since every transaction of the committer runs
// it) and drops the cache when another connection has committed since
// the last check.
func (c *outboxCache) check(ctx context.Context, db *DB, tx *sql.Tx) error {
	if c == nil {
		return nil
	}
	var v int64
	if err := txRow(ctx, tx, &db.hot.dataVersion).Scan(&v); err != nil {
		return fmt.Errorf("store: data_version: %w", err)
	}
	c.mu.Lock()
	if v != c.version {
		clear(c.m)
		c.version = v
	}
	c.mu.Unlock()
	return nil
}

// get returns the channel's info, reading it from the table in tx when
// the cache does not hold it.
func (c *outboxCache) get(ctx context.Context, db *DB, tx *sql.Tx, queue, channel string) (chanInfo, error) {
	k := chanKey{queue, channel}
	c.mu.Lock()
	ci, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return *ci, nil
	}
	var n int
	var minExp sql.NullInt64
	if err := txRow(ctx, tx, &db.hot.obChanInfo, queue, channel).Scan(&n, &minExp); err != nil {
		return chanInfo{}, fmt.Errorf("store: outbox channel: %w", err)
	}
	info := chanInfo{n: n, minExp: noExpiry}
	if minExp.Valid {
		info.minExp = minExp.Int64
	}
	c.mu.Lock()
	if len(c.m) >= outboxCacheMax {
		clear(c.m)
	}
	c.m[k] = &info
	c.mu.Unlock()
	return info, nil
}

// added records a new pending entry of a channel the cache holds.
func (c *outboxCache) added(queue, channel string, expires int64) {
	c.mu.Lock()
	if ci := c.m[chanKey{queue, channel}]; ci != nil {
		ci.n++
		ci.minExp = min(ci.minExp, expires)
	}
	c.mu.Unlock()
}

// removed records that k entries of a channel left the pending set (the
// lower bound of the expiries stays: it is still a lower bound).
func (c *outboxCache) removed(queue, channel string, k int) {
	c.mu.Lock()
	if ci := c.m[chanKey{queue, channel}]; ci != nil {
		ci.n -= k
		if ci.n <= 0 {
			ci.n, ci.minExp = 0, noExpiry
		}
	}
	c.mu.Unlock()
}
