package connector

import (
	"sync"
	"time"
)

// streamOverhead is what one tracked stream costs besides its ids, in
// bytes, for the MaxBytes bound (the struct, the map entry, the mutex).
const streamOverhead = 160

// stream is one streamed assistant message of an EditStream. Its fields
// are guarded by mu, held during the target calls of its deltas and final.
type stream[R any] struct {
	mu     sync.Mutex
	ref    R         // the target message (valid when posted)
	posted bool      // the stream's message exists on the target
	shown  uint64    // hash of the text it shows
	edits  int       // edits made (MaxEdits)
	last   time.Time // the last post or edit (Interval)
	pause  time.Time // no call before (a rate limit's Retry-After)
	broken bool      // a call failed: no more edits, the final carries the text
	done   bool      // the final took it: a late delta does nothing

	// Guarded by streamTable.mu.
	seen time.Time // the last delta (TTL, eviction order)
	size int       // bytes counted against MaxBytes
}

type streamKey struct{ channel, message string }

// streamTable is the bounded set of streams of one EditStream: at most max
// entries and maxBytes bytes, each dropped ttl after its last delta.
// Expired entries go when a new one is added; the least recently seen
// goes when the bounds are reached. Safe for concurrent use.
type streamTable[R any] struct {
	mu       sync.Mutex
	m        map[streamKey]*stream[R]
	bytes    int
	max      int
	maxBytes int
	ttl      time.Duration
}

func newStreamTable[R any](max, maxBytes int, ttl time.Duration) *streamTable[R] {
	return &streamTable[R]{m: map[streamKey]*stream[R]{}, max: max, maxBytes: maxBytes, ttl: ttl}
}

// get returns the stream of a message, marking it seen at now; fresh
// reports that it was created now (the caller adopts a durable record).
// It returns nil when the ids alone exceed the byte bound.
func (t *streamTable[R]) get(channel, message string, now time.Time) (st *stream[R], fresh bool) {
	k := streamKey{channel, message}
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.m[k]; st != nil {
		if now.Sub(st.seen) <= t.ttl {
			st.seen = now
			return st, false
		}
		t.remove(k, st)
	}
	size := len(channel) + len(message) + streamOverhead
	if size > t.maxBytes/4 {
		return nil, false
	}
	t.evict(now, size)
	st = &stream[R]{seen: now, size: size}
	t.m[k] = st
	t.bytes += size
	return st, true
}

// take removes and returns the stream of a message (nil when none).
func (t *streamTable[R]) take(channel, message string) *stream[R] {
	k := streamKey{channel, message}
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.m[k]
	if st != nil {
		t.remove(k, st)
	}
	return st
}

// len returns the streams tracked and their bytes.
func (t *streamTable[R]) len() (n, bytes int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m), t.bytes
}

// evict drops expired streams, then the least recently seen until one of
// size fits. The caller holds t.mu.
func (t *streamTable[R]) evict(now time.Time, size int) {
	var oldestK streamKey
	var oldest *stream[R]
	for k, st := range t.m {
		if now.Sub(st.seen) > t.ttl {
			t.remove(k, st)
		} else if oldest == nil || st.seen.Before(oldest.seen) {
			oldestK, oldest = k, st
		}
	}
	for oldest != nil && (len(t.m) >= t.max || t.bytes+size > t.maxBytes) {
		t.remove(oldestK, oldest)
		oldest = nil
		for k, st := range t.m {
			if oldest == nil || st.seen.Before(oldest.seen) {
				oldestK, oldest = k, st
			}
		}
	}
}

func (t *streamTable[R]) remove(k streamKey, st *stream[R]) {
	delete(t.m, k)
	t.bytes -= st.size
}
