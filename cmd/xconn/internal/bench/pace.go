package bench

import (
	"context"
	"sync"
	"time"
)

// pacedResult holds the latencies of an open-loop run.
type pacedResult struct {
	// Total is measured from each call's scheduled start (so that a stall
	// counts against every call it delays): the figure to quote.
	Total Histogram
	// Lag is from the scheduled start to the moment the call's goroutine
	// runs: the load generator's own delay (pacing, goroutine start,
	// run-queue wait), which the system under test has not seen yet.
	Lag Histogram
	// Service is from that moment to the answer.
	Service Histogram
}

// runPaced runs op open-loop at rate per second for d, with at most
// maxInflight calls outstanding, and returns the latencies of the calls
// that succeeded and the number of calls that failed.
func runPaced(ctx context.Context, rate float64, d time.Duration, maxInflight int, op func(ctx context.Context) error) (pacedResult, int) {
	var (
		mu     sync.Mutex
		res    pacedResult
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
			began := time.Now()
			err := op(ctx)
			end := time.Now()
			<-sem
			mu.Lock()
			if err != nil {
				failed++
			} else {
				res.Total.Record(end.Sub(at))
				res.Lag.Record(began.Sub(at))
				res.Service.Record(end.Sub(began))
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return res, failed
}
