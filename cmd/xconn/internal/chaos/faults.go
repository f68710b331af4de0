package chaos

import (
	"math/rand/v2"
	"time"
)

// Fault is a kind of injected failure.
type Fault string

// The faults of a chaos run.
const (
	// KillConnector sends SIGKILL to the (active) connector process.
	KillConnector Fault = "kill-connector"
	// KillHost sends SIGKILL to the host process.
	KillHost Fault = "kill-host"
	// Drop closes every proxied connection.
	Drop Fault = "drop"
	// Stall stops the proxy forwarding for a while.
	Stall Fault = "stall"
	// HalfClose shuts the client→connector direction of every proxied
	// connection.
	HalfClose Fault = "half-close"
	// NewConnectorID restarts the host without its stored connector_id:
	// the connector assigns a new one and the channels move to it.
	NewConnectorID Fault = "new-connector-id"
	// SlowConsumer slows the proxied link and the browser's event
	// stream reader for a while.
	SlowConsumer Fault = "slow-consumer"
	// HostOutage stops the host (SIGTERM) for longer than the connector's
	// outbox TTL, so that messages posted meanwhile expire.
	HostOutage Fault = "host-outage"
)

// weighted is a fault with its relative frequency.
type weighted struct {
	f Fault
	w int
}

// Schedule draws faults and the pauses between them from a seeded source:
// the same seed replays the same sequence of decisions. Not safe for
// concurrent use.
type Schedule struct {
	rng    *rand.Rand
	faults []weighted
	total  int
	min    time.Duration
	max    time.Duration
}

// NewSchedule returns a schedule seeded with seed that draws pauses in
// [minGap, maxGap) and faults among kinds (HostOutage at a fifth of the
// others' frequency).
func NewSchedule(seed uint64, minGap, maxGap time.Duration, kinds []Fault) *Schedule {
	s := &Schedule{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), min: minGap, max: max(maxGap, minGap+1)}
	for _, k := range kinds {
		w := 5
		if k == HostOutage {
			w = 1
		}
		s.faults = append(s.faults, weighted{k, w})
		s.total += w
	}
	return s
}

// Next returns the pause before the next fault and the fault.
func (s *Schedule) Next() (time.Duration, Fault) {
	gap := s.min + time.Duration(s.rng.Int64N(int64(s.max-s.min)))
	if s.total == 0 {
		return gap, ""
	}
	n := s.rng.IntN(s.total)
	for _, w := range s.faults {
		if n < w.w {
			return gap, w.f
		}
		n -= w.w
	}
	return gap, s.faults[len(s.faults)-1].f
}

// Duration draws a duration in [lo, hi).
func (s *Schedule) Duration(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)))
}

// Intn draws an int in [0, n).
func (s *Schedule) Intn(n int) int { return s.rng.IntN(n) }
