package bench

import (
	"math/bits"
	"time"
)

// histSub is the number of linear sub-buckets per power of two: latencies
// are kept with a relative error below 1/histSub (about 3 %).
const (
	histSubBits = 5
	histSub     = 1 << histSubBits
	histBuckets = 64 * histSub
)

// Histogram records latencies in log-linear buckets of bounded size
// (64 × 32 counters, whatever the number of samples). It is not safe for
// concurrent use: give each worker its own and Merge them.
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
	max    time.Duration
}

func bucketOf(d time.Duration) int {
	v := uint64(d)
	if v < histSub {
		return int(v)
	}
	exp := bits.Len64(v) - histSubBits // >= 1
	mant := v >> uint(exp-1) & (histSub - 1)
	return exp*histSub + int(mant)
}

// bucketValue is the upper bound of bucket i.
func bucketValue(i int) time.Duration {
	if i < histSub {
		return time.Duration(i)
	}
	exp := i / histSub
	mant := uint64(i % histSub)
	return time.Duration((histSub|mant)<<uint(exp-1) + (1 << uint(exp-1)) - 1)
}

// Record adds one latency.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(d)]++
	h.n++
	if d > h.max {
		h.max = d
	}
}

// Merge adds every sample of o to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	if o.max > h.max {
		h.max = o.max
	}
}

// Count returns the number of samples.
func (h *Histogram) Count() uint64 { return h.n }

// Quantile returns the latency below which a fraction q of the samples fall
// (0 when there are none).
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := bucketValue(i)
			if v > h.max {
				v = h.max
			}
			return v
		}
	}
	return h.max
}
