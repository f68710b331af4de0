package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xconn/xconn/protocol"
)

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// parallel runs fn(i) for i in [0, n) on workers goroutines, starting no
// new call after deadline (zero: none), and returns how many calls
// completed and the first error.
func parallel(ctx context.Context, n, workers int, deadline time.Time, fn func(ctx context.Context, i int) error) (int, error) {
	var next, done atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if !deadline.IsZero() && time.Now().After(deadline) {
					return
				}
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(done.Load()), first
}

// runChannels opens Channels channels on one socket to the SDK, measures
// the connector's memory per channel, drops the socket and reopens them all
// on a new one; then signs channels in through the host, measures its
// memory per channel, cuts the host's socket and times the host's reopen.
func runChannels(ctx context.Context, cfg Config, _ *env) ([]Result, error) {
	dir, clean, err := scenarioDir(cfg, "channels")
	if err != nil {
		return nil, err
	}
	defer clean()
	counter := &openCounter{}
	r, err := newRig(ctx, dir, rigOptions{proxy: true, onPacket: counter.observe})
	if err != nil {
		return nil, err
	}
	defer r.close()
	n := cfg.Channels
	ids := make([]string, n)

	// SDK side.
	heap0 := heapInUse()
	wc, err := dialWire(ctx, r.baseURL)
	if err != nil {
		return nil, err
	}
	cid, err := wc.hello(ctx, benchCardID, "")
	if err != nil {
		wc.close()
		return nil, err
	}
	mem := startMem()
	t0 := time.Now()
	opened, err := parallel(ctx, n, cfg.InFlight, t0.Add(cfg.ChannelsBudget), func(ctx context.Context, i int) error {
		id, err := wc.open(ctx, "")
		ids[i] = id
		return err
	})
	openTime := time.Since(t0)
	allocs, bytes := mem.stop()
	if err != nil {
		wc.close()
		return nil, fmt.Errorf("channels: open: %w", err)
	}
	heap1 := heapInUse()
	ids = ids[:opened]
	idBytes := uint64(0)
	for _, id := range ids {
		idBytes += uint64(len(id))
	}
	wc.close()
	if opened == 0 {
		return nil, errors.New("channels: no channel opened")
	}
	perConn := (float64(heap1) - float64(heap0) - float64(idBytes)) / float64(opened)

	t0 = time.Now()
	wc, err = dialWire(ctx, r.baseURL)
	if err != nil {
		return nil, err
	}
	defer wc.close()
	if _, err := wc.hello(ctx, benchCardID, cid); err != nil {
		return nil, err
	}
	reopened, err := parallel(ctx, opened, cfg.InFlight, time.Now().Add(cfg.ChannelsBudget), func(ctx context.Context, i int) error {
		for {
			_, err := wc.open(ctx, ids[i])
			var pe *protocol.Error
			if errors.As(err, &pe) && pe.Code == protocol.CodeConnectorChannelNotOwned && ctx.Err() == nil {
				time.Sleep(time.Millisecond) // the old socket is still being torn down
				continue
			}
			return err
		}
	})
	reopen := time.Since(t0)
	if err != nil {
		return nil, fmt.Errorf("channels: reopen: %w", err)
	}
	sdk := Result{Name: "channels-sdk", Ops: int64(opened), Seconds: openTime.Seconds(), Rate: float64(opened) / openTime.Seconds(),
		Unit: "ch/s", AllocsPerOp: float64(allocs) / float64(opened), BytesPerOp: float64(bytes) / float64(opened),
		Goal: "<= 2 KiB/ch, reopen 100k <= 2 s",
		Extra: []Metric{
			{Name: "channels_opened", Value: float64(opened), Unit: "of " + strconv.Itoa(n) + " within the " + cfg.ChannelsBudget.String() + " budget"},
			{Name: "connector_heap_per_channel", Value: perConn, Unit: "B"},
			{Name: "reconnect_and_reopen", Value: reopen.Seconds(), Unit: "s"},
			{Name: "channels_reopened", Value: float64(reopened), Unit: "of " + strconv.Itoa(opened)},
			{Name: "reopen_rate", Value: float64(reopened) / reopen.Seconds(), Unit: "ch/s"},
		}}
	out := []Result{sdk}

	// Host side: sign-ins through the host, then cut its socket.
	hn := min(n, cfg.HostChannels)
	heap2 := heapInUse()
	mem = startMem()
	t0 = time.Now()
	hn, err = parallel(ctx, hn, cfg.InFlight, t0.Add(cfg.ChannelsBudget), func(ctx context.Context, _ int) error {
		_, err := r.signInOne(ctx, benchUser, "")
		return err
	})
	if err != nil {
		return out, fmt.Errorf("channels: host sign-in: %w", err)
	}
	signTime := time.Since(t0)
	allocs, bytes = mem.stop()
	heap3 := heapInUse()
	counter.reset()
	t0 = time.Now()
	r.proxy.drop()
	limit := t0.Add(cfg.ChannelsBudget)
	for counter.count() < int64(hn) {
		if time.Now().After(limit) {
			break
		}
		sleep(ctx, time.Millisecond)
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
	hostReopen := time.Since(t0)
	hostReopened := counter.count()
	both := (float64(heap3) - float64(heap2)) / float64(hn)
	hr := Result{Name: "channels-host", Ops: int64(hn), Seconds: signTime.Seconds(), Rate: float64(hn) / signTime.Seconds(),
		Unit: "ch/s", AllocsPerOp: float64(allocs) / float64(hn), BytesPerOp: float64(bytes) / float64(hn),
		Goal: "<= 2 KiB/ch",
		Extra: []Metric{
			{Name: "heap_per_signed_in_channel_both_sides", Value: both, Unit: "B"},
			{Name: "host_heap_per_channel_est", Value: both - perConn, Unit: "B (both sides minus connector_heap_per_channel)"},
			{Name: "drop_to_reopened", Value: hostReopen.Seconds(), Unit: "s"},
			{Name: "host_channels_reopened", Value: float64(hostReopened), Unit: "of " + strconv.Itoa(hn)},
			{Name: "host_reopen_rate", Value: float64(hostReopened) / hostReopen.Seconds(), Unit: "ch/s"},
		}}
	return append(out, hr), nil
}

// openCounter counts the channel.open.ack packets the host receives.
type openCounter struct{ n atomic.Int64 }

func (c *openCounter) observe(dir protocol.Direction, _ string, env *protocol.Envelope) {
	if dir == protocol.ToHost && env.Type == protocol.TypeChannelOpenAck {
		c.n.Add(1)
	}
}
func (c *openCounter) reset()       { c.n.Store(0) }
func (c *openCounter) count() int64 { return c.n.Load() }
