package connector

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// StartFunc starts one shared target consumer for key (for example a
// getUpdates loop of one bot token) and returns a stop function that stops
// it and waits for its goroutines. ctx only bounds the start itself.
type StartFunc[K comparable] func(ctx context.Context, key K) (stop func(), err error)

// SharedConsumers reference-counts shared target consumers per key (per
// credential): the first Acquire of a key starts its consumer, the last
// Release stops it (section 8.2: a shared consumer stops only after the
// final channel reference is removed). The connector owns it and calls
// Close when it shuts down. Safe for concurrent use.
type SharedConsumers[K comparable] struct {
	start StartFunc[K]
	max   int

	mu     sync.Mutex
	refs   map[K]*sharedRef
	closed bool
}

type sharedRef struct {
	n    int
	stop func()
	// ready is closed when the start finished; err is its result.
	ready chan struct{}
	err   error
}

// DefaultMaxSharedConsumers bounds the keys of a SharedConsumers.
const DefaultMaxSharedConsumers = 10000

// ErrTooManyConsumers is returned by Acquire beyond the key bound.
var ErrTooManyConsumers = errors.New("connector: too many shared consumers")

// ErrConsumersClosed is returned by Acquire after Close.
var ErrConsumersClosed = errors.New("connector: shared consumers closed")

// NewSharedConsumers returns a reference counter that starts consumers
// with start. max bounds the live keys (<= 0: DefaultMaxSharedConsumers).
func NewSharedConsumers[K comparable](start StartFunc[K], max int) *SharedConsumers[K] {
	if max <= 0 {
		max = DefaultMaxSharedConsumers
	}
	return &SharedConsumers[K]{start: start, max: max, refs: map[K]*sharedRef{}}
}

// Acquire takes one reference on key, starting its consumer when it is the
// first. A failed start is returned to every waiting Acquire and leaves no
// reference.
func (s *SharedConsumers[K]) Acquire(ctx context.Context, key K) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrConsumersClosed
	}
	if r, ok := s.refs[key]; ok {
		r.n++
		s.mu.Unlock()
		select {
		case <-r.ready:
		case <-ctx.Done():
			s.release(key, r)
			return ctx.Err()
		}
		if r.err != nil {
			return r.err // the starter already removed the entry
		}
		return nil
	}
	if len(s.refs) >= s.max {
		s.mu.Unlock()
		return ErrTooManyConsumers
	}
	r := &sharedRef{n: 1, ready: make(chan struct{})}
	s.refs[key] = r
	s.mu.Unlock()

	stop, err := s.start(ctx, key)
	if err == nil && stop == nil {
		stop = func() {}
	}
	s.mu.Lock()
	if err != nil {
		r.err = fmt.Errorf("connector: start shared consumer: %w", err)
		if s.refs[key] == r {
			delete(s.refs, key)
		}
	} else {
		r.stop = stop
	}
	close(r.ready)
	s.mu.Unlock()
	return r.err
}

// Release drops one reference on key; the last one stops the consumer
// (waiting for it). Releasing an unknown key does nothing.
func (s *SharedConsumers[K]) Release(key K) {
	s.mu.Lock()
	r, ok := s.refs[key]
	s.mu.Unlock()
	if ok {
		s.release(key, r)
	}
}

func (s *SharedConsumers[K]) release(key K, r *sharedRef) {
	s.mu.Lock()
	if s.refs[key] != r {
		s.mu.Unlock()
		return
	}
	r.n--
	if r.n > 0 {
		s.mu.Unlock()
		return
	}
	delete(s.refs, key)
	s.mu.Unlock()
	<-r.ready
	if r.stop != nil {
		r.stop()
	}
}

// Refs returns the number of references held on key.
func (s *SharedConsumers[K]) Refs(key K) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.refs[key]; ok {
		return r.n
	}
	return 0
}

// Len returns the number of live keys.
func (s *SharedConsumers[K]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.refs)
}

// Close stops every consumer, whatever its references, and makes later
// Acquires fail. It waits for each stop.
func (s *SharedConsumers[K]) Close() {
	s.mu.Lock()
	s.closed = true
	refs := s.refs
	s.refs = map[K]*sharedRef{}
	s.mu.Unlock()
	for _, r := range refs {
		<-r.ready
		if r.stop != nil {
			r.stop()
		}
	}
}
