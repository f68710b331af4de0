// Package deliverytest holds the behavioural test suite that every
// implementation of delivery.Storage must pass (delivery.MemoryStorage, and
// store.DB over SQLite and PostgreSQL). It has no state of its own.
package deliverytest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/xconn/xconn/delivery"
)

// t0 is the base time of the suite; storage must round-trip it to the
// nanosecond.
var t0 = time.Unix(1_800_000_000, 123456789)

func entry(queue, channel, id string, at time.Time, ttl time.Duration) delivery.Entry {
	return delivery.Entry{Queue: queue, Channel: channel, MessageID: id, Payload: []byte("payload-" + id),
		CreatedAt: at, ExpiresAt: at.Add(ttl), NextAttempt: at}
}

// TestStorage runs the suite; open returns a fresh, empty storage for each
// subtest.
func TestStorage(t *testing.T, open func(t *testing.T) delivery.Storage) {
	tests := []struct {
		name string
		f    func(t *testing.T, s delivery.Storage)
	}{
		{"EnqueueIdempotent", testEnqueueIdempotent},
		{"HeadsAndRetry", testHeadsAndRetry},
		{"FinishAndDone", testFinishAndDone},
		{"FinishNextAndHead", testFinishNextAndHead},
		{"After", testAfter},
		{"CapacityEviction", testCapacityEviction},
		{"ExpiryAtEnqueue", testExpiryAtEnqueue},
		{"ExpireSweep", testExpireSweep},
		{"AmendExpired", testAmendExpired},
		{"OutcomeHistory", testOutcomeHistory},
		{"DeleteChannel", testDeleteChannel},
		{"InboxRecord", testInboxRecord},
		{"InboxBounds", testInboxBounds},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.f(t, open(t))
		})
	}
}

// must turns (v, err) into a check: must(f())(t) fails t on an error.
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func testEnqueueIdempotent(t *testing.T, s delivery.Storage) {
	ctx := context.Background()
	r1 := must(s.OutboxEnqueue(ctx, entry("q", "c1", "m1", t0, time.Hour), 10, t0))(t)
	if r1.Status != delivery.Enqueued || r1.Entry.Seq == 0 {
		t.Fatalf("first enqueue = %v seq %d, want enqueued with a seq", r1.Status, r1.Entry.Seq)
	}
	later := t0.Add(10 * time.Minute)
	r2 := must(s.OutboxEnqueue(ctx, entry("q", "c1", "m1", later, time.Hour), 10, later))(t)
	if r2.Status != delivery.AlreadyPending {
		t.Fatalf("second enqueue = %v, want pending", r2.Status)
	}
	if !r2.Entry.ExpiresAt.Equal(t0.Add(time.Hour)) || r2.Entry.Seq != r1.Entry.Seq {
		t.Fatalf("second enqueue changed the entry: expires %v seq %d", r2.Entry.ExpiresAt, r2.Entry.Seq)
	}
	r3 := must(s.OutboxEnqueue(ctx, entry("q", "c1", "m2", later, time.Hour), 10, later))(t)
	if r3.Entry.Seq <= r1.Entry.Seq {
		t.Fatalf("seq %d after %d, want increasing", r3.Entry.Seq, r1.Entry.Seq)
	}
	// Another queue is independent.
	r4 := must(s.OutboxEnqueue(ctx, entry("other", "c1", "m1", later, time.Hour), 10, later))(t)
	if r4.Status != delivery.Enqueued {
		t.Fatalf("same key in another queue = %v, want enqueued", r4.Status)
	}
	if n := must(s.OutboxPending(ctx, "q"))(t); n != 2 {
		t.Fatalf("pending = %d, want 2", n)
	}
}

func testHeadsAndRetry(t *testing.T, s delivery.Storage) {
	ctx := context.Background()
	for i, id := range []string{"a1", "a2", "a3"} {
		must(s.OutboxEnqueue(ctx, entry("q", "A", id, t0.Add(time.Duration(i)), time.Hour), 10, t0))(t)
	}
	must(s.OutboxEnqueue(ctx, entry("q", "B", "b1", t0.Add(5), time.Hour), 10, t0))(t)
	due := must(s.OutboxDue(ctx, "q", t0.Add(time.Second), 10))(t)
	if len(due) != 2 || due[0].MessageID != "a1" || due[1].MessageID != "b1" {
		t.Fatalf("due = %v, want heads a1, b1", ids(due))
	}
	if string(due[0].Payload) != "payload-a1" || !due[0].CreatedAt.Equal(t0) {
		t.Fatalf("head round trip: payload %q created %v", due[0].Payload, due[0].CreatedAt)
	}
	if got := must(s.OutboxDue(ctx, "q", t0.Add(time.Second), 1))(t); len(got) != 1 {
		t.Fatalf("limit 1 returned %d", len(got))
	}
	next := t0.Add(time.Minute)
	if ok := must(s.OutboxRetry(ctx, "q", "A", "a1", 1, next, "timeout"))(t); !ok {
		t.Fatal("retry of a pending entry reported not pending")
	}
	due = must(s.OutboxDue(ctx, "q", t0.Add(time.Second), 10))(t)
	if len(due) != 1 || due[0].MessageID != "b1" {
		t.Fatalf("due after retry = %v, want b1 only (a1 waits, a2 is behind it)", ids(due))
	}
	at, ok := must2(t)(s.OutboxNextAttempt(ctx, "q", t0.Add(time.Second)))
	if !ok || !at.Equal(next) {
		t.Fatalf("next attempt = %v %v, want %v", at, ok, next)
	}
	due = must(s.OutboxDue(ctx, "q", next, 10))(t)
	if len(due) != 2 || due[0].MessageID != "b1" || due[1].MessageID != "a1" || due[1].Attempts != 1 || due[1].LastError != "timeout" {
		t.Fatalf("due at next = %+v", due)
	}
	if err := s.OutboxReschedule(ctx, "q", "A", t0); err != nil {
		t.Fatal(err)
	}
	due = must(s.OutboxDue(ctx, "q", t0.Add(time.Second), 10))(t)
	if len(due) != 2 {
		t.Fatalf("due after reschedule = %v, want a1 and b1", ids(due))
	}
	if ok := must(s.OutboxRetry(ctx, "q", "A", "nope", 1, next, "x"))(t); ok {
		t.Fatal("retry of an unknown entry reported pending")
	}
}

func must2(t *testing.T) func(time.Time, bool, error) (time.Time, bool) {
	return func(at time.Time, ok bool, err error) (time.Time, bool) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return at, ok
	}
}

func ids(es []delivery.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Channel+"/"+e.MessageID)
	}
	return out
}

func testFinishAndDone(t *testing.T, s delivery.Storage) {
	ctx := context.Background()
	e := must(s.OutboxEnqueue(ctx, entry("q", "c", "m", t0, time.Hour), 10, t0))(t).Entry
	o := delivery.Outcome{Queue: "q", Channel: "c", MessageID: "m", Kind: delivery.OutcomeFailed, Code: "target_delivery_failed",
		Message: "no", Attempts: 2, CreatedAt: e.CreatedAt, ExpiresAt: e.ExpiresAt, At: t0.Add(time.Minute)}
	if ok := must(s.OutboxFinish(ctx, o))(t); !ok {
		t.Fatal("finish of a pending entry reported false")
	}
	if ok := must(s.OutboxFinish(ctx, o))(t); ok {
		t.Fatal("second finish reported true")
	}
	got, ok, err := s.OutboxOutcome(ctx, "q", "c", "m")
	if err != nil || !ok {
		t.Fatalf("outcome: %v %v", ok, err)
	}
	if got != o {
		t.Fatalf("outcome = %+v, want %+v", got, o)
	}
	r := must(s.OutboxEnqueue(ctx, entry("q", "c", "m", t0.Add(time.Hour), time.Hour), 10, t0))(t)
	if r.Status != delivery.AlreadyDone || r.Outcome.Kind != delivery.OutcomeFailed {
		t.Fatalf("enqueue after finish = %v %+v, want done/failed", r.Status, r.Outcome)
	}
	if n := must(s.OutboxPending(ctx, "q"))(t); n != 0 {
		t.Fatalf("pending = %d, want 0", n)
	}
}

// testFinishNextAndHead checks the optional extensions: the Head flag of
// an enqueue (when the storage sets it, it must be right) and
// OutboxFinishNext, which finishes an entry and reads the channel's next
// head in one step.
func testFinishNextAndHead(t *testing.T, s delivery.Storage) {
	ctx := context.Background()
	var seqs []int64
	for i := range 3 {
		r := must(s.OutboxEnqueue(ctx, entry("q", "c", fmt.Sprint("m", i), t0, time.Hour), 10, t0))(t)
		if r.Head && i > 0 {
			t.Fatalf("enqueue %d reported the head of a channel with older entries", i)
		}
		seqs = append(seqs, r.Entry.Seq)
	}
	// Eviction leaving nothing older: the new entry is the head.
	r := must(s.OutboxEnqueue(ctx, entry("q", "solo", "a", t0, time.Hour), 1, t0))(t)
	r2 := must(s.OutboxEnqueue(ctx, entry("q", "solo", "b", t0, time.Hour), 1, t0))(t)
	if r2.Status != delivery.Enqueued || len(r2.Dropped) != 1 || r.Head != r2.Head {
		t.Fatalf("enqueue into a full channel of one = %v dropped %d head %v, first head %v", r2.Status, len(r2.Dropped), r2.Head, r.Head)
	}
	fs, ok := s.(delivery.OutboxFinishNextStorage)
	if !ok {
		t.Skip("storage does not implement OutboxFinishNextStorage")
	}
	oc := func(id string) delivery.Outcome {
		return delivery.Outcome{Queue: "q", Channel: "c", MessageID: id, Kind: delivery.OutcomeDelivered,
			Attempts: 1, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour), At: t0.Add(time.Second)}
	}
	for i := range 3 {
		ok, next, hasNext := must3(fs.OutboxFinishNext(ctx, oc(fmt.Sprint("m", i))))(t)
		if !ok {
			t.Fatalf("finish of m%d reported false", i)
		}
		want := i < 2
		if hasNext != want || want && (next.Seq != seqs[i+1] || next.MessageID != fmt.Sprint("m", i+1) ||
			string(next.Payload) != "payload-"+next.MessageID || !next.ExpiresAt.Equal(t0.Add(time.Hour))) {
			t.Fatalf("after m%d: next %+v %v", i, next, hasNext)
		}
		if got, ok, err := s.OutboxOutcome(ctx, "q", "c", fmt.Sprint("m", i)); err != nil || !ok || got != oc(fmt.Sprint("m", i)) {
			t.Fatalf("outcome of m%d = %+v %v %v", i, got, ok, err)
		}
	}
	if ok, _, hasNext := must3(fs.OutboxFinishNext(ctx, oc("m0")))(t); ok || hasNext {
		t.Fatalf("second finish = %v %v, want false and no head", ok, hasNext)
	}
}

// must3 is must for three results.
// testAfter checks OutboxAfter (when the storage has it): the entry
// following a seq in its channel, whether or not the entry at that seq is
// still pending, and none after the last.
func testAfter(t *testing.T, s delivery.Storage) {
	as, ok := s.(delivery.OutboxAfterStorage)
	if !ok {
		t.Skip("the storage does not implement OutboxAfterStorage")
	}
	ctx := context.Background()
	var seqs []int64
	for i := range 3 {
		r := must(s.OutboxEnqueue(ctx, entry("q", "c", "m"+string(rune('0'+i)), t0, time.Hour), 0, t0))(t)
		seqs = append(seqs, r.Entry.Seq)
	}
	must(s.OutboxEnqueue(ctx, entry("q", "other", "x", t0, time.Hour), 0, t0))(t)
	e, ok := must2e(as.OutboxAfter(ctx, "q", "c", seqs[0]))(t)
	if !ok || e.MessageID != "m1" || string(e.Payload) != "payload-m1" || !e.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("after m0 = %+v %v, want m1", e, ok)
	}
	// The entry before may already be finished.
	must(s.OutboxFinish(ctx, delivery.Outcome{Queue: "q", Channel: "c", MessageID: "m1", Kind: delivery.OutcomeDelivered, At: t0}))(t)
	if e, ok := must2e(as.OutboxAfter(ctx, "q", "c", seqs[0]))(t); !ok || e.MessageID != "m2" {
		t.Fatalf("after m0 once m1 is done = %+v %v, want m2", e, ok)
	}
	if e, ok := must2e(as.OutboxAfter(ctx, "q", "c", seqs[2]))(t); ok {
		t.Fatalf("after the last entry = %+v, want none", e)
	}
}

func must2e(e delivery.Entry, ok bool, err error) func(t *testing.T) (delivery.Entry, bool) {
	return func(t *testing.T) (delivery.Entry, bool) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return e, ok
	}
}

func must3[A, B, C any](a A, b B, c C, err error) func(t *testing.T) (A, B, C) {
	return func(t *testing.T) (A, B, C) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a, b, c
	}
}

func testCapacityEviction(t *testing.T, s delivery.Storage) {
	ctx := context.Background()
	for i := range 3 {
		r := must(s.OutboxEnqueue(ctx, entry("q", "c", fmt.Sprint("m", i), t0, time.Hour), 3, t0))(t)
		if len(r.Dropped) != 0 {
			t.Fatalf("enqueue %d dropped %v", i, r.Dropped)
		}
	}
	r := must(s.OutboxEnqueue(ctx, entry("q", "c", "m3", t0, time.Hour), 3, t0))(t)
	if r.Status != delivery.Enqueued || len(r.Dropped) != 1 {
		t.Fatalf("overflow enqueue = %v dropped %v", r.Status, r.Dropped)
	}
	d := r.Dropped[0]
	if d.MessageID != "m0" || d.Kind != delivery.OutcomeEvicted || d.Code != delivery.CodeCapacityExceeded {
		t.Fatalf("dropped = %+v, want m0 evicted capacity_exceeded", d)
	}
	if o, ok, _ := s.OutboxOutcome(ctx, "q", "c", "m0"); !ok || o.Kind != delivery.OutcomeEvicted {
		t.Fatalf("eviction not recorded: %+v %v", o, ok)
	}
	due := must(s.OutboxDue(ctx, "q", t0, 10))(t)
	if len(due) != 1 || due[0].MessageID != "m1" {
		t.Fatalf("head after eviction = %v, want m1", ids(due))
	}
	if n := must(s.OutboxPending(ctx, "q"))(t); n != 3 {
		t.Fatalf("pending = %d, want 3", n)
	}
}

func testExpiryAtEnqueue(t *testing.T, s delivery.Storage) {
	ctx := context.Background()
	must(s.OutboxEnqueue(ctx, entry("q", "c", "old", t0, time.Minute), 2, t0))(t)
	must(s.OutboxEnqueue(ctx, entry("q", "c", "young", t0.Add(30*time.Second), time.Hour), 2, t0))(t)
	now := t0.Add(time.Minute)
	r := must(s.OutboxEnqueue(ctx, entry("q", "c", "new", now, time.Hour), 2, now))(t)
	if len(r.Dropped) != 1 || r.Dropped[0].MessageID != "old" || r.Dropped[0].Kind != delivery.OutcomeExpired {
		t.Fatalf("dropped = %+v, want old expired (expired entries go before evicting)", r.Dropped)
	}
	if n := must(s.OutboxPending(ctx, "q"))(t); n != 2 {
		t.Fatalf("pending = %d, want 2", n)
	}
}

func testExpireSweep(t *testing.T, s delivery.Storage) {
	ctx := context.Background()
	for i := range 5 {
		must(s.OutboxEnqueue(ctx, entry("q", fmt.Sprint("c", i), "m", t0, time.Duration(i+1)*time.Minute), 10, t0))(t)
	}
	now := t0.Add(3 * time.Minute)
	out := must(s.OutboxExpire(ctx, "q", now, 2))(t)
	if len(out) != 2 {
		t.Fatalf("expire limit 2 returned %d", len(out))
	}
	out = must(s.OutboxExpire(ctx, "q", now, 10))(t)
	if len(out) != 1 || out[0].Channel != "c2" || out[0].Kind != delivery.OutcomeExpired || !out[0].At.Equal(now) {
		t.Fatalf("second expire = %+v, want c2", out)
	}
	if n := must(s.OutboxPending(ctx, "q"))(t); n != 2 {
		t.Fatalf("pending = %d, want 2", n)
	}
}

// testAmendExpired: a delivery whose entry was expired meanwhile replaces
// the expired outcome, and nothing else (a pending key, another outcome).
func testAmendExpired(t *testing.T, s delivery.Storage) {
	am, ok := s.(delivery.OutboxAmendStorage)
	if !ok {
		t.Skip("the storage does not implement delivery.OutboxAmendStorage")
	}
	ctx := context.Background()
	must(s.OutboxEnqueue(ctx, entry("q", "c", "old", t0, time.Minute), 10, t0))(t)
	must(s.OutboxEnqueue(ctx, entry("q", "c", "live", t0, time.Hour), 10, t0))(t)
	must(s.OutboxExpire(ctx, "q", t0.Add(2*time.Minute), 10))(t)
	at := t0.Add(3 * time.Minute)
	del := func(id string) delivery.Outcome {
		return delivery.Outcome{Queue: "q", Channel: "c", MessageID: id, Kind: delivery.OutcomeDelivered, Attempts: 1,
			CreatedAt: t0, ExpiresAt: t0.Add(time.Minute), At: at}
	}
	if done := must(am.OutboxAmendExpired(ctx, del("live")))(t); done {
		t.Fatal("amended a pending key")
	}
	if done := must(am.OutboxAmendExpired(ctx, del("never")))(t); done {
		t.Fatal("amended a key without an outcome")
	}
	if done := must(am.OutboxAmendExpired(ctx, del("old")))(t); !done {
		t.Fatal("the expired outcome was not amended")
	}
	o, ok, err := s.OutboxOutcome(ctx, "q", "c", "old")
	if err != nil || !ok || o.Kind != delivery.OutcomeDelivered || o.Attempts != 1 || !o.At.Equal(at) {
		t.Fatalf("outcome = %+v %v %v, want delivered at %v", o, ok, err, at)
	}
	if done := must(am.OutboxAmendExpired(ctx, del("old")))(t); done {
		t.Fatal("amended a delivered outcome again")
	}
}

func testOutcomeHistory(t *testing.T, s delivery.Storage) {
	ctx := context.Background()
	for i := range 5 {
		id := fmt.Sprint("m", i)
		must(s.OutboxEnqueue(ctx, entry("q", "c", id, t0, time.Hour), 10, t0))(t)
		must(s.OutboxFinish(ctx, delivery.Outcome{Queue: "q", Channel: "c", MessageID: id, Kind: delivery.OutcomeDelivered,
			At: t0.Add(time.Duration(i) * time.Minute)}))(t)
	}
	list := must(s.OutboxOutcomes(ctx, "q", "c", 3))(t)
	if len(list) != 3 || list[0].MessageID != "m4" || list[2].MessageID != "m2" {
		t.Fatalf("outcomes = %+v, want m4, m3, m2", list)
	}
	n := must(s.OutboxPruneOutcomes(ctx, "q", t0.Add(time.Minute), 10))(t)
	if n != 1 {
		t.Fatalf("prune by age deleted %d, want 1", n)
	}
	n = must(s.OutboxPruneOutcomes(ctx, "q", t0, 2))(t)
	if n != 2 {
		t.Fatalf("prune by count deleted %d, want 2", n)
	}
	list = must(s.OutboxOutcomes(ctx, "q", "c", 10))(t)
	if len(list) != 2 || list[0].MessageID != "m4" || list[1].MessageID != "m3" {
		t.Fatalf("outcomes after prune = %+v, want m4, m3", list)
	}
}

func testDeleteChannel(t *testing.T, s delivery.Storage) {
	ctx := context.Background()
	must(s.OutboxEnqueue(ctx, entry("q", "c", "m1", t0, time.Hour), 10, t0))(t)
	must(s.OutboxEnqueue(ctx, entry("q", "c", "m2", t0, time.Hour), 10, t0))(t)
	must(s.OutboxEnqueue(ctx, entry("q", "keep", "m1", t0, time.Hour), 10, t0))(t)
	if n := must(s.OutboxDeleteChannel(ctx, "q", "c"))(t); n != 2 {
		t.Fatalf("delete channel = %d, want 2", n)
	}
	if n := must(s.OutboxPending(ctx, "q"))(t); n != 1 {
		t.Fatalf("pending = %d, want 1", n)
	}
}

func testInboxRecord(t *testing.T, s delivery.Storage) {
	ctx := context.Background()
	r := delivery.InboxRecord{Queue: "in", Channel: "c", MessageID: "m", Hash: "h1", At: t0}
	if _, inserted := must2b(t)(s.InboxPut(ctx, r, 10)); !inserted {
		t.Fatal("first put not inserted")
	}
	r2 := r
	r2.Hash, r2.At = "h2", t0.Add(time.Second)
	ex, inserted := must2b(t)(s.InboxPut(ctx, r2, 10))
	if inserted || ex != r {
		t.Fatalf("second put = %+v %v, want the first record kept", ex, inserted)
	}
	got, ok, err := s.InboxGet(ctx, "in", "c", "m")
	if err != nil || !ok || got != r {
		t.Fatalf("get = %+v %v %v", got, ok, err)
	}
	if _, ok, _ := s.InboxGet(ctx, "other", "c", "m"); ok {
		t.Fatal("record visible in another queue")
	}
}

func must2b(t *testing.T) func(delivery.InboxRecord, bool, error) (delivery.InboxRecord, bool) {
	return func(r delivery.InboxRecord, ok bool, err error) (delivery.InboxRecord, bool) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r, ok
	}
}

func testInboxBounds(t *testing.T, s delivery.Storage) {
	ctx := context.Background()
	for i := range 5 {
		must2b(t)(s.InboxPut(ctx, delivery.InboxRecord{Queue: "in", Channel: "c", MessageID: fmt.Sprint("m", i),
			Hash: "h", At: t0.Add(time.Duration(i) * time.Minute)}, 3))
	}
	for i := range 5 {
		_, ok, err := s.InboxGet(ctx, "in", "c", fmt.Sprint("m", i))
		if err != nil {
			t.Fatal(err)
		}
		if want := i >= 2; ok != want {
			t.Fatalf("m%d kept = %v, want %v (at most 3 per channel, oldest dropped)", i, ok, want)
		}
	}
	if n := must(s.InboxPrune(ctx, "in", t0.Add(4*time.Minute)))(t); n != 2 {
		t.Fatalf("prune = %d, want 2", n)
	}
	must2b(t)(s.InboxPut(ctx, delivery.InboxRecord{Queue: "in", Channel: "d", MessageID: "x", Hash: "h", At: t0}, 3))
	if n := must(s.InboxDeleteChannel(ctx, "in", "d"))(t); n != 1 {
		t.Fatalf("delete channel = %d, want 1", n)
	}
}
