package delivery

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/xconn/xconn/protocol"
)

// finishTimeout bounds the bookkeeping after an attempt, which runs even
// while Run is stopping so that a received ack is not forgotten.
const finishTimeout = 10 * time.Second

// maxRun bounds the entries one worker delivers from its channel before it
// hands the channel back to Run. fairRun is the bound while other channels
// wait for a worker (more channels have work than Workers): then each
// channel delivers a few entries per turn, round robin, so that one whose
// user keeps sending does not hold a worker for 32 round trips while
// channels queued behind it wait (at 1,000 channels and 256 workers that
// put half the channels' p99 at 2.4 s, the other half at 0.1 s).
const (
	maxRun  = 32
	fairRun = 4
)

// Bounds of what Run keeps in memory besides storage: enqueue
// notifications waiting for Run (beyond maxKicks they are replaced by one
// read of the due heads), the payload size up to which a notification
// carries the new head itself, and the payload bytes of the heads held for
// channels waiting for a worker (beyond it a worker reads the head).
const (
	maxKicks      = 1024
	maxHintBytes  = 16 << 10
	maxReadyBytes = 8 << 20
)

// kick tells Run about a channel: new work (an Enqueue; head is the new
// entry when it is the channel's head), or, with drop, that entries of the
// channel were removed, so a head Run holds for it may be gone.
type kick struct {
	channel string
	head    Entry
	hasHead bool
	drop    bool
}

// kick hands k to Run. It never blocks. While Run is not running nothing
// is kept: Run reads the due heads when it starts.
func (o *Outbox) kick(k kick) {
	if !o.running.Load() {
		return
	}
	if k.hasHead && len(k.head.Payload) > maxHintBytes {
		k.head, k.hasHead = Entry{}, false
	}
	o.kmu.Lock()
	if len(o.kicks) < maxKicks {
		o.kicks = append(o.kicks, k)
	} else {
		o.kickOverflow = true
	}
	o.kmu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// workDone is a worker's report when it hands its channel back to Run.
type workDone struct {
	channel string
	// next is the channel's due head that the worker did not send because
	// its turn ended (maxRun entries, or fairRun while channels wait).
	next    Entry
	hasNext bool
	// again: the worker does not know the channel's state (its entry was
	// no longer pending); a worker reads its head again.
	again bool
	// retryAt, when set, is when the channel's head becomes due.
	retryAt time.Time
	// rescan: the worker could not read its channel's head (the storage
	// has no OutboxHeadStorage); Run reads the due heads once it has
	// taken this report, when the channel is no longer in flight.
	rescan bool
}

// chanState is Run's record of a channel that is in flight or waits for a
// worker.
type chanState struct {
	inflight bool
	queued   bool
	again    bool // new work arrived while in flight
	head     Entry
	hasHead  bool
}

// runLoop is the state of one Run: owned by Run's goroutine.
type runLoop struct {
	o        *Outbox
	ctx      context.Context
	wg       *sync.WaitGroup
	done     chan workDone // capacity Workers: a worker never blocks on it
	chans    map[string]*chanState
	ready    []string // queued channels, oldest first
	readyB   int      // payload bytes of the heads held by queued channels
	inflight int
	scan     bool      // read the due heads from storage
	more     bool      // the last read was cut at its limit: read again once ready is empty
	scanAt   time.Time // read the due heads at this time (zero: none planned)
	kbuf     []kick
	prunedAt int64 // o.recorded at the last prune of the history
}

// Run delivers due entries until ctx ends, then waits for the attempts in
// flight and returns ctx's error. It sweeps expired entries first (expiry at
// startup), then every SweepInterval. Only one Run may be active per Outbox.
//
// Run keeps per channel at most one entry in flight and at most Workers
// channels at once. It learns about work from Enqueue (the new entry, when
// it is its channel's head, is handed over without a storage read), from
// the workers (the next head of a channel, read in the transaction that
// records the outcome when the storage implements
// [OutboxFinishNextStorage]) and, at start, on [Outbox.Wake] and when a
// retry falls due, by reading the due heads from storage.
func (o *Outbox) Run(ctx context.Context) error {
	if !o.running.CompareAndSwap(false, true) {
		return errors.New("delivery: Outbox.Run is already running")
	}
	defer o.running.Store(false)

	var wg sync.WaitGroup
	defer wg.Wait()

	o.sweep(ctx)
	lastSweep := time.Now()
	l := &runLoop{o: o, ctx: ctx, wg: &wg, done: make(chan workDone, o.opts.Workers),
		chans: make(map[string]*chanState), scan: true}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()

	for {
		if time.Since(lastSweep) >= o.opts.SweepInterval {
			o.sweep(ctx)
			lastSweep = time.Now()
		}
		if n := o.recorded.Load(); n-l.prunedAt >= int64(max(o.opts.HistoryMax/4, 1)) {
			// Between sweeps, keep the history near HistoryMax under a
			// steady flow of outcomes.
			l.prunedAt = n
			o.pruneOutcomes(ctx, o.clock.Now())
		}
		if o.scanReq.Swap(false) {
			l.scan = true
		}
		l.takeKicks()
		l.dispatch()
		if (l.scan || l.more && len(l.ready) == 0) && l.free() > 0 {
			l.readDue()
			l.dispatch()
		}
		wait := o.opts.SweepInterval - time.Since(lastSweep)
		if !l.scanAt.IsZero() {
			wait = min(wait, l.scanAt.Sub(o.clock.Now()))
		}
		timer.Reset(max(wait, 0)) // no stale tick survives a Reset (Go 1.23 timers)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case d := <-l.done:
			l.finished(d)
		case <-o.wake:
		case <-timer.C:
		}
		// Take every completion that is already there, so that one pass
		// serves them all (completions of a group commit arrive together).
		l.drainDone()
		if !l.scanAt.IsZero() && !o.clock.Now().Before(l.scanAt) {
			l.scan, l.scanAt = true, time.Time{}
		}
	}
}

func (l *runLoop) free() int { return l.o.opts.Workers - l.inflight }

// planScan makes Run read the due heads at t at the latest.
func (l *runLoop) planScan(t time.Time) {
	if l.scanAt.IsZero() || t.Before(l.scanAt) {
		l.scanAt = t
	}
}

// takeKicks applies the notifications of Enqueue and DeleteChannel.
func (l *runLoop) takeKicks() {
	o := l.o
	o.kmu.Lock()
	ks := o.kicks
	o.kicks = l.kbuf[:0]
	if o.kickOverflow {
		o.kickOverflow = false
		l.scan = true
	}
	o.kmu.Unlock()
	for i, k := range ks {
		if k.drop {
			if st := l.chans[k.channel]; st != nil && st.hasHead {
				l.readyB -= len(st.head.Payload)
				st.head, st.hasHead = Entry{}, false
			}
		} else {
			if k.hasHead && o.finished.has(finishedKey{k.channel, k.head.MessageID}) {
				// Delivered before this hint was taken (see finishedSet).
				k.head, k.hasHead = Entry{}, false
			}
			l.queue(k.channel, k.head, k.hasHead)
		}
		ks[i] = kick{}
	}
	l.kbuf = ks[:0]
}

// queue puts a channel that has work on the ready list, unless it is
// there already; a channel in flight is queued again when its worker is
// done. head, when hasHead, is the channel's head.
func (l *runLoop) queue(channel string, head Entry, hasHead bool) {
	st := l.chans[channel]
	if st == nil {
		st = &chanState{}
		l.chans[channel] = st
	}
	switch {
	case st.inflight:
		st.again = true
		return
	case st.queued:
		return
	}
	st.queued = true
	if hasHead && l.readyB+len(head.Payload) <= maxReadyBytes {
		st.head, st.hasHead = head, true
		l.readyB += len(head.Payload)
	}
	l.ready = append(l.ready, channel)
}

// dispatch starts a worker for each queued channel while workers are free.
func (l *runLoop) dispatch() {
	n := 0
	for n < len(l.ready) && l.free() > 0 && l.ctx.Err() == nil {
		channel := l.ready[n]
		n++
		st := l.chans[channel]
		h, has := st.head, st.hasHead
		if has {
			l.readyB -= len(h.Payload)
		}
		st.queued, st.inflight, st.again, st.head, st.hasHead = false, true, false, Entry{}, false
		l.inflight++
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.done <- l.o.deliverChannel(l.ctx, channel, h, has) // never blocks: capacity Workers
		}()
	}
	if n > 0 {
		rest := copy(l.ready, l.ready[n:])
		clear(l.ready[rest:])
		l.ready = l.ready[:rest]
	}
	// Channels wait for a worker: queued here, or due in storage beyond
	// the last read of the due heads.
	l.o.contended.Store(len(l.ready) > 0 || l.more)
}

// finished takes a worker's report.
func (l *runLoop) finished(d workDone) {
	l.inflight--
	st := l.chans[d.channel]
	again := st.again
	delete(l.chans, d.channel)
	if !d.retryAt.IsZero() {
		l.planScan(d.retryAt)
	}
	if d.rescan {
		l.scan = true
	}
	switch {
	case d.hasNext && l.more:
		// Channels beyond the last read of due heads wait: read again
		// (it finds this channel too, in its place) before going on.
		l.scan = true
	case d.hasNext:
		l.queue(d.channel, d.next, true)
	case d.again || again:
		l.queue(d.channel, Entry{}, false)
	}
}

// drainDone takes the reports that are already there, without waiting.
func (l *runLoop) drainDone() {
	for {
		select {
		case d := <-l.done:
			l.finished(d)
		default:
			return
		}
	}
}

// readDue reads the due channel heads from storage and queues the
// channels Run does not hold yet; then it plans the next read for the
// earliest head that is not due.
func (l *runLoop) readDue() {
	o := l.o
	l.scan, l.more = false, false
	now := o.clock.Now()
	// Held channels may be among the heads; up to Workers more wait in
	// ready, so that with more due channels than workers one read serves
	// many completions.
	limit := len(l.chans) + l.free() + o.opts.Workers
	heads, err := o.opts.Storage.OutboxDue(l.ctx, o.opts.Queue, now, limit)
	if err != nil {
		if l.ctx.Err() == nil {
			o.setLastError("read due entries: " + err.Error())
			l.planScan(now.Add(o.opts.Backoff.Base))
		}
		return
	}
	for _, h := range heads {
		if _, held := l.chans[h.Channel]; !held {
			l.queue(h.Channel, h, true)
		}
	}
	if len(heads) >= limit {
		l.more = true
		return
	}
	next, ok, err := o.opts.Storage.OutboxNextAttempt(l.ctx, o.opts.Queue, now)
	if err == nil && ok {
		l.planScan(next)
	}
}

// deliverChannel sends the head of its channel (h when have, else read
// from storage) and goes on with the channel's next due entries (at most
// maxRun in all) while each one reaches a terminal outcome. Run keeps the
// channel marked in flight meanwhile, so one channel never has two sends
// at once and its order holds. With [OutboxAfterStorage] the outcome of a
// delivered entry is recorded in the background while the next entry,
// read on its own, is sent: the receiver's ack is all a message waits for
// (a crash before the outcome is stored only sends the entry again, and
// the receiver answers duplicate). Otherwise, with
// [OutboxFinishNextStorage], the next entry comes with the outcome's
// transaction. The worker returns only after every outcome it started is
// stored.
func (o *Outbox) deliverChannel(ctx context.Context, channel string, h Entry, have bool) workDone {
	bg := &bgFinish{sem: make(chan struct{}, maxBackground)}
	d := o.deliverLoop(ctx, channel, h, have, bg)
	bg.wg.Wait()
	if bg.gone {
		d.again = true
	}
	if !bg.retryAt.IsZero() && (d.retryAt.IsZero() || bg.retryAt.Before(d.retryAt)) {
		d.retryAt = bg.retryAt
	}
	return d
}

// maxBackground bounds the outcomes one worker records in the background
// at once.
const maxBackground = 8

// bgFinish tracks the outcomes a worker records in the background.
type bgFinish struct {
	sem chan struct{}
	wg  sync.WaitGroup

	mu      sync.Mutex
	gone    bool      // an entry was no longer pending
	retryAt time.Time // an outcome was not stored: the entry is due again then
}

// finish records oc of h in a goroutine of its own.
func (b *bgFinish) finish(ctx context.Context, o *Outbox, h Entry, oc Outcome, now time.Time) {
	b.sem <- struct{}{}
	b.wg.Go(func() {
		defer func() { <-b.sem }()
		r := o.finishWait(ctx, h, oc, now, false)
		b.mu.Lock()
		defer b.mu.Unlock()
		switch {
		case !r.retryAt.IsZero():
			if b.retryAt.IsZero() || r.retryAt.Before(b.retryAt) {
				b.retryAt = r.retryAt
			}
		case r.gone:
			b.gone = true
		}
	})
}

func (o *Outbox) deliverLoop(ctx context.Context, channel string, h Entry, have bool, bg *bgFinish) workDone {
	d := workDone{channel: channel}
	_, hasHead := o.opts.Storage.(OutboxHeadStorage)
	d.rescan = !hasHead
	if !have {
		var err error
		if h, have, err = o.head(ctx, channel); err != nil || !have {
			if err != nil && ctx.Err() == nil {
				o.setLastError("read head: " + err.Error())
				d.retryAt = o.clock.Now().Add(o.opts.Backoff.Base)
			}
			return d
		}
	}
	after, pipelined := o.opts.Storage.(OutboxAfterStorage)
	for i := 1; ; i++ {
		now := o.clock.Now()
		if h.NextAttempt.After(now) {
			d.retryAt = h.NextAttempt
			return d
		}
		var r attemptResult
		if !now.Before(h.ExpiresAt) { // expiry checked before every send
			r = o.finishWait(ctx, h, Outcome{Kind: OutcomeExpired, Message: "expired before delivery"}, now, true)
		} else if oc, retryAt := o.send(ctx, h); !retryAt.IsZero() {
			r = attemptResult{retryAt: retryAt}
		} else if pipelined && oc.Kind == OutcomeDelivered {
			bg.finish(ctx, o, h, oc, o.clock.Now())
			next, ok, err := after.OutboxAfter(ctx, h.Queue, channel, h.Seq)
			if err != nil {
				if ctx.Err() == nil {
					o.setLastError("read next entry: " + err.Error())
					d.retryAt = o.clock.Now().Add(o.opts.Backoff.Base)
				}
				return d
			}
			r = attemptResult{known: true, next: next, hasNext: ok}
		} else {
			r = o.finishWait(ctx, h, oc, o.clock.Now(), true)
		}
		switch {
		case !r.retryAt.IsZero():
			d.retryAt = r.retryAt
			return d
		case r.gone:
			d.again = true
			return d
		case !r.known:
			next, ok, err := o.head(ctx, channel)
			if err != nil {
				if ctx.Err() == nil {
					o.setLastError("read head: " + err.Error())
					d.retryAt = o.clock.Now().Add(o.opts.Backoff.Base)
				}
				return d
			}
			r.next, r.hasNext = next, ok
		}
		if !r.hasNext {
			return d
		}
		if i >= maxRun || i >= fairRun && o.contended.Load() || ctx.Err() != nil {
			d.next, d.hasNext = r.next, true
			return d
		}
		h = r.next
	}
}

// head reads a channel's head. Without [OutboxHeadStorage] it asks Run
// to read every due head and reports none (and the worker's report asks
// again, see workDone.rescan: the channel is still in flight while the
// worker runs, so a read of the due heads done meanwhile skips it).
func (o *Outbox) head(ctx context.Context, channel string) (Entry, bool, error) {
	hs, ok := o.opts.Storage.(OutboxHeadStorage)
	if !ok {
		o.Wake()
		return Entry{}, false, nil
	}
	return hs.OutboxHead(ctx, o.opts.Queue, channel)
}

// attemptResult is what recording an attempt left behind.
type attemptResult struct {
	// retryAt is set when the entry stays pending: a temporary failure or
	// an error of storage; the channel's head is due again then.
	retryAt time.Time
	// gone: the entry was no longer pending when its outcome was recorded.
	gone bool
	// known: next and hasNext hold the channel's next head (read with the
	// outcome).
	known   bool
	next    Entry
	hasNext bool
}

// send transmits one channel head. It returns the terminal outcome to
// record (kind, code, message), or, after a temporary failure that it
// recorded as a retry, when the entry is due again.
func (o *Outbox) send(ctx context.Context, h Entry) (Outcome, time.Time) {
	o.attempts.Add(1)
	sctx, scancel := context.WithTimeout(ctx, o.opts.AttemptTimeout)
	err := o.opts.Send(sctx, h)
	scancel()
	switch {
	case err == nil:
		return Outcome{Kind: OutcomeDelivered}, time.Time{}
	case !IsTemporary(err):
		pe := protocol.AsError(err)
		return Outcome{Kind: OutcomeFailed, Code: pe.Code, Message: pe.Message}, time.Time{}
	}
	msg := err.Error()
	if pe := protocol.AsError(err); pe != nil {
		msg = pe.Error()
	}
	o.setLastError(msg)
	attempts := h.Attempts + 1
	next := o.clock.Now().Add(o.opts.Backoff.jittered(attempts))
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if _, err := o.opts.Storage.OutboxRetry(bctx, h.Queue, h.Channel, h.MessageID, attempts, next, msg); err != nil {
		o.setLastError("record retry: " + err.Error())
	}
	return Outcome{}, next
}

// finishWait records a terminal outcome (see finish) with its own
// deadline, which Run's end does not cut short: a received ack is not
// forgotten.
func (o *Outbox) finishWait(ctx context.Context, h Entry, oc Outcome, now time.Time, next bool) attemptResult {
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	return o.finish(bctx, h, oc, now, next)
}

// finish records a terminal outcome and, when next is set and the storage
// can, reads the channel's next head in the same transaction.
func (o *Outbox) finish(ctx context.Context, h Entry, oc Outcome, now time.Time, next bool) attemptResult {
	oc.Queue, oc.Channel, oc.MessageID = h.Queue, h.Channel, h.MessageID
	oc.Attempts, oc.CreatedAt, oc.ExpiresAt, oc.At = h.Attempts, h.CreatedAt, h.ExpiresAt, now
	if oc.Kind == OutcomeDelivered || oc.Kind == OutcomeFailed {
		oc.Attempts++
	}
	var r attemptResult
	var ok bool
	var err error
	if fs, isFS := o.opts.Storage.(OutboxFinishNextStorage); isFS && next {
		ok, r.next, r.hasNext, err = fs.OutboxFinishNext(ctx, oc)
		r.known = true
	} else {
		ok, err = o.opts.Storage.OutboxFinish(ctx, oc)
	}
	if err == nil {
		// The entry is no longer pending, whoever finished it.
		o.finished.add(finishedKey{h.Channel, h.MessageID})
	}
	switch {
	case err != nil:
		o.setLastError("record outcome: " + err.Error())
		// The entry stays pending; it is sent again after a pause.
		return attemptResult{retryAt: o.clock.Now().Add(o.opts.Backoff.Base)}
	case !ok:
		if oc.Kind == OutcomeDelivered {
			o.amendExpired(ctx, oc)
		}
		return attemptResult{gone: true}
	}
	o.observe(oc)
	return r
}

// amendExpired records a delivery whose entry was expired while its
// attempt was in flight (see [OutboxAmendStorage]).
func (o *Outbox) amendExpired(ctx context.Context, oc Outcome) {
	am, ok := o.opts.Storage.(OutboxAmendStorage)
	if !ok {
		return
	}
	done, err := am.OutboxAmendExpired(ctx, oc)
	switch {
	case err != nil:
		o.setLastError("amend outcome: " + err.Error())
	case done:
		o.observe(oc)
	}
}

// sweep expires entries in bounded batches and prunes the history.
func (o *Outbox) sweep(ctx context.Context) {
	now := o.clock.Now()
	for range 1000 { // at most 500,000 entries per sweep; the next sweep goes on
		out, err := o.opts.Storage.OutboxExpire(ctx, o.opts.Queue, now, batch)
		if err != nil {
			if ctx.Err() == nil {
				o.setLastError("expire: " + err.Error())
			}
			return
		}
		for _, oc := range out {
			o.observe(oc)
		}
		if len(out) < batch {
			break
		}
	}
	o.pruneOutcomes(ctx, now)
}

// pruneOutcomes bounds the outcome history by HistoryAge and HistoryMax.
func (o *Outbox) pruneOutcomes(ctx context.Context, now time.Time) {
	if _, err := o.opts.Storage.OutboxPruneOutcomes(ctx, o.opts.Queue, now.Add(-o.opts.HistoryAge), o.opts.HistoryMax); err != nil && ctx.Err() == nil {
		o.setLastError("prune outcomes: " + err.Error())
	}
}
