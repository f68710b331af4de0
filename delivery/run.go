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

// Run delivers due entries until ctx ends, then waits for the attempts in
// flight and returns ctx's error. It sweeps expired entries first (expiry at
// startup), then every SweepInterval. Only one Run may be active per Outbox.
func (o *Outbox) Run(ctx context.Context) error {
	if !o.running.CompareAndSwap(false, true) {
		return errors.New("delivery: Outbox.Run is already running")
	}
	defer o.running.Store(false)

	var wg sync.WaitGroup
	defer wg.Wait()

	o.sweep(ctx)
	lastSweep := time.Now()
	inflight := make(map[string]bool, o.opts.Workers) // bounded by Workers
	done := make(chan string, o.opts.Workers)

	for {
		if time.Since(lastSweep) >= o.opts.SweepInterval {
			o.sweep(ctx)
			lastSweep = time.Now()
		}
		wait := o.opts.SweepInterval - time.Since(lastSweep)
		if free := o.opts.Workers - len(inflight); free > 0 {
			now := o.clock.Now()
			heads, err := o.opts.Storage.OutboxDue(ctx, o.opts.Queue, now, len(inflight)+free)
			switch {
			case err != nil && ctx.Err() == nil:
				o.setLastError("read due entries: " + err.Error())
				wait = min(wait, o.opts.Backoff.Base)
			case err == nil:
				for _, h := range heads {
					if free == 0 {
						break
					}
					if inflight[h.Channel] {
						continue
					}
					inflight[h.Channel] = true
					free--
					wg.Add(1)
					go func() {
						defer wg.Done()
						o.deliverChannel(ctx, h)
						done <- h.Channel // never blocks: capacity Workers
					}()
				}
				if free > 0 { // every due head is in flight: sleep until the next one
					next, ok, err := o.opts.Storage.OutboxNextAttempt(ctx, o.opts.Queue, now)
					if err == nil && ok {
						wait = min(wait, max(next.Sub(now), 0))
					}
				}
			}
		}
		timer := time.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case ch := <-done:
			delete(inflight, ch)
		case <-o.wake:
		case <-timer.C:
		}
		timer.Stop()
		// Take every completion and wake-up that is already there, so that
		// one read of the due heads serves them all (completions of a group
		// commit arrive together).
		drainDone(done, inflight)
		select {
		case <-o.wake:
		default:
		}
	}
}

// drainDone removes from inflight the channels that done already reports,
// without waiting.
func drainDone(done <-chan string, inflight map[string]bool) {
	for {
		select {
		case ch := <-done:
			delete(inflight, ch)
		default:
			return
		}
	}
}

// maxRun bounds the entries one worker delivers from its channel before it
// hands the channel back to Run, so that channels beyond Workers get their
// turn.
const maxRun = 32

// deliverChannel sends the head h of its channel and, when the storage can
// read a channel's head, goes on with the channel's next due entries (at
// most maxRun in all) while each one reaches a terminal outcome. Run keeps
// the channel marked in flight meanwhile, so one channel never has two
// sends at once and its order holds.
func (o *Outbox) deliverChannel(ctx context.Context, h Entry) {
	hs, _ := o.opts.Storage.(OutboxHeadStorage)
	for range maxRun {
		if !o.attempt(ctx, h) || hs == nil || ctx.Err() != nil {
			return
		}
		next, ok, err := hs.OutboxHead(ctx, h.Queue, h.Channel)
		if err != nil || !ok || next.NextAttempt.After(o.clock.Now()) {
			return
		}
		h = next
	}
}

// attempt sends one channel head and records the result. It reports
// whether the entry reached a terminal outcome that storage recorded.
func (o *Outbox) attempt(ctx context.Context, h Entry) bool {
	now := o.clock.Now()
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if !now.Before(h.ExpiresAt) { // expiry checked before every send
		return o.finish(bctx, h, Outcome{Kind: OutcomeExpired, Message: "expired before delivery"}, now)
	}
	o.attempts.Add(1)
	sctx, scancel := context.WithTimeout(ctx, o.opts.AttemptTimeout)
	err := o.opts.Send(sctx, h)
	scancel()
	now = o.clock.Now()
	switch {
	case err == nil:
		return o.finish(bctx, h, Outcome{Kind: OutcomeDelivered}, now)
	case !IsTemporary(err):
		pe := protocol.AsError(err)
		return o.finish(bctx, h, Outcome{Kind: OutcomeFailed, Code: pe.Code, Message: pe.Message}, now)
	default:
		msg := err.Error()
		if pe := protocol.AsError(err); pe != nil {
			msg = pe.Error()
		}
		o.setLastError(msg)
		attempts := h.Attempts + 1
		next := now.Add(o.opts.Backoff.jittered(attempts))
		if _, err := o.opts.Storage.OutboxRetry(bctx, h.Queue, h.Channel, h.MessageID, attempts, next, msg); err != nil {
			o.setLastError("record retry: " + err.Error())
		}
		return false
	}
}

// finish records a terminal outcome; it reports whether storage recorded
// it (false on an error or when the entry was no longer pending).
func (o *Outbox) finish(ctx context.Context, h Entry, oc Outcome, now time.Time) bool {
	oc.Queue, oc.Channel, oc.MessageID = h.Queue, h.Channel, h.MessageID
	oc.Attempts, oc.CreatedAt, oc.ExpiresAt, oc.At = h.Attempts, h.CreatedAt, h.ExpiresAt, now
	if oc.Kind == OutcomeDelivered || oc.Kind == OutcomeFailed {
		oc.Attempts++
	}
	ok, err := o.opts.Storage.OutboxFinish(ctx, oc)
	if err != nil {
		o.setLastError("record outcome: " + err.Error())
		return false
	}
	if ok {
		o.observe(oc)
	}
	return ok
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
	if _, err := o.opts.Storage.OutboxPruneOutcomes(ctx, o.opts.Queue, now.Add(-o.opts.HistoryAge), o.opts.HistoryMax); err != nil && ctx.Err() == nil {
		o.setLastError("prune outcomes: " + err.Error())
	}
}
