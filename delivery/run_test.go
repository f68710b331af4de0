package delivery_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/protocol"
)

// Storages with fewer optional interfaces than MemoryStorage, so that the
// delivery loop's fallbacks run too.
type (
	// baseOnly is a storage with none of the optional interfaces: the loop
	// learns the next head only by reading every due head.
	baseOnly struct{ delivery.OutboxStorage }
	// headOnly reads one channel's head but cannot finish and read in one
	// step.
	headOnly struct {
		delivery.OutboxStorage
		heads delivery.OutboxHeadStorage
	}
)

func (h headOnly) OutboxHead(ctx context.Context, queue, channel string) (delivery.Entry, bool, error) {
	return h.heads.OutboxHead(ctx, queue, channel)
}

// finishNext reads heads and finishes with the next head, but cannot read
// the entry after another (no pipelined outcomes).
type finishNext struct {
	headOnly
	fn delivery.OutboxFinishNextStorage
}

func (f finishNext) OutboxFinishNext(ctx context.Context, o delivery.Outcome) (bool, delivery.Entry, bool, error) {
	return f.fn.OutboxFinishNext(ctx, o)
}

// slowFinish is a MemoryStorage whose outcomes are stored only once
// released: it shows whether a worker waits for them.
type slowFinish struct {
	*delivery.MemoryStorage
	release chan struct{}
}

func (s slowFinish) OutboxFinish(ctx context.Context, o delivery.Outcome) (bool, error) {
	<-s.release
	return s.MemoryStorage.OutboxFinish(ctx, o)
}

func (s slowFinish) OutboxFinishNext(ctx context.Context, o delivery.Outcome) (bool, delivery.Entry, bool, error) {
	<-s.release
	return s.MemoryStorage.OutboxFinishNext(ctx, o)
}

// With OutboxAfterStorage a worker sends a channel's next entry as soon as
// the previous one is acked, while its outcome is still being stored; it
// hands the channel back only once every outcome is stored, each entry
// sent once, in order.
func TestOutboxPipelinesOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := slowFinish{delivery.NewMemoryStorage(0), make(chan struct{})}
		r := &recorder{}
		var delivered []string
		var mu sync.Mutex
		ob := newOutbox(t, st, r, func(o *delivery.OutboxOptions) {
			o.OnOutcome = func(oc delivery.Outcome) {
				mu.Lock()
				delivered = append(delivered, oc.MessageID)
				mu.Unlock()
			}
		})
		for _, id := range []string{"m1", "m2", "m3"} {
			enqueue(t, ob, "A", id)
		}
		startOutbox(t, ob)
		synctest.Wait()
		if got := r.attempts(); !slices.Equal(got, []string{"A/m1", "A/m2", "A/m3"}) {
			t.Fatalf("sent before any outcome was stored: %v, want m1, m2, m3", got)
		}
		mu.Lock()
		n := len(delivered)
		mu.Unlock()
		if n != 0 {
			t.Fatalf("%d outcomes recorded while storage held them", n)
		}
		close(st.release)
		synctest.Wait()
		if s := stats(t, ob); s.Pending != 0 || s.Deliveries != 3 {
			t.Fatalf("after the outcomes were stored: %+v", s)
		}
		if got := r.attempts(); len(got) != 3 {
			t.Fatalf("attempts %v, want each entry once", got)
		}
	})
}

// storages lists the storage shapes the loop must serve alike.
func storages() []struct {
	name string
	open func() delivery.OutboxStorage
} {
	return []struct {
		name string
		open func() delivery.OutboxStorage
	}{
		{"memory", func() delivery.OutboxStorage { return delivery.NewMemoryStorage(0) }},
		{"head-only", func() delivery.OutboxStorage {
			m := delivery.NewMemoryStorage(0)
			return headOnly{OutboxStorage: m, heads: m}
		}},
		{"base-only", func() delivery.OutboxStorage { return baseOnly{delivery.NewMemoryStorage(0)} }},
		{"finish-next", func() delivery.OutboxStorage {
			m := delivery.NewMemoryStorage(0)
			return finishNext{headOnly: headOnly{OutboxStorage: m, heads: m}, fn: m}
		}},
	}
}

// gate is a SendFunc that holds the sends of chosen channels until
// released.
type gate struct {
	r    recorder
	mu   sync.Mutex
	held map[string]chan struct{}
}

func (g *gate) hold(channel string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held == nil {
		g.held = map[string]chan struct{}{}
	}
	g.held[channel] = make(chan struct{})
}

func (g *gate) release(channel string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.held[channel])
	delete(g.held, channel)
}

func (g *gate) send(ctx context.Context, e delivery.Entry) error {
	g.mu.Lock()
	ch := g.held[e.Channel]
	g.mu.Unlock()
	if err := g.r.send(ctx, e); err != nil {
		return err
	}
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// TestOutboxRunLearnsOfWork: entries enqueued while their channel is in
// flight, while it is idle, and while every worker is busy are all
// delivered once, in channel order, whatever optional interfaces the
// storage has.
func TestOutboxRunLearnsOfWork(t *testing.T) {
	for _, st := range storages() {
		t.Run(st.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := &gate{}
				ob, err := delivery.NewOutbox(delivery.OutboxOptions{Storage: st.open(), Queue: "q", Send: g.send, Workers: 2})
				if err != nil {
					t.Fatal(err)
				}
				startOutbox(t, ob)
				synctest.Wait()
				g.hold("A")
				enqueue(t, ob, "A", "a0") // idle channel: handed to a worker
				synctest.Wait()
				enqueue(t, ob, "A", "a1") // A in flight
				enqueue(t, ob, "B", "b0") // idle, a worker is free
				synctest.Wait()
				g.hold("B")
				enqueue(t, ob, "B", "b1")
				enqueue(t, ob, "C", "c0") // both workers busy: waits
				synctest.Wait()
				if got := g.r.attempts(); !slices.Equal(got, []string{"A/a0", "B/b0", "B/b1"}) {
					t.Fatalf("attempts while A and B are held = %v", got)
				}
				g.release("A")
				synctest.Wait()
				g.release("B")
				synctest.Wait()
				got := g.r.attempts()
				want := map[string][]string{"A": {"A/a0", "A/a1"}, "B": {"B/b0", "B/b1"}, "C": {"C/c0"}}
				for ch, w := range want {
					var per []string
					for _, k := range got {
						if k[:1] == ch {
							per = append(per, k)
						}
					}
					if !slices.Equal(per, w) {
						t.Fatalf("channel %s attempts = %v, want %v (all: %v)", ch, per, w, got)
					}
				}
				if s := stats(t, ob); s.Pending != 0 || s.Deliveries != 5 || s.Attempts != 5 {
					t.Fatalf("stats = %+v", s)
				}
			})
		})
	}
}

// TestOutboxEnqueueBehindRetry: a new entry of a channel whose head waits
// for its backoff is neither sent before that head nor before the backoff
// ends.
func TestOutboxEnqueueBehindRetry(t *testing.T) {
	for _, st := range storages() {
		t.Run(st.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := &recorder{answer: func(e delivery.Entry, n int) error {
					if e.MessageID == "m0" && n == 1 {
						return protocol.Errorf(protocol.CodeChannelBusy, "busy")
					}
					return nil
				}}
				ob := newOutbox(t, st.open(), r, nil) // backoff 1 s, no jitter
				startOutbox(t, ob)
				enqueue(t, ob, "A", "m0")
				synctest.Wait()
				enqueue(t, ob, "A", "m1")
				synctest.Wait()
				if got := r.attempts(); !slices.Equal(got, []string{"A/m0"}) {
					t.Fatalf("attempts during the backoff = %v, want only the first try of m0", got)
				}
				time.Sleep(time.Second)
				synctest.Wait()
				if got := r.attempts(); !slices.Equal(got, []string{"A/m0", "A/m0", "A/m1"}) {
					t.Fatalf("attempts after the backoff = %v", got)
				}
			})
		})
	}
}

// TestOutboxEvictedWhileWaiting: an entry that waits for a worker and is
// evicted meanwhile (its channel overflowed) is never sent.
func TestOutboxEvictedWhileWaiting(t *testing.T) {
	for _, st := range storages() {
		t.Run(st.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := &gate{}
				ob, err := delivery.NewOutbox(delivery.OutboxOptions{Storage: st.open(), Queue: "q", Send: g.send,
					Workers: 1, Capacity: 2})
				if err != nil {
					t.Fatal(err)
				}
				startOutbox(t, ob)
				g.hold("B")
				enqueue(t, ob, "B", "b0") // takes the only worker
				synctest.Wait()
				for i := range 3 { // a0 waits, then a2 evicts it
					enqueue(t, ob, "A", fmt.Sprint("a", i))
				}
				g.release("B")
				synctest.Wait()
				if got := g.r.attempts(); !slices.Equal(got, []string{"B/b0", "A/a1", "A/a2"}) {
					t.Fatalf("attempts = %v, want the evicted a0 never sent", got)
				}
				if s := stats(t, ob); s.Evictions != 1 || s.Deliveries != 3 || s.Pending != 0 {
					t.Fatalf("stats = %+v", s)
				}
			})
		})
	}
}

// TestOutboxManyChannelsFewWorkers: with far more channels than workers
// every channel is served (channels the last read of due heads did not
// cover are read later), each in order.
func TestOutboxManyChannelsFewWorkers(t *testing.T) {
	for _, st := range storages() {
		t.Run(st.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := &recorder{}
				ob := newOutbox(t, st.open(), r, func(o *delivery.OutboxOptions) { o.Workers = 3 })
				const channels, per = 20, 5
				for i := range per { // before Run: found by reading the due heads
					for c := range channels {
						enqueue(t, ob, fmt.Sprint("c", c), fmt.Sprint("m", i))
					}
				}
				startOutbox(t, ob)
				for c := range channels { // while running: handed over by Enqueue
					enqueue(t, ob, fmt.Sprint("c", c), "z")
				}
				synctest.Wait()
				got := r.attempts()
				if len(got) != channels*(per+1) {
					t.Fatalf("%d attempts, want %d", len(got), channels*(per+1))
				}
				for c := range channels {
					var per []string
					for _, k := range got {
						if ch, _, _ := cut(k); ch == fmt.Sprint("c", c) {
							per = append(per, k)
						}
					}
					p := fmt.Sprint("c", c, "/")
					if !slices.Equal(per, []string{p + "m0", p + "m1", p + "m2", p + "m3", p + "m4", p + "z"}) {
						t.Fatalf("channel c%d: %v", c, per)
					}
				}
			})
		})
	}
}

// TestOutboxChannelsTakeTurns: while another channel waits for a worker, a
// channel with a backlog hands its worker back after a few entries instead
// of delivering its whole run first; without a waiting channel it goes on.
func TestOutboxChannelsTakeTurns(t *testing.T) {
	for _, st := range storages() {
		t.Run(st.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := &recorder{}
				ob := newOutbox(t, st.open(), r, func(o *delivery.OutboxOptions) { o.Workers = 1 })
				for i := range 12 { // before Run: A's head is the oldest due
					enqueue(t, ob, "A", fmt.Sprint("a", i))
				}
				enqueue(t, ob, "B", "b0")
				startOutbox(t, ob)
				synctest.Wait()
				got := r.attempts()
				// (A storage without head reads ends every turn after one
				// entry.)
				if i := slices.Index(got, "B/b0"); i < 0 || i > 4 {
					t.Fatalf("B/b0 sent at %d, want within A's first 4 entries: %v", i, got)
				}
				// Alone, a channel is not cut into turns: its 20 entries go
				// out in one run, from one worker goroutine.
				var mu sync.Mutex
				workers := map[string]bool{}
				r2 := &recorder{answer: func(delivery.Entry, int) error {
					mu.Lock()
					workers[goroutineID()] = true
					mu.Unlock()
					return nil
				}}
				ob2 := newOutbox(t, st.open(), r2, func(o *delivery.OutboxOptions) { o.Workers = 1 })
				for i := range 20 {
					enqueue(t, ob2, "C", fmt.Sprint("c", i))
				}
				startOutbox(t, ob2)
				synctest.Wait()
				if got := r2.attempts(); len(got) != 20 {
					t.Fatalf("attempts = %v, want C's 20", got)
				}
				// (A storage without head reads runs one entry a turn.)
				if _, base := st.open().(baseOnly); !base && len(workers) != 1 {
					t.Fatalf("C's entries went out in %d runs, want 1", len(workers))
				}
			})
		})
	}
}

// goroutineID is the id of the calling goroutine, from its stack header.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}

func cut(k string) (channel, id string, ok bool) {
	for i := range len(k) {
		if k[i] == '/' {
			return k[:i], k[i+1:], true
		}
	}
	return k, "", false
}

// TestOutboxHistoryPrunedBetweenSweeps: under a steady flow of outcomes
// the history stays near HistoryMax without waiting for the sweeper.
func TestOutboxHistoryPrunedBetweenSweeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{}
		ob := newOutbox(t, delivery.NewMemoryStorage(0), r, func(o *delivery.OutboxOptions) {
			o.HistoryMax = 8
			o.TTL = 24 * time.Hour // sweeps every 12 h: none during the test
		})
		startOutbox(t, ob)
		for i := range 60 {
			enqueue(t, ob, "A", fmt.Sprintf("m%02d", i))
			synctest.Wait()
			time.Sleep(time.Millisecond) // distinct outcome times
		}
		out, err := ob.Outcomes(context.Background(), "A", 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) > 8+8/4 || len(out) < 8 {
			t.Fatalf("%d outcomes kept, want about HistoryMax (8)", len(out))
		}
		if out[0].MessageID != "m59" {
			t.Fatalf("newest outcome = %s, want m59", out[0].MessageID)
		}
	})
}
