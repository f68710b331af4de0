package delivery

import (
	"time"

	"github.com/xconn/xconn/protocol"
)

// CodeCapacityExceeded is the code recorded on an [Outcome] of kind
// [OutcomeEvicted]: the entry was dropped because its channel was full
// (IM v1 §8). It never travels on the wire in an outcome; it is
// [protocol.CodeCapacityExceeded].
const CodeCapacityExceeded = protocol.CodeCapacityExceeded

// Entry is one pending outbox entry: a complete message that the sender is
// responsible for until a terminal ack. Entries are values; the Outbox and
// the storage own the pending set.
type Entry struct {
	// Queue names the outbox, so one database can hold several (for
	// example "connector" and "host").
	Queue string
	// Channel is the connector_channel_id the message travels on.
	Channel string
	// MessageID is the caller's stable message_id; the outbox never assigns
	// a new one.
	MessageID string
	// Payload is the caller's encoded message (typically the JSON of a
	// protocol.ChatMessagePayload). The outbox does not interpret it.
	Payload []byte
	// Seq is the storage-assigned enqueue order; it orders a channel.
	Seq int64
	// CreatedAt is when the sender first took responsibility.
	CreatedAt time.Time
	// ExpiresAt is CreatedAt plus the TTL; never extended.
	ExpiresAt time.Time
	// Attempts counts send attempts so far.
	Attempts int
	// NextAttempt is the earliest time of the next attempt.
	NextAttempt time.Time
	// LastError summarises the latest temporary failure (secret-free).
	LastError string
}

// OutcomeKind is the terminal state of an outbox entry.
type OutcomeKind string

// Terminal states of an outbox entry.
const (
	// OutcomeDelivered: the receiver answered accepted or duplicate.
	OutcomeDelivered OutcomeKind = "delivered"
	// OutcomeFailed: the receiver answered rejected with retryable=false;
	// Outcome.Code holds its code.
	OutcomeFailed OutcomeKind = "failed"
	// OutcomeExpired: the TTL passed before a terminal ack; never sent again.
	OutcomeExpired OutcomeKind = "expired"
	// OutcomeEvicted: dropped to make room in a full channel; Outcome.Code is
	// CodeCapacityExceeded.
	OutcomeEvicted OutcomeKind = "evicted"
)

// Outcome is the recorded terminal state of one outbox entry, kept in a
// bounded history so that it stays observable.
type Outcome struct {
	Queue     string
	Channel   string
	MessageID string
	Kind      OutcomeKind
	// Code is the wire code of a failure, or CodeCapacityExceeded for an
	// eviction; empty otherwise.
	Code protocol.Code
	// Message is a short secret-free reason.
	Message   string
	Attempts  int
	CreatedAt time.Time
	ExpiresAt time.Time
	// At is when the terminal state was reached.
	At time.Time
}

// EnqueueStatus says what [Outbox.Enqueue] did.
type EnqueueStatus int

// Results of an enqueue.
const (
	// Enqueued: a new pending entry was stored.
	Enqueued EnqueueStatus = iota + 1
	// AlreadyPending: the message_id is pending already; nothing changed
	// (its expiry included).
	AlreadyPending
	// AlreadyDone: the message_id has a terminal outcome in the history;
	// nothing was stored, so it is not sent again.
	AlreadyDone
)

// String returns "enqueued", "pending" or "done".
func (s EnqueueStatus) String() string {
	switch s {
	case Enqueued:
		return "enqueued"
	case AlreadyPending:
		return "pending"
	case AlreadyDone:
		return "done"
	}
	return "unknown"
}

// EnqueueResult is what an enqueue did.
type EnqueueResult struct {
	Status EnqueueStatus
	// Entry is the pending entry (new or existing) unless Status is
	// AlreadyDone.
	Entry Entry
	// Outcome is the recorded outcome when Status is AlreadyDone.
	Outcome Outcome
	// Dropped lists the entries of the channel that this enqueue expired or
	// evicted, with their recorded outcomes.
	Dropped []Outcome
	// Head reports, when Status is Enqueued, that the new entry is the only
	// pending entry of its channel, i.e. its head. A storage may leave it
	// false when it does not know; the Outbox then reads the head.
	Head bool
}

// Stats are the observable counters of an [Outbox] (IM v1 §7.2). Counters
// count since the Outbox was created; Pending is read from storage.
type Stats struct {
	Queue       string
	TTL         time.Duration
	Capacity    int
	Pending     int
	Attempts    int64
	Deliveries  int64
	Expirations int64
	Evictions   int64
	Failures    int64
	// LastError is the most recent temporary or terminal failure,
	// secret-free; empty when none.
	LastError   string
	LastErrorAt time.Time
}
