package delivery

import "time"

// Clock supplies the current time to the delivery engine so that tests can
// control it. Waiting (retry timers, the sweeper) uses the time package, so
// deterministic tests run inside testing/synctest. Implementations must be
// safe for concurrent use.
type Clock interface {
	Now() time.Time
}

// SystemClock is the Clock of the time package. It is safe for concurrent
// use.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

func clockOrSystem(c Clock) Clock {
	if c == nil {
		return SystemClock{}
	}
	return c
}
