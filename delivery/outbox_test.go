package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/protocol"
)

// recorder is a SendFunc whose answer per message is decided by a test.
type recorder struct {
	mu     sync.Mutex
	sent   []string    // channel/message_id of every attempt, in order
	times  []time.Time // time of every attempt
	answer func(e delivery.Entry, attempt int) error
	counts map[string]int
}

func (r *recorder) send(ctx context.Context, e delivery.Entry) error {
	r.mu.Lock()
	if r.counts == nil {
		r.counts = map[string]int{}
	}
	k := e.Channel + "/" + e.MessageID
	r.counts[k]++
	n := r.counts[k]
	r.sent = append(r.sent, k)
	r.times = append(r.times, time.Now())
	answer := r.answer
	r.mu.Unlock()
	if answer == nil {
		return nil
	}
	return answer(e, n)
}

func (r *recorder) attempts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sent)
}

// startOutbox runs ob until the test's end and waits for Run to return.
func startOutbox(t *testing.T, ob *delivery.Outbox) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ob.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	})
}

func newOutbox(t *testing.T, st delivery.OutboxStorage, r *recorder, mod func(*delivery.OutboxOptions)) *delivery.Outbox {
	t.Helper()
	opts := delivery.OutboxOptions{Storage: st, Queue: "test", Send: r.send,
		Backoff: delivery.Backoff{Base: time.Second, Max: 8 * time.Second, Jitter: -1}}
	if mod != nil {
		mod(&opts)
	}
	ob, err := delivery.NewOutbox(opts)
	if err != nil {
		t.Fatal(err)
	}
	return ob
}

func enqueue(t *testing.T, ob *delivery.Outbox, channel, id string) delivery.EnqueueResult {
	t.Helper()
	res, err := ob.Enqueue(context.Background(), channel, id, []byte(id))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func stats(t *testing.T, ob *delivery.Outbox) delivery.Stats {
	t.Helper()
	s, err := ob.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOutboxDeliversInChannelOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{}
		ob := newOutbox(t, delivery.NewMemoryStorage(0), r, nil)
		for i := range 3 {
			enqueue(t, ob, "A", fmt.Sprint("a", i))
			enqueue(t, ob, "B", fmt.Sprint("b", i))
		}
		startOutbox(t, ob)
		synctest.Wait()
		got := r.attempts()
		var a, b []string
		for _, k := range got {
			if strings.HasPrefix(k, "A/") {
				a = append(a, k)
			} else {
				b = append(b, k)
			}
		}
		if !slices.Equal(a, []string{"A/a0", "A/a1", "A/a2"}) || !slices.Equal(b, []string{"B/b0", "B/b1", "B/b2"}) {
			t.Fatalf("attempts = %v, want each channel in enqueue order", got)
		}
		s := stats(t, ob)
		if s.Pending != 0 || s.Deliveries != 6 || s.Attempts != 6 {
			t.Fatalf("stats = %+v", s)
		}
		o, ok, err := ob.Outcome(context.Background(), "A", "a1")
		if err != nil || !ok || o.Kind != delivery.OutcomeDelivered || o.Attempts != 1 {
			t.Fatalf("outcome = %+v %v %v", o, ok, err)
		}
	})
}

func TestOutboxTemporaryFailureBlocksOnlyItsChannel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		r := &recorder{answer: func(e delivery.Entry, n int) error {
			if e.Channel == "A" && e.MessageID == "a0" && n <= 5 {
				return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Message: "rate limited", Retryable: true}
			}
			return nil
		}}
		ob := newOutbox(t, delivery.NewMemoryStorage(0), r, nil)
		enqueue(t, ob, "A", "a0")
		enqueue(t, ob, "A", "a1")
		enqueue(t, ob, "B", "b0")
		startOutbox(t, ob)
		synctest.Wait()
		got := r.attempts()
		if slices.Contains(got, "A/a1") {
			t.Fatalf("a1 sent while its head a0 failed: %v", got)
		}
		if !slices.Contains(got, "B/b0") {
			t.Fatalf("channel B blocked by channel A: %v", got)
		}
		s := stats(t, ob)
		if s.Pending != 2 || !strings.Contains(s.LastError, "rate limited") {
			t.Fatalf("stats = %+v, want 2 pending and the last error kept", s)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		got = r.attempts()
		if i, j := slices.Index(got, "A/a1"), slices.Index(got, "B/b0"); i < 0 || j < 0 {
			t.Fatalf("after backoff: %v", got)
		}
		// Backoff without jitter: 1 s, 2 s, 4 s, 8 s, 8 s (capped).
		var gaps []time.Duration
		r.mu.Lock()
		var prev time.Time = start
		for i, k := range r.sent {
			if k == "A/a0" {
				gaps = append(gaps, r.times[i].Sub(prev))
				prev = r.times[i]
			}
		}
		r.mu.Unlock()
		want := []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}
		if !slices.Equal(gaps, want) {
			t.Fatalf("gaps between attempts of a0 = %v, want %v", gaps, want)
		}
		if s := stats(t, ob); s.Pending != 0 || s.Deliveries != 3 || s.Attempts != 8 {
			t.Fatalf("stats = %+v", s)
		}
	})
}

func TestOutboxJitterStaysInBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var times []time.Time
		r := &recorder{answer: func(e delivery.Entry, n int) error {
			times = append(times, time.Now())
			if n <= 20 {
				return errors.New("disconnected")
			}
			return nil
		}}
		ob := newOutbox(t, delivery.NewMemoryStorage(0), r, func(o *delivery.OutboxOptions) {
			o.Backoff = delivery.Backoff{Base: time.Second, Max: 10 * time.Second, Jitter: 0.5}
		})
		enqueue(t, ob, "A", "a0")
		startOutbox(t, ob)
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if len(times) != 21 {
			t.Fatalf("attempts = %d, want 21", len(times))
		}
		for i := 1; i < len(times); i++ {
			gap := times[i].Sub(times[i-1])
			base := min(time.Second<<(i-1), 10*time.Second)
			if gap < base/2 || gap > base*3/2 {
				t.Fatalf("gap %d = %v, want within ±50%% of %v", i, gap, base)
			}
		}
	})
}

func TestOutboxTerminalFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []delivery.Outcome
		var mu sync.Mutex
		r := &recorder{answer: func(e delivery.Entry, n int) error {
			if e.MessageID == "bad" {
				return delivery.AckResult(protocol.ChatAckPayload{MessageID: "bad", Status: protocol.AckRejected,
					Code: "invalid_packet", Retryable: new(bool), Message: "bad payload"})
			}
			return nil
		}}
		ob := newOutbox(t, delivery.NewMemoryStorage(0), r, func(o *delivery.OutboxOptions) {
			o.OnOutcome = func(oc delivery.Outcome) { mu.Lock(); seen = append(seen, oc); mu.Unlock() }
		})
		enqueue(t, ob, "A", "bad")
		enqueue(t, ob, "A", "good")
		startOutbox(t, ob)
		synctest.Wait()
		if got := r.attempts(); !slices.Equal(got, []string{"A/bad", "A/good"}) {
			t.Fatalf("attempts = %v: a terminal failure must not be retried and must not block the channel", got)
		}
		o, ok, _ := ob.Outcome(context.Background(), "A", "bad")
		if !ok || o.Kind != delivery.OutcomeFailed || o.Code != protocol.CodeInvalidPacket || o.Message != "bad payload" {
			t.Fatalf("outcome = %+v", o)
		}
		s := stats(t, ob)
		if s.Failures != 1 || s.Deliveries != 1 || !strings.Contains(s.LastError, "invalid_packet") {
			t.Fatalf("stats = %+v", s)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != 2 {
			t.Fatalf("OnOutcome saw %d outcomes, want 2", len(seen))
		}
		// Enqueueing a finished message again sends nothing.
		if res := enqueue(t, ob, "A", "bad"); res.Status != delivery.AlreadyDone {
			t.Fatalf("re-enqueue = %v, want done", res.Status)
		}
	})
}

func TestOutboxExpiredEntryIsNeverSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{answer: func(e delivery.Entry, n int) error {
			return context.DeadlineExceeded // an ack timeout, forever
		}}
		ob := newOutbox(t, delivery.NewMemoryStorage(0), r, func(o *delivery.OutboxOptions) {
			o.TTL = time.Minute
			o.Backoff = delivery.Backoff{Base: 7 * time.Second, Max: 7 * time.Second, Jitter: -1}
		})
		res := enqueue(t, ob, "A", "m")
		if want := res.Entry.CreatedAt.Add(time.Minute); !res.Entry.ExpiresAt.Equal(want) {
			t.Fatalf("expires_at = %v, want %v", res.Entry.ExpiresAt, want)
		}
		startOutbox(t, ob)
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		r.mu.Lock()
		for _, at := range r.times {
			if !at.Before(res.Entry.ExpiresAt) {
				t.Errorf("attempt at %v, at or after expiry %v", at, res.Entry.ExpiresAt)
			}
		}
		r.mu.Unlock()
		o, ok, _ := ob.Outcome(context.Background(), "A", "m")
		if !ok || o.Kind != delivery.OutcomeExpired || !o.ExpiresAt.Equal(res.Entry.ExpiresAt) {
			t.Fatalf("outcome = %+v %v, want expired", o, ok)
		}
		if s := stats(t, ob); s.Expirations != 1 || s.Deliveries != 0 || s.Pending != 0 {
			t.Fatalf("stats = %+v", s)
		}
	})
}

func TestOutboxExpiryAtStartup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := delivery.NewMemoryStorage(0)
		r := &recorder{}
		ob := newOutbox(t, st, r, func(o *delivery.OutboxOptions) { o.TTL = time.Minute })
		enqueue(t, ob, "A", "old")
		time.Sleep(2 * time.Minute) // the process was down
		ob2 := newOutbox(t, st, r, func(o *delivery.OutboxOptions) { o.TTL = time.Minute })
		startOutbox(t, ob2)
		synctest.Wait()
		if got := r.attempts(); len(got) != 0 {
			t.Fatalf("expired entry sent after restart: %v", got)
		}
		if s := stats(t, ob2); s.Expirations != 1 {
			t.Fatalf("stats = %+v, want one expiration at startup", s)
		}
	})
}

func TestOutboxSweeperRunsWithinHalfTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The head blocks the channel with a long backoff, so only the
		// sweeper can expire the entry behind it.
		r := &recorder{answer: func(e delivery.Entry, n int) error { return errors.New("closed") }}
		var expiredAt time.Time
		ob := newOutbox(t, delivery.NewMemoryStorage(0), r, func(o *delivery.OutboxOptions) {
			o.TTL = time.Hour
			o.Backoff = delivery.Backoff{Base: 10 * time.Hour, Max: 10 * time.Hour, Jitter: -1}
			o.OnOutcome = func(oc delivery.Outcome) {
				if oc.MessageID == "behind" {
					expiredAt = oc.At
				}
			}
		})
		start := time.Now()
		enqueue(t, ob, "A", "head")
		enqueue(t, ob, "A", "behind")
		startOutbox(t, ob)
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		if expiredAt.IsZero() {
			t.Fatal("entry behind a blocked head never expired")
		}
		if late := expiredAt.Sub(start.Add(time.Hour)); late < 0 || late > 30*time.Minute {
			t.Fatalf("expired %v after its expiry, want within TTL/2", late)
		}
	})
}

func TestOutboxCapacityEvictionIsRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var evicted []delivery.Outcome
		ob := newOutbox(t, delivery.NewMemoryStorage(0), &recorder{}, func(o *delivery.OutboxOptions) {
			o.Capacity = 2
			o.OnOutcome = func(oc delivery.Outcome) { evicted = append(evicted, oc) }
		})
		enqueue(t, ob, "A", "m0")
		enqueue(t, ob, "A", "m1")
		res := enqueue(t, ob, "A", "m2")
		if len(res.Dropped) != 1 || len(evicted) != 1 || evicted[0].MessageID != "m0" ||
			evicted[0].Kind != delivery.OutcomeEvicted || evicted[0].Code != delivery.CodeCapacityExceeded {
			t.Fatalf("evicted = %+v", evicted)
		}
		if s := stats(t, ob); s.Evictions != 1 || s.Pending != 2 || s.Capacity != 2 {
			t.Fatalf("stats = %+v", s)
		}
	})
}

func TestOutboxEnqueueIsIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{}
		ob := newOutbox(t, delivery.NewMemoryStorage(0), r, nil)
		first := enqueue(t, ob, "A", "m")
		time.Sleep(time.Minute)
		again := enqueue(t, ob, "A", "m")
		if again.Status != delivery.AlreadyPending || !again.Entry.ExpiresAt.Equal(first.Entry.ExpiresAt) {
			t.Fatalf("second enqueue = %v, expires %v, want pending with the first expiry %v",
				again.Status, again.Entry.ExpiresAt, first.Entry.ExpiresAt)
		}
		startOutbox(t, ob)
		synctest.Wait()
		if res := enqueue(t, ob, "A", "m"); res.Status != delivery.AlreadyDone {
			t.Fatalf("enqueue after delivery = %v, want done", res.Status)
		}
		synctest.Wait()
		if got := r.attempts(); len(got) != 1 {
			t.Fatalf("attempts = %v, want exactly one", got)
		}
	})
}

func TestOutboxResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		open := false
		var mu sync.Mutex
		r := &recorder{answer: func(e delivery.Entry, n int) error {
			mu.Lock()
			defer mu.Unlock()
			if !open {
				return protocol.Errorf(protocol.CodeChannelNotOpen, "channel closed")
			}
			return nil
		}}
		ob := newOutbox(t, delivery.NewMemoryStorage(0), r, func(o *delivery.OutboxOptions) {
			o.Backoff = delivery.Backoff{Base: time.Hour, Max: time.Hour, Jitter: -1}
			o.TTL = 24 * time.Hour
		})
		enqueue(t, ob, "A", "m")
		startOutbox(t, ob)
		synctest.Wait()
		if s := stats(t, ob); s.Pending != 1 || s.Attempts != 1 {
			t.Fatalf("stats = %+v, want one failed attempt", s)
		}
		mu.Lock()
		open = true
		mu.Unlock()
		if err := ob.Resume(context.Background(), "A"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if s := stats(t, ob); s.Pending != 0 || s.Deliveries != 1 {
			t.Fatalf("stats after Resume = %+v, want delivered without waiting for the backoff", s)
		}
	})
}

func TestOutboxWorkersBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		cur, peak := 0, 0
		r := &recorder{answer: func(e delivery.Entry, n int) error {
			mu.Lock()
			cur++
			peak = max(peak, cur)
			mu.Unlock()
			time.Sleep(time.Second)
			mu.Lock()
			cur--
			mu.Unlock()
			return nil
		}}
		ob := newOutbox(t, delivery.NewMemoryStorage(0), r, func(o *delivery.OutboxOptions) { o.Workers = 3 })
		for i := range 10 {
			enqueue(t, ob, fmt.Sprint("c", i), "m")
		}
		startOutbox(t, ob)
		time.Sleep(time.Minute)
		synctest.Wait()
		if peak != 3 {
			t.Fatalf("peak parallel sends = %d, want 3", peak)
		}
		if s := stats(t, ob); s.Deliveries != 10 {
			t.Fatalf("deliveries = %d", s.Deliveries)
		}
	})
}

func TestOutboxOptionsAndRunTwice(t *testing.T) {
	if _, err := delivery.NewOutbox(delivery.OutboxOptions{Send: (&recorder{}).send}); err == nil {
		t.Error("NewOutbox without storage succeeded")
	}
	if _, err := delivery.NewOutbox(delivery.OutboxOptions{Storage: delivery.NewMemoryStorage(0)}); err == nil {
		t.Error("NewOutbox without Send succeeded")
	}
	synctest.Test(t, func(t *testing.T) {
		ob := newOutbox(t, delivery.NewMemoryStorage(0), &recorder{}, func(o *delivery.OutboxOptions) { o.MaxPayload = 4 })
		if _, err := ob.Enqueue(context.Background(), "A", "m", []byte("12345")); err == nil {
			t.Error("oversized payload accepted")
		}
		if _, err := ob.Enqueue(context.Background(), "", "m", nil); err == nil {
			t.Error("empty channel accepted")
		}
		full := newOutbox(t, delivery.NewMemoryStorage(0), &recorder{}, func(o *delivery.OutboxOptions) { o.MaxPending = 2 })
		enqueue(t, full, "A", "1")
		enqueue(t, full, "B", "1")
		if _, err := full.Enqueue(context.Background(), "C", "1", nil); !errors.Is(err, delivery.ErrOutboxFull) {
			t.Errorf("enqueue beyond MaxPending: %v, want ErrOutboxFull", err)
		}
		startOutbox(t, ob)
		synctest.Wait()
		if err := ob.Run(context.Background()); err == nil {
			t.Error("second Run succeeded")
		}
	})
}

// TestOutboxWorkerHandsBackABusyChannel: a worker goes on with its
// channel's next entries (the storage reads one channel's head) but hands
// the channel back after a bounded run, so that a channel beyond Workers
// enqueued early is served after at most one run (32 entries), not after
// the whole long channel; order holds in both.
func TestOutboxWorkerHandsBackABusyChannel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{}
		ob := newOutbox(t, delivery.NewMemoryStorage(0), r, func(o *delivery.OutboxOptions) { o.Workers = 1 })
		const long = 200
		for i := range long {
			enqueue(t, ob, "A", fmt.Sprintf("a%03d", i))
			if i == 0 {
				enqueue(t, ob, "B", "b0")
			}
		}
		startOutbox(t, ob)
		synctest.Wait()
		got := r.attempts()
		if len(got) != long+1 {
			t.Fatalf("%d attempts, want %d", len(got), long+1)
		}
		var a []string
		b := -1
		for i, k := range got {
			if k == "B/b0" {
				b = i
				continue
			}
			a = append(a, k)
		}
		if !slices.IsSorted(a) {
			t.Fatalf("channel A out of order: %v", a)
		}
		if b < 1 || b > 32 {
			t.Fatalf("B/b0 sent at position %d, want after one bounded run of A", b)
		}
	})
}

// TestOutboxDeliveryAcceptedAfterExpiryIsDelivered: an attempt starts
// before its entry's expiry and is accepted after it, while an enqueue on
// the same channel has removed the entry as expired. The receiver took the
// message, so the recorded outcome ends as delivered (a chaos run reported
// an accepted message as expired).
func TestOutboxDeliveryAcceptedAfterExpiryIsDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ob *delivery.Outbox
		var mu sync.Mutex
		var seen []delivery.OutcomeKind
		r := &recorder{answer: func(e delivery.Entry, n int) error {
			if e.MessageID == "slow" {
				time.Sleep(70 * time.Second) // the ack comes after the expiry
				if _, err := ob.Enqueue(context.Background(), "A", "next", []byte("next")); err != nil {
					t.Error(err)
				}
			}
			return nil
		}}
		ob = newOutbox(t, delivery.NewMemoryStorage(0), r, func(o *delivery.OutboxOptions) {
			o.TTL = time.Minute
			o.OnOutcome = func(oc delivery.Outcome) {
				if oc.MessageID == "slow" {
					mu.Lock()
					seen = append(seen, oc.Kind)
					mu.Unlock()
				}
			}
		})
		enqueue(t, ob, "A", "slow")
		startOutbox(t, ob)
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		o, ok, _ := ob.Outcome(context.Background(), "A", "slow")
		if !ok || o.Kind != delivery.OutcomeDelivered {
			t.Fatalf("outcome = %+v %v, want delivered", o, ok)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != 2 || seen[0] != delivery.OutcomeExpired || seen[1] != delivery.OutcomeDelivered {
			t.Fatalf("observed %v, want expired then delivered", seen)
		}
		if got := r.attempts(); len(got) != 2 || got[0] != "A/slow" || got[1] != "A/next" {
			t.Fatalf("attempts %v", got)
		}
	})
}
