package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/xconn/xconn/delivery"
)

// runGrouped runs reqs as one batch of the committer, as if they had
// arrived together, and returns each operation's error.
func runGrouped(t *testing.T, db *DB, fins []*finishReq, inbs []*inboxReq, enqs ...*enqueueReq) []error {
	t.Helper()
	var batch []*gcOp
	for _, r := range enqs {
		batch = append(batch, &gcOp{ctx: context.Background(), grp: &gcGroups{enq: r}, done: make(chan error, 1),
			f: func(ctx context.Context, tx *sql.Tx) error { return db.enqueueOne(ctx, tx, r) }})
	}
	for _, f := range fins {
		batch = append(batch, &gcOp{ctx: context.Background(), grp: &gcGroups{fin: f}, done: make(chan error, 1),
			f: func(ctx context.Context, tx *sql.Tx) error { return db.finishOne(ctx, tx, f) }})
	}
	for _, r := range inbs {
		batch = append(batch, &gcOp{ctx: context.Background(), grp: &gcGroups{inb: r}, done: make(chan error, 1),
			f: func(ctx context.Context, tx *sql.Tx) error { return db.inboxPutOne(ctx, tx, r) }})
	}
	// The committer's loop is idle (nothing else is submitted): run the
	// batch on this goroutine, through the same code.
	before := db.gc.fallbacks.Load()
	db.gc.run(&gcState{}, batch)
	errs := make([]error, len(batch))
	for i, op := range batch {
		errs[i] = <-op.done
	}
	if n := db.gc.fallbacks.Load() - before; n != 0 {
		t.Errorf("the batch's groups failed and its operations ran alone (%d fallbacks)", n)
	}
	return errs
}

func sqliteDB(t *testing.T) *DB {
	return openDB(t, "sqlite:"+filepath.Join(t.TempDir(), "xconn.db"), Options{})
}

func enqueueT(t *testing.T, db *DB, channel, id string, at time.Time, capacity int) delivery.EnqueueResult {
	t.Helper()
	e := delivery.Entry{Queue: "q", Channel: channel, MessageID: id, Payload: []byte(`{"m":"` + id + `"}`),
		CreatedAt: at, ExpiresAt: at.Add(time.Hour), NextAttempt: at}
	res, err := db.OutboxEnqueue(context.Background(), e, capacity, at)
	if err != nil {
		t.Fatalf("enqueue %s/%s: %v", channel, id, err)
	}
	return res
}

// The finishes of one batch share three statements; the results must be
// those of running them one after the other: a key finished twice is
// finished once, each channel's next head is read after every delete of
// the batch, and outcomes are recorded.
func TestGroupedFinishes(t *testing.T) {
	eachDB(t, Options{}, func(t *testing.T, db *DB) { testGroupedFinishes(t, db) })
}

func testGroupedFinishes(t *testing.T, db *DB) {
	at := time.Unix(1_800_000_000, 0)
	for _, k := range [][2]string{{"a", "a1"}, {"a", "a2"}, {"a", "a3"}, {"b", "b1"}, {"c", "c1\"\\\n"}} {
		enqueueT(t, db, k[0], k[1], at, 0)
	}
	oc := func(ch, id string) delivery.Outcome {
		return delivery.Outcome{Queue: "q", Channel: ch, MessageID: id, Kind: delivery.OutcomeDelivered,
			Message: "ok \"quoted\"", Attempts: 1, CreatedAt: at, ExpiresAt: at.Add(time.Hour), At: at.Add(time.Second)}
	}
	fins := []*finishReq{
		{o: oc("a", "a1"), next: true},
		{o: oc("a", "a1"), next: true}, // the same ack twice: the second finds nothing
		{o: oc("b", "b1"), next: true},
		{o: oc("c", "c1\"\\\n"), next: true},
		{o: oc("a", "a2")},
		{o: oc("x", "gone"), next: true},
	}
	for i, err := range runGrouped(t, db, fins, nil) {
		if err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	type want struct {
		ok      bool
		hasHead bool
		head    string
	}
	for i, w := range []want{{true, true, "a3"}, {false, false, ""}, {true, false, ""}, {true, false, ""}, {true, false, ""}, {false, false, ""}} {
		f := fins[i]
		if f.ok != w.ok || f.hasHead != w.hasHead || f.hasHead && f.head.MessageID != w.head {
			t.Errorf("finish %d (%s/%s): ok %v head %v %q, want %+v", i, f.o.Channel, f.o.MessageID, f.ok, f.hasHead, f.head.MessageID, w)
		}
	}
	ctx := context.Background()
	for _, k := range [][2]string{{"a", "a1"}, {"a", "a2"}, {"b", "b1"}, {"c", "c1\"\\\n"}} {
		o, ok, err := db.OutboxOutcome(ctx, "q", k[0], k[1])
		if err != nil || !ok || o.Kind != delivery.OutcomeDelivered || o.Message != "ok \"quoted\"" || !o.At.Equal(at.Add(time.Second)) {
			t.Errorf("outcome %v: %+v %v %v", k, o, ok, err)
		}
	}
	if n, err := db.OutboxPending(ctx, "q"); err != nil || n != 1 {
		t.Fatalf("pending = %d, %v; want 1 (a3)", n, err)
	}
	// The channel cache followed the deletes: channel a holds one entry,
	// so a capacity of 2 takes one more without eviction, then evicts.
	if r := enqueueT(t, db, "a", "a4", at, 2); r.Status != delivery.Enqueued || len(r.Dropped) != 0 || r.Head {
		t.Fatalf("enqueue a4 = %+v", r)
	}
	if r := enqueueT(t, db, "a", "a5", at, 2); len(r.Dropped) != 1 || r.Dropped[0].MessageID != "a3" {
		t.Fatalf("enqueue a5 dropped %+v, want a3 evicted", r.Dropped)
	}
	// A finished key is done: enqueueing it again stores nothing.
	if r := enqueueT(t, db, "b", "b1", at, 0); r.Status != delivery.AlreadyDone {
		t.Fatalf("enqueue of a finished key: %v", r.Status)
	}
	if r := enqueueT(t, db, "b", "b2", at, 0); r.Status != delivery.Enqueued || !r.Head {
		t.Fatalf("enqueue b2 = %+v, want the head of an empty channel", r)
	}
}

// The inbox puts of one batch share two statements; a key put twice in
// the batch is inserted once and the second sees the first's record, and
// the channel bound holds.
func TestGroupedInboxPuts(t *testing.T) {
	eachDB(t, Options{}, func(t *testing.T, db *DB) { testGroupedInboxPuts(t, db) })
}

func testGroupedInboxPuts(t *testing.T, db *DB) {
	at := time.Unix(1_800_000_000, 0)
	ctx := context.Background()
	if _, ins, err := db.InboxPut(ctx, delivery.InboxRecord{Queue: "in", Channel: "a", MessageID: "old", Hash: "h0", At: at}, 2); err != nil || !ins {
		t.Fatalf("put old: %v %v", ins, err)
	}
	rec := func(ch, id, h string, s int) delivery.InboxRecord {
		return delivery.InboxRecord{Queue: "in", Channel: ch, MessageID: id, Hash: h, At: at.Add(time.Duration(s) * time.Second)}
	}
	inbs := []*inboxReq{
		{r: rec("a", "m1", "h1", 1), max: 2},
		{r: rec("a", "m1", "other", 2), max: 2}, // same key in the batch
		{r: rec("a", "old", "h9", 3), max: 2},   // stored before the batch
		{r: rec("a", "m2", "h2", 4), max: 2},
		{r: rec("b", "m1", "hb", 5), max: 2},
	}
	for i, err := range runGrouped(t, db, nil, inbs) {
		if err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	wantIns := []bool{true, false, false, true, true}
	wantHash := []string{"", "h1", "h0", "", ""}
	for i, r := range inbs {
		if r.inserted != wantIns[i] || r.existing.Hash != wantHash[i] {
			t.Errorf("put %d: inserted %v existing %q, want %v %q", i, r.inserted, r.existing.Hash, wantIns[i], wantHash[i])
		}
	}
	// Channel a got old, m1, m2 with a bound of 2: the oldest went.
	if _, ok, _ := db.InboxGet(ctx, "in", "a", "old"); ok {
		t.Error("channel a kept its oldest record beyond its bound")
	}
	for _, k := range [][2]string{{"a", "m1"}, {"a", "m2"}, {"b", "m1"}} {
		if _, ok, err := db.InboxGet(ctx, "in", k[0], k[1]); err != nil || !ok {
			t.Errorf("record %v missing: %v", k, err)
		}
	}
}

// Two processes writing one SQLite file: the writer's channel cache must
// notice the other's commits (data_version), or the capacity would not
// hold.
func TestChannelCacheSeesOtherWriters(t *testing.T) {
	path := "sqlite:" + filepath.Join(t.TempDir(), "xconn.db")
	a := openDB(t, path, Options{})
	b := openDB(t, path, Options{})
	at := time.Unix(1_800_000_000, 0)
	enqueueT(t, a, "c", "m1", at, 2) // a's cache: one entry
	enqueueT(t, b, "c", "m2", at, 2)
	r := enqueueT(t, a, "c", "m3", at, 2)
	if len(r.Dropped) != 1 || r.Dropped[0].MessageID != "m1" || r.Head {
		t.Fatalf("enqueue m3 after another writer's m2: %+v, want m1 evicted", r)
	}
	if n, err := a.OutboxPending(context.Background(), "q"); err != nil || n != 2 {
		t.Fatalf("pending = %d, %v; want 2", n, err)
	}
	// The other writer finishes both: a's next enqueue is its channel's head.
	for _, id := range []string{"m2", "m3"} {
		if ok, err := b.OutboxFinish(context.Background(), delivery.Outcome{Queue: "q", Channel: "c", MessageID: id, Kind: delivery.OutcomeDelivered, At: at}); err != nil || !ok {
			t.Fatalf("finish %s: %v %v", id, ok, err)
		}
	}
	if r := enqueueT(t, a, "c", "m4", at, 2); !r.Head || len(r.Dropped) != 0 {
		t.Fatalf("enqueue m4 = %+v, want the head of an empty channel", r)
	}
}

// A batch that rolls back must not leave its cache changes behind.
func TestChannelCacheRollback(t *testing.T) {
	db := sqliteDB(t)
	at := time.Unix(1_800_000_000, 0)
	enqueueT(t, db, "c", "m1", at, 2)
	enqueueT(t, db, "c", "m2", at, 2)
	boom := func(ctx context.Context, tx *sql.Tx) error {
		// A finish that succeeded in the transaction, then a failure.
		req := finishReq{o: delivery.Outcome{Queue: "q", Channel: "c", MessageID: "m1", Kind: delivery.OutcomeDelivered, At: at}}
		if err := db.finishOne(ctx, tx, &req); err != nil || !req.ok {
			t.Errorf("finish in the failing transaction: %v %v", req.ok, err)
		}
		return sql.ErrTxDone
	}
	if err := db.gc.do(context.Background(), boom); err == nil {
		t.Fatal("the failing operation succeeded")
	}
	// Had the cache kept the rolled-back finish, the channel would look
	// as if it had room and m3 would make three entries.
	r := enqueueT(t, db, "c", "m3", at, 2)
	if len(r.Dropped) != 1 || r.Dropped[0].MessageID != "m1" {
		t.Fatalf("enqueue after a rolled-back finish dropped %+v, want m1", r.Dropped)
	}
	if n, err := db.OutboxPending(context.Background(), "q"); err != nil || n != 2 {
		t.Fatalf("pending = %d, %v; want 2", n, err)
	}
}

// The enqueues of one batch share one INSERT; a key put twice in the batch
// is stored once, a key already done is not stored, seq follows the batch
// order and the head of each channel is the first of it.
func TestGroupedEnqueues(t *testing.T) {
	eachDB(t, Options{}, func(t *testing.T, db *DB) { testGroupedEnqueues(t, db) })
}

func testGroupedEnqueues(t *testing.T, db *DB) {
	at := time.Unix(1_800_000_000, 0)
	ctx := context.Background()
	enqueueT(t, db, "done", "d1", at, 0)
	if ok, err := db.OutboxFinish(ctx, delivery.Outcome{Queue: "q", Channel: "done", MessageID: "d1", Kind: delivery.OutcomeDelivered, At: at}); err != nil || !ok {
		t.Fatalf("finish d1: %v %v", ok, err)
	}
	enqueueT(t, db, "b", "b0", at, 0)
	req := func(ch, id, payload string) *enqueueReq {
		return &enqueueReq{e: delivery.Entry{Queue: "q", Channel: ch, MessageID: id, Payload: []byte(payload),
			CreatedAt: at, ExpiresAt: at.Add(time.Hour), NextAttempt: at}, now: at}
	}
	enqs := []*enqueueReq{
		req("a", "a1", `{"text":"one \"quoted\" \u00e9"}`),
		req("b", "b1", `{}`),
		req("a", "a1", `{"other":true}`), // the same key again: pending
		req("done", "d1", `{}`),          // done before the batch
		req("a", "a2", "not json, \x01 and \u2028"),
	}
	for i, err := range runGrouped(t, db, nil, nil, enqs...) {
		if err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	want := []struct {
		status delivery.EnqueueStatus
		head   bool
	}{{delivery.Enqueued, true}, {delivery.Enqueued, false}, {delivery.AlreadyPending, false}, {delivery.AlreadyDone, false}, {delivery.Enqueued, false}}
	for i, w := range want {
		r := enqs[i].res
		if r.Status != w.status || r.Head != w.head {
			t.Errorf("enqueue %d (%s/%s): %v head %v, want %v head %v", i, enqs[i].e.Channel, enqs[i].e.MessageID, r.Status, r.Head, w.status, w.head)
		}
	}
	if enqs[2].res.Entry.Seq != enqs[0].res.Entry.Seq || string(enqs[2].res.Entry.Payload) != string(enqs[0].e.Payload) {
		t.Errorf("the second a1 got %+v, want the first one's entry", enqs[2].res.Entry)
	}
	// A channel's entries follow the batch order (on PostgreSQL the
	// committer sorts a batch by channel, so only within a channel).
	if enqs[0].res.Entry.Seq >= enqs[4].res.Entry.Seq {
		t.Errorf("seqs %d %d do not follow the batch order", enqs[0].res.Entry.Seq, enqs[4].res.Entry.Seq)
	}
	if db.dialect == dialectSQLite && !(enqs[0].res.Entry.Seq < enqs[1].res.Entry.Seq && enqs[1].res.Entry.Seq < enqs[4].res.Entry.Seq) {
		t.Errorf("seqs %d %d %d do not follow the batch order", enqs[0].res.Entry.Seq, enqs[1].res.Entry.Seq, enqs[4].res.Entry.Seq)
	}
	h, ok, err := db.OutboxHead(ctx, "q", "a")
	if err != nil || !ok || h.MessageID != "a1" || string(h.Payload) != string(enqs[0].e.Payload) {
		t.Fatalf("head of a = %+v %v %v", h, ok, err)
	}
	ok, next, has, err := db.OutboxFinishNext(ctx, delivery.Outcome{Queue: "q", Channel: "a", MessageID: "a1", Kind: delivery.OutcomeDelivered, At: at})
	if err != nil || !ok || !has || next.MessageID != "a2" || string(next.Payload) != string(enqs[4].e.Payload) {
		t.Fatalf("next of a = %+v %v %v %v", next, ok, has, err)
	}
	if n, err := db.OutboxPending(ctx, "q"); err != nil || n != 3 {
		t.Fatalf("pending = %d, %v; want 3 (b0, b1, a2)", n, err)
	}
}
