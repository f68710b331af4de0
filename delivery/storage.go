package delivery

import (
	"context"
	"time"
)

// OutboxStorage persists outbox entries and their terminal outcomes. Each
// method is atomic (one transaction in a database). Every entry is keyed by
// (Queue, Channel, MessageID). Implementations are safe for concurrent use,
// also by several processes sharing a database. *store.DB and
// *MemoryStorage implement it.
type OutboxStorage interface {
	// OutboxEnqueue stores e as the newest entry of its channel, assigning
	// e.Seq. When the key is already pending it returns AlreadyPending with
	// the stored entry; when the key has an outcome in the history it returns
	// AlreadyDone with that outcome; in both cases it stores nothing. Before
	// storing, it removes the channel's entries with ExpiresAt at or before
	// now (recording OutcomeExpired), then, while the channel holds capacity
	// entries or more, its oldest entries (recording OutcomeEvicted with
	// CodeCapacityExceeded); those outcomes are returned in Dropped.
	OutboxEnqueue(ctx context.Context, e Entry, capacity int, now time.Time) (EnqueueResult, error)
	// OutboxDue returns up to limit channel heads (the lowest Seq of each
	// channel of queue) whose NextAttempt is at or before now, earliest
	// NextAttempt first.
	OutboxDue(ctx context.Context, queue string, now time.Time, limit int) ([]Entry, error)
	// OutboxNextAttempt returns the earliest NextAttempt later than after
	// among the channel heads of queue; ok is false when there is none.
	OutboxNextAttempt(ctx context.Context, queue string, after time.Time) (t time.Time, ok bool, err error)
	// OutboxRetry records a failed attempt of a pending entry. It reports
	// false when the entry is no longer pending.
	OutboxRetry(ctx context.Context, queue, channel, messageID string, attempts int, next time.Time, lastErr string) (bool, error)
	// OutboxReschedule moves the NextAttempt of the channel's pending entries
	// back to at when it is later than at, so that a waiting head becomes due.
	OutboxReschedule(ctx context.Context, queue, channel string, at time.Time) error
	// OutboxFinish removes the pending entry of o's key and records o in the
	// history. It reports false, changing nothing, when the entry is no
	// longer pending.
	OutboxFinish(ctx context.Context, o Outcome) (bool, error)
	// OutboxExpire removes up to limit entries of queue with ExpiresAt at or
	// before now, records OutcomeExpired for each and returns the outcomes.
	OutboxExpire(ctx context.Context, queue string, now time.Time, limit int) ([]Outcome, error)
	// OutboxPending counts the pending entries of queue.
	OutboxPending(ctx context.Context, queue string) (int, error)
	// OutboxOutcome returns the recorded outcome of a key; ok is false when
	// there is none.
	OutboxOutcome(ctx context.Context, queue, channel, messageID string) (o Outcome, ok bool, err error)
	// OutboxOutcomes returns up to limit outcomes of a channel, newest first.
	OutboxOutcomes(ctx context.Context, queue, channel string, limit int) ([]Outcome, error)
	// OutboxPruneOutcomes deletes the outcomes of queue recorded before
	// before, then the oldest ones beyond max; it returns how many it deleted.
	OutboxPruneOutcomes(ctx context.Context, queue string, before time.Time, max int) (int, error)
	// OutboxDeleteChannel drops the pending entries and outcomes of a
	// permanently deleted channel (IM v2 §9) and returns how many entries
	// were pending.
	OutboxDeleteChannel(ctx context.Context, queue, channel string) (int, error)
}

// OutboxAmendStorage is an optional extension of [OutboxStorage]. An
// attempt that started before its entry's expiry can be accepted by the
// receiver after it, while the expiry sweep (or an enqueue on the same
// channel) has already removed the entry as expired: the receiver took the
// message, so the sender must report it delivered, not expired. A storage
// that implements this lets the Outbox correct that record. *store.DB and
// *MemoryStorage implement it.
type OutboxAmendStorage interface {
	// OutboxAmendExpired records o for its key when the key has no pending
	// entry and its recorded outcome is OutcomeExpired; it reports whether
	// it did.
	OutboxAmendExpired(ctx context.Context, o Outcome) (bool, error)
}

// OutboxHeadStorage is an optional extension of [OutboxStorage]: a storage
// that can read one channel's head lets a delivery worker go on with the
// next entry of the channel it just delivered, without a new read of every
// channel's head. *store.DB and *MemoryStorage implement it.
type OutboxHeadStorage interface {
	// OutboxHead returns the head of a channel (its pending entry with the
	// lowest Seq); ok is false when the channel has no pending entry.
	OutboxHead(ctx context.Context, queue, channel string) (e Entry, ok bool, err error)
}

// OutboxFinishNextStorage is an optional extension of [OutboxStorage]: a
// storage that records an outcome and reads the channel's next head in the
// same transaction saves a delivery worker one storage round trip per
// message. *store.DB and *MemoryStorage implement it.
type OutboxFinishNextStorage interface {
	// OutboxFinishNext does what OutboxFinish does and, in the same
	// transaction, returns the new head of o's channel (its pending entry
	// with the lowest Seq); hasNext is false when the channel has none. When
	// ok is false (the entry was no longer pending) nothing changed and next
	// is not read.
	OutboxFinishNext(ctx context.Context, o Outcome) (ok bool, next Entry, hasNext bool, err error)
}

// OutboxAfterStorage is an optional extension of [OutboxStorage]: a
// storage that reads the entry following a given one in its channel lets a
// delivery worker send that entry as soon as the previous one is acked,
// while the previous one's outcome is still being recorded (one commit
// less in each message's round trip). *store.DB and *MemoryStorage
// implement it.
type OutboxAfterStorage interface {
	// OutboxAfter returns the pending entry of the channel with the lowest
	// Seq above seq; ok is false when there is none.
	OutboxAfter(ctx context.Context, queue, channel string, seq int64) (e Entry, ok bool, err error)
}

// InboxRecord is the receiver's record that one message_id was completed:
// every side effect done, the ack sent or about to be sent.
type InboxRecord struct {
	Queue     string
	Channel   string
	MessageID string
	// Hash is the canonical content hash ([ContentHash]).
	Hash string
	// At is when the record was written.
	At time.Time
}

// InboxStorage persists the receiver's completed record. Each method is
// atomic. Implementations are safe for concurrent use, also by several
// processes sharing a database. *store.DB and *MemoryStorage implement it.
type InboxStorage interface {
	// InboxGet returns the record of a key; ok is false when there is none.
	InboxGet(ctx context.Context, queue, channel, messageID string) (r InboxRecord, ok bool, err error)
	// InboxPut stores r unless its key exists: then it returns the existing
	// record with inserted false and changes nothing. After an insert it
	// deletes the channel's oldest records beyond maxPerChannel.
	InboxPut(ctx context.Context, r InboxRecord, maxPerChannel int) (existing InboxRecord, inserted bool, err error)
	// InboxPrune deletes the records of queue written before before.
	InboxPrune(ctx context.Context, queue string, before time.Time) (int, error)
	// InboxDeleteChannel drops the records of a permanently deleted channel.
	InboxDeleteChannel(ctx context.Context, queue, channel string) (int, error)
}

// Storage is both storages; *store.DB and *MemoryStorage implement it.
type Storage interface {
	OutboxStorage
	InboxStorage
}
