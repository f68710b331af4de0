package delivery

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of [OutboxOptions].
const (
	DefaultTTL            = time.Hour
	DefaultCapacity       = 1000
	DefaultBackoffBase    = time.Second
	DefaultBackoffMax     = 5 * time.Minute
	DefaultBackoffJitter  = 0.2
	DefaultWorkers        = 256
	DefaultAttemptTimeout = 30 * time.Second
	DefaultHistoryMax     = 10000
	DefaultHistoryAge     = 24 * time.Hour
	DefaultMaxPayload     = 1 << 20
	DefaultMaxPending     = 100_000
)

// ErrOutboxFull is returned (wrapped) by [Outbox.Enqueue] when the queue
// holds MaxPending entries: backpressure (IM v1 §8 step 2), the caller keeps
// its source cursor and retries later.
var ErrOutboxFull = errors.New("delivery: outbox full")

// batch is the number of rows one sweeper step reads; bounded work per step.
const batch = 500

// SendFunc transmits one entry and returns when the receiver's ack arrived
// or the attempt failed. It returns nil for accepted and duplicate (see
// [AckResult]), a *protocol.Error with Retryable false for a terminal
// rejection, and any other error (timeout, disconnect, closed channel,
// retryable rejection) for a temporary failure. ctx carries the attempt
// timeout. The error text is recorded and must be secret-free. It is called
// from several goroutines at once, never twice at once for one channel.
type SendFunc func(ctx context.Context, e Entry) error

// Backoff is the capped exponential backoff between attempts of one entry.
type Backoff struct {
	// Base is the delay after the first failure (default 1 s).
	Base time.Duration
	// Max caps the delay (default 5 min).
	Max time.Duration
	// Jitter is the random fraction added or removed, in [0, 1]
	// (default 0.2; a negative value means none).
	Jitter float64
}

// Delay returns the delay after the attempt-th failed attempt (1-based),
// before jitter.
func (b Backoff) Delay(attempt int) time.Duration {
	d := b.Base
	for i := 1; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

func (b Backoff) withDefaults() Backoff {
	if b.Base <= 0 {
		b.Base = DefaultBackoffBase
	}
	if b.Max <= 0 {
		b.Max = DefaultBackoffMax
	}
	if b.Max < b.Base {
		b.Max = b.Base
	}
	switch {
	case b.Jitter == 0:
		b.Jitter = DefaultBackoffJitter
	case b.Jitter < 0:
		b.Jitter = 0
	case b.Jitter > 1:
		b.Jitter = 1
	}
	return b
}

func (b Backoff) jittered(attempt int) time.Duration {
	d := b.Delay(attempt)
	if b.Jitter > 0 {
		d += time.Duration((rand.Float64()*2 - 1) * b.Jitter * float64(d))
	}
	return max(d, time.Millisecond)
}

// OutboxOptions configures an [Outbox]. Storage and Send are required.
type OutboxOptions struct {
	Storage OutboxStorage
	// Queue names this outbox inside Storage (default "outbox").
	Queue string
	Send  SendFunc
	// TTL is the lifetime of an entry from its first enqueue (default 1 h).
	TTL time.Duration
	// Capacity is the pending entries kept per channel (default 1,000);
	// beyond it the oldest are evicted and recorded as capacity_exceeded.
	Capacity int
	Backoff  Backoff
	// Workers bounds the channels sending at once, one entry in flight
	// each (default 256). A worker waits for the receiver's ack, so this is
	// the bound of messages in flight of the whole queue.
	Workers int
	// AttemptTimeout bounds one Send call (default 30 s).
	AttemptTimeout time.Duration
	// SweepInterval is the expiry sweeper period (default and maximum TTL/2).
	SweepInterval time.Duration
	// HistoryMax and HistoryAge bound the outcome history of the queue
	// (defaults 10,000 outcomes and 24 h). Run prunes it at every sweep
	// and after every HistoryMax/4 outcomes.
	HistoryMax int
	HistoryAge time.Duration
	// MaxPayload bounds one entry's payload in bytes (default 1 MiB).
	MaxPayload int
	// MaxPending bounds the pending entries of the whole queue, all
	// channels together (default 100,000); beyond it Enqueue fails with
	// ErrOutboxFull. Concurrent enqueues may overshoot it by their number.
	MaxPending int
	// Clock supplies the time (default the system clock).
	Clock Clock
	// OnOutcome, when set, observes every terminal outcome. It runs on the
	// Outbox's goroutines and must return quickly.
	OnOutcome func(Outcome)
}

// Outbox is the sender's durable pending set with its delivery loop. Create
// it with [NewOutbox], run it with [Outbox.Run]; Enqueue may be called before
// and while Run runs. It is safe for concurrent use.
type Outbox struct {
	opts  OutboxOptions
	clock Clock
	wake  chan struct{}

	running atomic.Bool
	// scanReq asks Run to read the due heads from storage (Wake).
	scanReq atomic.Bool
	// contended is set by Run while channels wait for a worker; workers
	// then hand their channel back after fairRun entries.
	contended atomic.Bool

	// kicks are the notifications of Enqueue and DeleteChannel waiting for
	// Run (bounded by maxKicks; kickOverflow replaces the rest).
	kmu          sync.Mutex
	kicks        []kick
	kickOverflow bool

	attempts, deliveries, expirations, evictions, failures atomic.Int64
	// recorded counts the terminal outcomes recorded (Run prunes the
	// history by it).
	recorded atomic.Int64
	// finished remembers the entries finished lately, so that Run does not
	// trust an Enqueue's head hint taken after its entry was delivered.
	finished finishedSet

	mu          sync.Mutex
	lastErr     string
	lastErrTime time.Time
	// pending approximates the queue's pending count for the MaxPending
	// check: read from storage at most once a second or when it reaches the
	// bound, and raised by this Outbox's enqueues in between.
	pending     int
	pendingRead time.Time
}

// NewOutbox checks opts, fills in the defaults and returns an Outbox.
func NewOutbox(opts OutboxOptions) (*Outbox, error) {
	if opts.Storage == nil {
		return nil, errors.New("delivery: OutboxOptions.Storage is required")
	}
	if opts.Send == nil {
		return nil, errors.New("delivery: OutboxOptions.Send is required")
	}
	if opts.Queue == "" {
		opts.Queue = "outbox"
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.Capacity <= 0 {
		opts.Capacity = DefaultCapacity
	}
	opts.Backoff = opts.Backoff.withDefaults()
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.AttemptTimeout <= 0 {
		opts.AttemptTimeout = DefaultAttemptTimeout
	}
	if opts.SweepInterval <= 0 || opts.SweepInterval > opts.TTL/2 {
		opts.SweepInterval = opts.TTL / 2
	}
	if opts.HistoryMax <= 0 {
		opts.HistoryMax = DefaultHistoryMax
	}
	if opts.HistoryAge <= 0 {
		opts.HistoryAge = DefaultHistoryAge
	}
	if opts.MaxPayload <= 0 {
		opts.MaxPayload = DefaultMaxPayload
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = DefaultMaxPending
	}
	return &Outbox{opts: opts, clock: clockOrSystem(opts.Clock), wake: make(chan struct{}, 1)}, nil
}

// Queue returns the queue name of the Outbox.
func (o *Outbox) Queue() string { return o.opts.Queue }

// Enqueue makes the Outbox responsible for one message. It is idempotent per
// (channel, messageID): an entry already pending is left untouched (its
// expiry included) and a message with a recorded outcome is not enqueued
// again. The entry expires TTL after this first enqueue. A full channel
// evicts its oldest entries (see [OutboxStorage.OutboxEnqueue]); a full
// queue fails with ErrOutboxFull.
func (o *Outbox) Enqueue(ctx context.Context, channel, messageID string, payload []byte) (EnqueueResult, error) {
	if channel == "" || messageID == "" {
		return EnqueueResult{}, errors.New("delivery: enqueue needs a channel and a message_id")
	}
	if len(payload) > o.opts.MaxPayload {
		return EnqueueResult{}, fmt.Errorf("delivery: payload of %d bytes exceeds the limit of %d", len(payload), o.opts.MaxPayload)
	}
	if err := o.checkPending(ctx); err != nil {
		return EnqueueResult{}, fmt.Errorf("delivery: enqueue %s/%s: %w", channel, messageID, err)
	}
	now := o.clock.Now()
	e := Entry{
		Queue: o.opts.Queue, Channel: channel, MessageID: messageID, Payload: payload,
		CreatedAt: now, ExpiresAt: now.Add(o.opts.TTL), NextAttempt: now,
	}
	res, err := o.opts.Storage.OutboxEnqueue(ctx, e, o.opts.Capacity, now)
	if err != nil {
		return EnqueueResult{}, fmt.Errorf("delivery: enqueue %s/%s: %w", channel, messageID, err)
	}
	for _, d := range res.Dropped {
		o.observe(d)
	}
	if len(res.Dropped) > 0 {
		o.kick(kick{channel: channel, drop: true})
	}
	if res.Status == Enqueued {
		o.mu.Lock()
		o.pending += 1 - len(res.Dropped)
		o.mu.Unlock()
		o.kick(kick{channel: channel, head: res.Entry, hasHead: res.Head})
	}
	return res, nil
}

// checkPending fails with ErrOutboxFull when the queue is at MaxPending.
func (o *Outbox) checkPending(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	if o.pending >= o.opts.MaxPending || now.Sub(o.pendingRead) >= time.Second {
		n, err := o.opts.Storage.OutboxPending(ctx, o.opts.Queue)
		if err != nil {
			return err
		}
		o.pending, o.pendingRead = n, now
	}
	if o.pending >= o.opts.MaxPending {
		return fmt.Errorf("%d pending: %w", o.pending, ErrOutboxFull)
	}
	return nil
}

// Wake makes the delivery loop read the due entries of every channel from
// storage now. It never blocks. Enqueue does not need it.
func (o *Outbox) Wake() {
	o.scanReq.Store(true)
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Resume makes the head of channel due now, for example when the channel
// (re)opens, and wakes the loop.
func (o *Outbox) Resume(ctx context.Context, channel string) error {
	if err := o.opts.Storage.OutboxReschedule(ctx, o.opts.Queue, channel, o.clock.Now()); err != nil {
		return fmt.Errorf("delivery: resume %s: %w", channel, err)
	}
	o.Wake()
	return nil
}

// Outcome returns the recorded terminal outcome of a message; ok is false
// while it is pending or unknown (or pruned from the history).
func (o *Outbox) Outcome(ctx context.Context, channel, messageID string) (Outcome, bool, error) {
	return o.opts.Storage.OutboxOutcome(ctx, o.opts.Queue, channel, messageID)
}

// Outcomes returns up to limit recorded outcomes of channel, newest first.
func (o *Outbox) Outcomes(ctx context.Context, channel string, limit int) ([]Outcome, error) {
	return o.opts.Storage.OutboxOutcomes(ctx, o.opts.Queue, channel, limit)
}

// DeleteChannel drops the pending entries and outcomes of a permanently
// deleted channel and returns how many entries were pending.
func (o *Outbox) DeleteChannel(ctx context.Context, channel string) (int, error) {
	n, err := o.opts.Storage.OutboxDeleteChannel(ctx, o.opts.Queue, channel)
	o.kick(kick{channel: channel, drop: true})
	return n, err
}

// Stats returns the counters, with Pending read from storage.
func (o *Outbox) Stats(ctx context.Context) (Stats, error) {
	n, err := o.opts.Storage.OutboxPending(ctx, o.opts.Queue)
	if err != nil {
		return Stats{}, fmt.Errorf("delivery: stats: %w", err)
	}
	o.mu.Lock()
	lastErr, lastAt := o.lastErr, o.lastErrTime
	o.mu.Unlock()
	return Stats{
		Queue: o.opts.Queue, TTL: o.opts.TTL, Capacity: o.opts.Capacity, Pending: n,
		Attempts: o.attempts.Load(), Deliveries: o.deliveries.Load(),
		Expirations: o.expirations.Load(), Evictions: o.evictions.Load(), Failures: o.failures.Load(),
		LastError: lastErr, LastErrorAt: lastAt,
	}, nil
}

func (o *Outbox) setLastError(msg string) {
	o.mu.Lock()
	o.lastErr, o.lastErrTime = msg, o.clock.Now()
	o.mu.Unlock()
}

// observe counts a terminal outcome and reports it.
func (o *Outbox) observe(oc Outcome) {
	o.recorded.Add(1)
	switch oc.Kind {
	case OutcomeDelivered:
		o.deliveries.Add(1)
	case OutcomeFailed:
		o.failures.Add(1)
		o.setLastError(string(oc.Code) + ": " + oc.Message)
	case OutcomeExpired:
		o.expirations.Add(1)
	case OutcomeEvicted:
		o.evictions.Add(1)
	}
	if o.opts.OnOutcome != nil {
		o.opts.OnOutcome(oc)
	}
}
