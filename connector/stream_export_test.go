package connector

import "time"

// SetClock makes s read the time from now. For the external tests.
func (s *EditStream[R]) SetClock(now func() time.Time) { s.now = now }

// Tracked returns the streams s tracks and their bytes. For the external
// tests.
func (s *EditStream[R]) Tracked() (n, bytes int) { return s.tracks.len() }

// Held returns the keys b holds. For the external tests.
func (b *RateBuckets) Held() int { return b.len() }
