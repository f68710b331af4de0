package bench

import (
	"context"
	"sync"
	"time"
)

// runPaced runs op open-loop at rate per second for d, with at most
// maxInflight calls outstanding, and returns the latencies measured from
// each call's scheduled start (so that a stall counts against every call
// it delays). It returns the number of calls that failed.
func runPaced(ctx context.Context, rate float64, d time.Duration, maxInflight int, op func(ctx context.Context) error) (Histogram, int) {
	var (
		mu     sync.Mutex
		hist   Histogram
		failed int
		wg     sync.WaitGroup
	)
	sem := make(chan struct{}, maxInflight)
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	n := int(d.Seconds() * rate)
	for i := 0; i < n && ctx.Err() == nil; i++ {
		at := start.Add(time.Duration(i) * interval)
		if w := time.Until(at); w > 0 {
			sleep(ctx, w)
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := op(ctx)
			lat := time.Since(at)
			<-sem
			mu.Lock()
			if err != nil {
				failed++
			} else {
				hist.Record(lat)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return hist, failed
}
