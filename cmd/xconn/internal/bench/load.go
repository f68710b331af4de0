package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// load is a closed-loop load: workers goroutines call op back to back;
// the first warmup is not counted, the next duration is.
type load struct {
	workers  int
	warmup   time.Duration
	duration time.Duration
	op       func(ctx context.Context, worker int) error
}

// measured is the raw outcome of a load or of a custom measurement.
type measured struct {
	ops     int64
	elapsed time.Duration
	hist    Histogram
	allocs  uint64
	bytes   uint64
	// slowest is the slowest of the runs a median was taken from.
	slowest time.Duration
}

// memWindow brackets a measurement with runtime.MemStats readings.
type memWindow struct{ before runtime.MemStats }

func startMem() *memWindow {
	w := &memWindow{}
	runtime.ReadMemStats(&w.before)
	return w
}

// stop returns the mallocs and bytes allocated since startMem.
func (w *memWindow) stop() (allocs, bytes uint64) {
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	return after.Mallocs - w.before.Mallocs, after.TotalAlloc - w.before.TotalAlloc
}

const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseStop
)

// runLoad runs l and returns what the measured window saw. The first error
// of an op ends the load and is returned.
func runLoad(ctx context.Context, l load) (measured, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		phase    atomic.Int32
		firstErr error
		errOnce  sync.Once
		wg       sync.WaitGroup
	)
	var measuredOps atomic.Int64
	hists := make([]Histogram, l.workers)
	counts := make([]int64, l.workers)
	for w := range l.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := &hists[w]
			for phase.Load() != phaseStop && ctx.Err() == nil {
				t := time.Now()
				if err := l.op(ctx, w); err != nil {
					if ctx.Err() == nil && phase.Load() != phaseStop {
						errOnce.Do(func() { firstErr = err; cancel() })
					}
					return
				}
				if phase.Load() == phaseMeasure {
					h.Record(time.Since(t))
					counts[w]++
					measuredOps.Add(1)
				}
			}
		}()
	}
	sleep(ctx, l.warmup)
	mem := startMem()
	t0 := time.Now()
	phase.Store(phaseMeasure)
	sleep(ctx, l.duration)
	// A slow operation (a loaded machine, tiny durations in tests) may not
	// finish inside the window; extend it until one does, within a bound.
	for extra := time.Duration(0); measuredOps.Load() == 0 && ctx.Err() == nil && extra < maxMeasureExtension; extra += 5 * time.Millisecond {
		sleep(ctx, 5*time.Millisecond)
	}
	phase.Store(phaseStop)
	elapsed := time.Since(t0)
	allocs, bytes := mem.stop()
	cancel()
	wg.Wait()
	if firstErr != nil {
		return measured{}, fmt.Errorf("load: %w", firstErr)
	}
	m := measured{elapsed: elapsed, allocs: allocs, bytes: bytes}
	for w := range l.workers {
		m.hist.Merge(&hists[w])
		m.ops += counts[w]
	}
	if m.ops == 0 {
		return m, fmt.Errorf("load: no operation completed in %v", l.duration)
	}
	return m, nil
}

// maxMeasureExtension bounds how long a measurement window is extended
// while no operation has completed in it.
const maxMeasureExtension = 30 * time.Second

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// result turns m into a Result row named name with rate unit unit.
func (m measured) result(name, unit string) Result {
	r := Result{Name: name, Ops: m.ops, Seconds: m.elapsed.Seconds(), Unit: unit,
		P50: m.hist.Quantile(0.50), P99: m.hist.Quantile(0.99)}
	if m.elapsed > 0 {
		r.Rate = float64(m.ops) / m.elapsed.Seconds()
	}
	if m.ops > 0 {
		r.AllocsPerOp = float64(m.allocs) / float64(m.ops)
		r.BytesPerOp = float64(m.bytes) / float64(m.ops)
	}
	return r
}
