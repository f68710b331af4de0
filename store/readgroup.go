package store

import (
	"context"
	"database/sql"
	"errors"
	"sync"

	"github.com/xconn/xconn/delivery"
)

// Combined point reads. Every delivered chat message costs its receiver an
// inbox lookup (is this message_id new?) and its sender a read of the
// channel's next entry, each one indexed row. Read one at a time, each is a
// statement of its own: on PostgreSQL a network round trip, as many as the
// commits of the whole batch that carries the message; on SQLite the
// statement's fixed cost is most of the read. A readGroup runs the reads of
// one kind that are waiting at the same moment as one multi-row statement.
//
// There is no goroutine of its own: the first caller runs the statement for
// itself (a lone read costs what it did); callers arriving meanwhile wait,
// and when the statement returns the first of them runs the next one for
// all of them. A caller waits for at most one statement before its own.
// Reads are not cancelled (see pointRead), so a caller that leads reads for
// others never abandons them.

// readGroup combines the point reads of one kind. It is safe for concurrent
// use; the zero value needs read set.
type readGroup[K comparable, V any] struct {
	// read runs one statement for keys (distinct, at most maxManyRows)
	// and returns what it found; a key without a row is absent.
	read func(keys []K) (map[K]V, error)
	// one reads a single key with the one-row statement (the common case
	// when nothing else is waiting).
	one func(key K) (V, bool, error)

	mu      sync.Mutex
	busy    bool
	waiting []*readCall[K, V]
}

// readCall is one caller's read.
type readCall[K comparable, V any] struct {
	key K
	val V
	ok  bool
	err error
	// lead, when set by the previous leader, holds the calls this caller
	// reads for (itself first).
	lead []*readCall[K, V]
	done chan struct{} // capacity 1
}

// get returns the value of key, whether it was found, or the read's error.
func (g *readGroup[K, V]) get(key K) (V, bool, error) {
	c := &readCall[K, V]{key: key}
	g.mu.Lock()
	if !g.busy {
		g.busy = true
		g.mu.Unlock()
		c.val, c.ok, c.err = g.one(key)
		g.handOff()
		return c.val, c.ok, c.err
	}
	c.done = make(chan struct{}, 1)
	g.waiting = append(g.waiting, c)
	g.mu.Unlock()
	<-c.done
	if c.lead != nil {
		g.run(c.lead)
		g.handOff()
	}
	return c.val, c.ok, c.err
}

// handOff passes the lead to the first waiting call with every waiting
// call, or marks the group idle.
func (g *readGroup[K, V]) handOff() {
	g.mu.Lock()
	next := g.waiting
	g.waiting = nil
	if len(next) == 0 {
		g.busy = false
	}
	g.mu.Unlock()
	if len(next) > 0 {
		next[0].lead = next
		next[0].done <- struct{}{}
	}
}

// run reads calls (calls[0] is the caller) and answers every other call.
func (g *readGroup[K, V]) run(calls []*readCall[K, V]) {
	keys := make([]K, 0, len(calls))
	seen := make(map[K]struct{}, len(calls))
	for _, c := range calls {
		if _, ok := seen[c.key]; !ok {
			seen[c.key] = struct{}{}
			keys = append(keys, c.key)
		}
	}
	if len(keys) == 1 { // every call wants one key: the one-row statement
		v, ok, err := g.one(keys[0])
		for i, c := range calls {
			c.val, c.ok, c.err = v, ok, err
			if i > 0 {
				c.done <- struct{}{}
			}
		}
		return
	}
	found := make(map[K]V, len(keys))
	var err error
	for len(keys) > 0 && err == nil {
		n := min(len(keys), maxManyRows)
		var m map[K]V
		if m, err = g.read(keys[:n]); err == nil {
			for k, v := range m {
				found[k] = v
			}
		}
		keys = keys[n:]
	}
	for i, c := range calls {
		if err != nil {
			// The combined statement failed (it could not be prepared, or
			// the server refused it): each call reads alone.
			c.val, c.ok, c.err = g.one(c.key)
		} else {
			c.val, c.ok = found[c.key]
		}
		if i > 0 {
			c.done <- struct{}{}
		}
	}
}

// readKeys are the keys of the DB's combined reads.
type (
	// inboxKey is an inbox record's key.
	inboxKey = rowKey
	// afterKey names a channel's next outbox entry after seq.
	afterKey struct {
		queue, channel string
		seq            int64
	}
)

// newReadGroups sets up the DB's combined reads.
func (db *DB) newReadGroups() {
	db.inGet.one = func(k inboxKey) (delivery.InboxRecord, bool, error) {
		r := delivery.InboxRecord{Queue: k.queue, Channel: k.channel, MessageID: k.id}
		var at int64
		err := rRow(context.Background(), db.r, &db.hot.rInbox, k.queue, k.channel, k.id).Scan(&r.Hash, &at)
		r.At = fromTS(at)
		if errors.Is(err, sql.ErrNoRows) {
			return delivery.InboxRecord{}, false, nil
		}
		return r, err == nil, err
	}
	db.inGet.read = func(keys []inboxKey) (map[inboxKey]delivery.InboxRecord, error) {
		rows := newManyRows(mInGet, len(keys))
		for _, k := range keys {
			rows.add(k.queue, k.channel, k.id)
		}
		if err := db.prepareMany(mInGet, len(keys)); err != nil {
			return nil, err
		}
		out := make(map[inboxKey]delivery.InboxRecord, len(keys))
		err := db.manyQuery(nil, rows, func(r *sql.Rows) error {
			var rec delivery.InboxRecord
			var at int64
			if err := r.Scan(&rec.Queue, &rec.Channel, &rec.MessageID, &rec.Hash, &at); err != nil {
				return err
			}
			rec.At = fromTS(at)
			out[inboxKey{rec.Queue, rec.Channel, rec.MessageID}] = rec
			return nil
		})
		return out, err
	}
	db.obAfter.one = func(k afterKey) (delivery.Entry, bool, error) {
		e, err := scanEntry(rRow(context.Background(), db.r, &db.hot.rAfter, k.queue, k.channel, k.seq))
		if errors.Is(err, sql.ErrNoRows) {
			return delivery.Entry{}, false, nil
		}
		return e, err == nil, err
	}
	db.obAfter.read = func(keys []afterKey) (map[afterKey]delivery.Entry, error) {
		rows := newManyRows(mObAfter, len(keys))
		for _, k := range keys {
			rows.add(k.queue, k.channel, k.seq)
		}
		if err := db.prepareMany(mObAfter, len(keys)); err != nil {
			return nil, err
		}
		out := make(map[afterKey]delivery.Entry, len(keys))
		err := db.manyQuery(nil, rows, func(r *sql.Rows) error {
			var after int64
			e, err := scanEntry(prefixScan{r, &after})
			if err != nil {
				return err
			}
			out[afterKey{e.Queue, e.Channel, after}] = e
			return nil
		})
		return out, err
	}
}

// prefixScan scans a row whose first column goes to first and the rest
// to what Scan is given.
type prefixScan struct {
	r     *sql.Rows
	first any
}

func (p prefixScan) Scan(dest ...any) error {
	all := make([]any, 0, 1+len(dest))
	return p.r.Scan(append(append(all, p.first), dest...)...)
}
