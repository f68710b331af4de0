package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/xconn/xconn/delivery"
)

// Grouped operations of the SQLite committer. The outbox finishes (one per
// ack) and the inbox puts (one per received message) waiting in one batch
// run as a few statements for all of them instead of two or three each:
// finishes as one DELETE of every acked entry, one INSERT of their
// outcomes and one read of the channels' next heads; inbox puts as one
// INSERT of the records and one update of the channels' record counts.
// The rows travel as one JSON array bound to one parameter (json_each),
// so that one prepared statement serves every batch size. Results are the
// same as running the operations one after the other in batch order.

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

// appendJSONString appends s as a JSON string. s must be valid UTF-8.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// validUTF8 reports whether every s is valid UTF-8 (JSON carries no other
// text).
func validUTF8(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

type rowKey struct{ queue, channel, id string }

// finishGroup runs the finishes ops (op.fin set) in tx.
func (db *DB) finishGroup(tx *sql.Tx, ops []*gcOp) error {
	ctx := context.Background()
	b := make([]byte, 0, 64*len(ops))
	b = append(b, '[')
	n := 0
	for _, op := range ops {
		f := op.fin
		f.ok, f.head, f.hasHead = false, delivery.Entry{}, false
		o := &f.o
		if !validUTF8(o.Queue, o.Channel, o.MessageID, string(o.Kind), string(o.Code), o.Message) {
			continue // run alone below
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, '[')
		b = appendJSONString(b, o.Queue)
		b = append(b, ',')
		b = appendJSONString(b, o.Channel)
		b = append(b, ',')
		b = appendJSONString(b, o.MessageID)
		b = append(b, ']')
	}
	b = append(b, ']')
	deleted := make(map[rowKey]bool, n)
	if n > 0 {
		rows, err := txQuery(ctx, tx, &db.hot.obFinish, string(b))
		if err != nil {
			return errGroup
		}
		for rows.Next() {
			var k rowKey
			if err := rows.Scan(&k.queue, &k.channel, &k.id); err != nil {
				rows.Close()
				return errGroup
			}
			deleted[k] = true
		}
		if rows.Close() != nil || rows.Err() != nil {
			return errGroup
		}
	}
	// Outcomes of the deleted entries, in batch order (the first finish
	// of a key is the one that found it pending).
	b = append(b[:0], '[')
	n = 0
	heads := map[chanKey]bool{}
	for _, op := range ops {
		f := op.fin
		o := &f.o
		if !validUTF8(o.Queue, o.Channel, o.MessageID, string(o.Kind), string(o.Code), o.Message) {
			if err := op.f(context.WithoutCancel(op.ctx), tx); err != nil {
				return err
			}
			continue
		}
		k := rowKey{o.Queue, o.Channel, o.MessageID}
		if !deleted[k] {
			continue
		}
		delete(deleted, k)
		f.ok = true
		db.cacheRemoved(o.Queue, o.Channel, 1)
		if f.next {
			heads[chanKey{o.Queue, o.Channel}] = true
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, '[')
		for _, s := range []string{o.Queue, o.Channel, o.MessageID, string(o.Kind), string(o.Code), o.Message} {
			b = appendJSONString(b, s)
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(o.Attempts), 10)
		for _, t := range []int64{ts(o.CreatedAt), ts(o.ExpiresAt), ts(o.At)} {
			b = append(b, ',')
			b = strconv.AppendInt(b, t, 10)
		}
		b = append(b, ']')
	}
	b = append(b, ']')
	if n > 0 {
		if _, err := txExec(ctx, tx, &db.hot.ocInsertMany, string(b)); err != nil {
			return errGroup
		}
	}
	if len(heads) == 0 {
		return nil
	}
	b = append(b[:0], '[')
	n = 0
	for k := range heads {
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, '[')
		b = appendJSONString(b, k.queue)
		b = append(b, ',')
		b = appendJSONString(b, k.channel)
		b = append(b, ']')
	}
	b = append(b, ']')
	rows, err := txQuery(ctx, tx, &db.hot.obHeads, string(b))
	if err != nil {
		return errGroup
	}
	next := make(map[chanKey]delivery.Entry, len(heads))
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			rows.Close()
			return errGroup
		}
		next[chanKey{e.Queue, e.Channel}] = e
	}
	if rows.Close() != nil || rows.Err() != nil {
		return errGroup
	}
	for _, op := range ops {
		f := op.fin
		if !f.ok || !f.next {
			continue
		}
		if e, ok := next[chanKey{f.o.Queue, f.o.Channel}]; ok {
			f.head, f.hasHead = e, true
		}
	}
	return nil
}

// inboxGroup runs the inbox puts ops (op.inb set) in tx.
func (db *DB) inboxGroup(tx *sql.Tx, ops []*gcOp) error {
	ctx := context.Background()
	b := make([]byte, 0, 128*len(ops))
	b = append(b, '[')
	n := 0
	for _, op := range ops {
		q := op.inb
		q.existing, q.inserted = delivery.InboxRecord{}, false
		r := &q.r
		if !validUTF8(r.Queue, r.Channel, r.MessageID, r.Hash) {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, '[')
		for _, s := range []string{r.Queue, r.Channel, r.MessageID, r.Hash} {
			b = appendJSONString(b, s)
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, ts(r.At), 10)
		b = append(b, ']')
	}
	b = append(b, ']')
	inserted := make(map[rowKey]bool, n)
	if n > 0 {
		rows, err := txQuery(ctx, tx, &db.hot.inInsertMany, string(b))
		if err != nil {
			return errGroup
		}
		for rows.Next() {
			var k rowKey
			if err := rows.Scan(&k.queue, &k.channel, &k.id); err != nil {
				rows.Close()
				return errGroup
			}
			inserted[k] = true
		}
		if rows.Close() != nil || rows.Err() != nil {
			return errGroup
		}
	}
	type chanAdd struct {
		k   int
		max int
	}
	adds := map[chanKey]*chanAdd{}
	var order []chanKey
	for _, op := range ops {
		q := op.inb
		r := &q.r
		if !validUTF8(r.Queue, r.Channel, r.MessageID, r.Hash) {
			if err := op.f(context.WithoutCancel(op.ctx), tx); err != nil {
				return err
			}
			continue
		}
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
	b = append(b[:0], '[')
	for i, ck := range order {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = appendJSONString(b, ck.queue)
		b = append(b, ',')
		b = appendJSONString(b, ck.channel)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(adds[ck].k), 10)
		b = append(b, ']')
	}
	b = append(b, ']')
	rows, err := txQuery(ctx, tx, &db.hot.inCountMany, string(b))
	if err != nil {
		return errGroup
	}
	type over struct {
		ck     chanKey
		excess int
	}
	var trims []over
	for rows.Next() {
		var ck chanKey
		var cnt int
		if err := rows.Scan(&ck.queue, &ck.channel, &cnt); err != nil {
			rows.Close()
			return errGroup
		}
		if a := adds[ck]; a != nil && a.max > 0 && cnt > a.max {
			trims = append(trims, over{ck, cnt - a.max})
		}
	}
	if rows.Close() != nil || rows.Err() != nil {
		return errGroup
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
