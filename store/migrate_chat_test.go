package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/delivery"
)

// TestMigration3KeepsDeliveryState upgrades a database at schema 2 that
// holds pending outbox entries, outcomes and inbox records: after the
// upgrade every row is still there and the inbox bound counts the records
// written before it.
func TestMigration3KeepsDeliveryState(t *testing.T) {
	backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		driver, dir, raw := "sqlite", "migrations/sqlite", "file:"+strings.TrimPrefix(dsn, "sqlite:")
		if !strings.HasPrefix(dsn, "sqlite:") {
			driver, dir, raw = "pgx", "migrations/postgres", dsn
		}
		old, err := openRaw(driver, raw)
		if err != nil {
			t.Fatal(err)
		}
		defer old.Close()
		list, err := migrations(dir)
		if err != nil {
			t.Fatal(err)
		}
		exec := func(q string, args ...any) {
			t.Helper()
			if driver == "pgx" {
				q = (&DB{dialect: dialectPostgres}).q(q)
			}
			if _, err := old.ExecContext(ctx, q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		exec(`CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`)
		for _, m := range list {
			if m.version > 2 {
				break
			}
			exec(m.sql)
			exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`, m.version, m.name, 1)
		}
		t0 := time.Unix(1_790_000_000, 0)
		exec(`INSERT INTO outbox (queue, channel, message_id, payload, created_at, expires_at, attempts, next_attempt, last_error)
			VALUES ('q', 'c', 'm1', ?, ?, ?, 0, ?, '')`, []byte("p1"), ts(t0), ts(t0.Add(time.Hour)), ts(t0))
		exec(`INSERT INTO outbox_outcomes (queue, channel, message_id, kind, code, message, attempts, created_at, expires_at, at)
			VALUES ('q', 'c', 'm0', 'delivered', '', '', 1, ?, ?, ?)`, ts(t0), ts(t0.Add(time.Hour)), ts(t0))
		for i, id := range []string{"a", "b", "c"} {
			exec(`INSERT INTO inbox (queue, channel, message_id, hash, at) VALUES ('in', 'c', ?, 'h', ?)`, id, ts(t0.Add(time.Duration(i)*time.Second)))
		}

		db := openDB(t, dsn, Options{})
		if v, err := db.SchemaVersion(ctx); err != nil || v != list[len(list)-1].version {
			t.Fatalf("schema version %d (%v), want %d", v, err, list[len(list)-1].version)
		}
		h, ok, err := db.OutboxHead(ctx, "q", "c")
		if err != nil || !ok || h.MessageID != "m1" || string(h.Payload) != "p1" {
			t.Fatalf("head after upgrade = %+v %v %v, want m1", h, ok, err)
		}
		if o, ok, err := db.OutboxOutcome(ctx, "q", "c", "m0"); err != nil || !ok || o.Kind != delivery.OutcomeDelivered {
			t.Fatalf("outcome after upgrade = %+v %v %v", o, ok, err)
		}
		// A fourth record with a bound of 3 drops the oldest of the three
		// written before the upgrade.
		if _, ins, err := db.InboxPut(ctx, delivery.InboxRecord{Queue: "in", Channel: "c", MessageID: "d", Hash: "h", At: t0.Add(time.Minute)}, 3); err != nil || !ins {
			t.Fatalf("InboxPut = %v %v", ins, err)
		}
		for _, id := range []string{"a", "b", "c", "d"} {
			_, ok, err := db.InboxGet(ctx, "in", "c", id)
			if err != nil {
				t.Fatal(err)
			}
			if want := id != "a"; ok != want {
				t.Errorf("record %s kept = %v, want %v", id, ok, want)
			}
		}
		e := entry2("q", "c", "m2", t0)
		if r, err := db.OutboxEnqueue(ctx, e, 10, t0); err != nil || r.Status != delivery.Enqueued || r.Entry.Seq <= h.Seq || r.Head {
			t.Fatalf("enqueue after upgrade = %+v %v, want a seq above %d, not the head", r, err, h.Seq)
		}
		if r, err := db.OutboxEnqueue(ctx, entry2("q", "d", "m1", t0), 10, t0); err != nil || r.Status != delivery.Enqueued || !r.Head {
			t.Fatalf("enqueue into an empty channel = %+v %v, want the head", r, err)
		}
	})
}

// TestInboxCountsFollowPruneAndDelete checks that the per-channel counts
// stay exact through age pruning and channel deletion: the bound still
// keeps exactly the newest records afterwards.
func TestInboxCountsFollowPruneAndDelete(t *testing.T) {
	eachDB(t, Options{}, func(t *testing.T, db *DB) {
		ctx := context.Background()
		t0 := time.Unix(1_790_000_000, 0)
		put := func(ch string, i int) {
			t.Helper()
			r := delivery.InboxRecord{Queue: "in", Channel: ch, MessageID: string(rune('a' + i)), Hash: "h", At: t0.Add(time.Duration(i) * time.Minute)}
			if _, _, err := db.InboxPut(ctx, r, 4); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 4 {
			put("c", i)
			put("d", i)
		}
		// Prune a and b of channel c (and d); c then holds c, d.
		if n, err := db.InboxPrune(ctx, "in", t0.Add(2*time.Minute)); err != nil || n != 4 {
			t.Fatalf("prune = %d %v, want 4", n, err)
		}
		if _, err := db.InboxDeleteChannel(ctx, "in", "d"); err != nil {
			t.Fatal(err)
		}
		for i := 4; i < 7; i++ { // e, f, g: with c, d that is 5 > 4, so c goes
			put("c", i)
		}
		put("d", 9)
		var nc, nd int
		if err := db.r.QueryRowContext(ctx, db.q(`SELECT n FROM inbox_counts WHERE queue = ? AND channel = ?`), "in", "c").Scan(&nc); err != nil {
			t.Fatal(err)
		}
		if err := db.r.QueryRowContext(ctx, db.q(`SELECT n FROM inbox_counts WHERE queue = ? AND channel = ?`), "in", "d").Scan(&nd); err != nil {
			t.Fatal(err)
		}
		if nc != 4 || nd != 1 {
			t.Fatalf("counts c=%d d=%d, want 4 and 1", nc, nd)
		}
		for i := 2; i < 7; i++ {
			_, ok, err := db.InboxGet(ctx, "in", "c", string(rune('a'+i)))
			if err != nil {
				t.Fatal(err)
			}
			if want := i >= 3; ok != want {
				t.Errorf("record %c kept = %v, want %v", 'a'+i, ok, want)
			}
		}
	})
}

// entry2 is a pending entry created at at with a TTL of one hour.
func entry2(queue, channel, id string, at time.Time) delivery.Entry {
	return delivery.Entry{Queue: queue, Channel: channel, MessageID: id, Payload: []byte(id),
		CreatedAt: at, ExpiresAt: at.Add(time.Hour), NextAttempt: at}
}
