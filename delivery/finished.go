package delivery

import "sync"

// recentFinished is the number of entries whose keys an Outbox remembers
// after finishing them (see finishedSet).
const recentFinished = 1024

// finishedKey names an entry of a queue.
type finishedKey struct{ channel, messageID string }

// finishedSet remembers the keys of the last recentFinished entries an
// Outbox finished (their outcome recorded, or found no longer pending).
// An Enqueue hands Run its new entry as the channel's head, but only after
// its storage call returned: meanwhile a read of the due heads or of a
// worker's next entry may have found the entry, and a worker may have
// delivered it, so that Run takes the hint after the channel's worker is
// done and would send the entry again. Run drops a hint whose key is here
// and has a worker read the channel's head instead. The set is bounded:
// a hint that outlived recentFinished finishes is still trusted, and its
// entry then sent twice (the receiver answers duplicate). Safe for
// concurrent use.
type finishedSet struct {
	mu   sync.Mutex
	ring []finishedKey
	pos  int
	set  map[finishedKey]struct{}
}

// add remembers k, forgetting the oldest key beyond recentFinished.
func (s *finishedSet) add(k finishedKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set == nil {
		s.set = make(map[finishedKey]struct{}, recentFinished)
		s.ring = make([]finishedKey, 0, recentFinished)
	}
	if _, ok := s.set[k]; ok {
		return
	}
	if len(s.ring) < recentFinished {
		s.ring = append(s.ring, k)
	} else {
		delete(s.set, s.ring[s.pos])
		s.ring[s.pos] = k
		s.pos = (s.pos + 1) % recentFinished
	}
	s.set[k] = struct{}{}
}

// has reports whether k is remembered.
func (s *finishedSet) has(k finishedKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.set[k]
	return ok
}
