// Package delivery holds the message-delivery rules of the IM Profile v2
// (and the retention rules of IM Profile v1) shared by both sides of the
// wire: the sender's [Outbox], the receiver's [Inbox] and the
// [Assembler] of chat.message.delta fragments.
//
// The rules, with their documented defaults:
//
//   - Outbox (IM v2 §9, IM v1 §7–§8). An entry is pending from [Outbox.Enqueue]
//     until the receiver answers accepted or duplicate. A timeout, a
//     disconnect, a closed channel or a rejection with retryable=true keeps it
//     pending and schedules a retry with capped exponential backoff and jitter
//     (default base 1 s, cap 5 min, jitter ±20 %). A rejection with
//     retryable=false is the failed terminal state, its code kept. Only the
//     head entry of a channel is ever in flight, so a channel keeps its order
//     and a failing head blocks that channel alone; different channels run in
//     parallel (default 256 workers, one entry in flight each). expires_at is fixed at the first enqueue
//     (default TTL 1 hour) and never extended; expiry is checked at Run start,
//     at enqueue, before each send and by a sweeper running every TTL/2 or
//     more often. Capacity is 1,000 entries per channel by default; an enqueue
//     into a full channel first drops expired entries, then evicts the oldest
//     entries and records them as evicted with code capacity_exceeded; a
//     queue holding 100,000 entries in all refuses new ones (ErrOutboxFull,
//     backpressure). Terminal outcomes are kept in a bounded history (default 10,000 per
//     queue, 24 hours).
//   - Inbox (IM v2 §7, §9). The first delivery of a message_id is new; the
//     same message_id with the same content (text and the full file list) is
//     a duplicate; with other content it is a conflict, rejected with
//     [protocol.CodeMessageConflict] and retryable=false. The record is
//     written only by [Inbox.Commit], after every side effect, so a crash in
//     the middle redelivers instead of losing. The record is bounded per
//     channel (default 1,000) and by age (default 24 hours).
//   - Assembler (IM v2 §6). Per message_id, sequence starts at 1 and grows by
//     one; the same (message_id, sequence, text) again is ignored; a gap or a
//     conflicting text is a [protocol.CodeDeltaSequenceInvalid] error. Buffers
//     are bounded by message count (default 1,000), bytes (default 1 MiB per
//     message, 16 MiB in all) and age (default 10 minutes).
//
// Storage sits behind [OutboxStorage] and [InboxStorage]; package store
// implements both over SQLite and PostgreSQL, and [MemoryStorage] is a
// bounded in-memory implementation for tests and ephemeral use. Storage
// stays the only source of truth: the delivery loop holds in memory only
// which channels are in flight or wait for a worker, learns of new work
// from Enqueue (a new channel head is handed over without a read) and from
// its workers (with [OutboxAfterStorage] the next entry of a channel is
// read and sent while the previous outcome is recorded in the background;
// with [OutboxFinishNextStorage] it is read in the transaction that records
// the previous outcome), and reads
// the due heads of every channel only at start, on [Outbox.Wake] and when
// a retry falls due.
package delivery
