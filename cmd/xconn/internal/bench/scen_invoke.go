package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// toolArgs returns the arguments of a bench tool call on channel: the
// Card's tool schemas require connector_channel_id in the arguments.
func toolArgs(channel string, size int) json.RawMessage {
	return json.RawMessage(`{"connector_channel_id":"` + channel + `","text":"` + strings.Repeat("x", size) + `"}`)
}

// invokePayloads returns one encoded tool.invoke payload of tool per channel.
func invokePayloads(tool string, channels []string, size int) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(channels))
	for i, ch := range channels {
		b, err := json.Marshal(protocol.ToolInvokePayload{ToolID: tool, Arguments: toolArgs(ch, size)})
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// runInvoke measures tool.invoke round trips through host.Invoke and the
// SDK, then through the SDK alone (wsconn client), against the raw echo.
func runInvoke(ctx context.Context, cfg Config, _ *env) ([]Result, error) {
	dir, clean, err := scenarioDir(cfg, "invoke")
	if err != nil {
		return nil, err
	}
	defer clean()
	r, err := newRig(ctx, dir, rigOptions{})
	if err != nil {
		return nil, err
	}
	defer r.close()
	nch := min(cfg.InvokeChannels, cfg.InFlight)
	ucs, err := r.signIn(ctx, nch, nch, true)
	if err != nil {
		return nil, err
	}
	args := make([]json.RawMessage, nch)
	for i, uc := range ucs {
		args[i] = toolArgs(uc.ChannelID, cfg.MessageSize)
	}
	sessions := make([]string, nch)
	for i := range sessions {
		sessions[i] = "s" + strconv.Itoa(i)
	}
	seq := make([]uint64, cfg.InFlight)
	op := func(ctx context.Context, w int) error {
		seq[w]++
		c := w % nch
		return r.invoke(ctx, sessions[c], toolEcho, args[c], "c"+strconv.Itoa(w)+"_"+strconv.FormatUint(seq[w], 36))
	}
	m, err := runLoad(ctx, load{workers: cfg.InFlight, warmup: cfg.Warmup, duration: cfg.Duration, op: op})
	if err != nil {
		return nil, fmt.Errorf("invoke: %w", err)
	}
	inv := m.result("invoke", "op/s")
	inv.Baseline, inv.Goal = nameWSEcho, ">= 0.5"
	// p99 at half of the peak throughput, open loop.
	var pseq sync.Mutex
	n := 0
	if cfg.Trace != nil {
		if err := trace.Start(cfg.Trace); err != nil {
			return nil, fmt.Errorf("invoke: trace: %w", err)
		}
	}
	paced, failed := runPaced(ctx, inv.Rate/2, cfg.Duration, cfg.InFlight*4, func(ctx context.Context) error {
		pseq.Lock()
		n++
		id, c := "p_"+strconv.Itoa(n), n%nch
		pseq.Unlock()
		return r.invoke(ctx, sessions[c], toolEcho, args[c], id)
	})
	if cfg.Trace != nil {
		trace.Stop()
	}
	if failed > 0 {
		return nil, fmt.Errorf("invoke: %d calls failed at half of peak", failed)
	}
	inv.Extra = append(inv.Extra, pacedMetrics("at_half_peak", "ms (goal <= 2)", paced)...)
	// The raw echo's tail at this very rate, right after: how much of the
	// tail above is the socket, the library and the scheduler of this
	// machine, and how much is xconn.
	echo, err := pacedEcho(ctx, cfg, inv.Rate/2)
	if err != nil {
		return nil, fmt.Errorf("invoke: raw echo at the same rate: %w", err)
	}
	inv.Extra = append(inv.Extra, pacedMetrics("at_half_peak_raw_echo", "ms", echo)...)

	// The SDK alone: a wsconn client in place of the host.
	wire, err := r.wire(ctx, nch)
	if err != nil {
		return nil, err
	}
	defer wire.c.close()
	payloads, err := invokePayloads(toolEcho, wire.channels, cfg.MessageSize)
	if err != nil {
		return nil, err
	}
	m, err = runLoad(ctx, load{workers: cfg.InFlight, warmup: cfg.Warmup, duration: cfg.Duration,
		op: func(ctx context.Context, w int) error {
			_, err := wire.c.request(ctx, protocol.TypeToolInvoke, wire.channels[w%nch], payloads[w%nch])
			return err
		}})
	if err != nil {
		return nil, fmt.Errorf("invoke-sdk: %w", err)
	}
	sdk := m.result("invoke-sdk", "op/s")
	sdk.Baseline = nameWSEcho
	return []Result{inv, sdk}, nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// wired is a wsconn client with n signed-in channels of the rig's connector.
type wired struct {
	c        *wireClient
	channels []string
}

// wire dials the connector directly, says hello and signs n channels in.
func (r *rig) wire(ctx context.Context, n int) (*wired, error) {
	c, err := dialWire(ctx, r.baseURL)
	if err != nil {
		return nil, err
	}
	w := &wired{c: c}
	if _, err := c.hello(ctx, benchCardID, ""); err != nil {
		c.close()
		return nil, err
	}
	for range n {
		id, err := c.open(ctx, "")
		if err == nil {
			err = c.signIn(ctx, id)
		}
		if err != nil {
			c.close()
			return nil, err
		}
		w.channels = append(w.channels, id)
	}
	return w, nil
}

// runPing measures ping -> pong through the SDK.
func runPing(ctx context.Context, cfg Config, _ *env) ([]Result, error) {
	dir, clean, err := scenarioDir(cfg, "ping")
	if err != nil {
		return nil, err
	}
	defer clean()
	r, err := newRig(ctx, dir, rigOptions{noHost: true})
	if err != nil {
		return nil, err
	}
	defer r.close()
	w, err := r.wire(ctx, 0)
	if err != nil {
		return nil, err
	}
	defer w.c.close()
	m, err := runLoad(ctx, load{workers: cfg.InFlight, warmup: cfg.Warmup, duration: cfg.Duration,
		op: func(ctx context.Context, _ int) error {
			_, err := w.c.request(ctx, protocol.TypePing, "", protocol.EmptyPayload{})
			return err
		}})
	if err != nil {
		return nil, fmt.Errorf("ping: %w", err)
	}
	res := m.result("ping", "op/s")
	res.Baseline, res.Goal = nameWSEcho, ">= 0.9"
	return []Result{res}, nil
}

// runInvokeSlow measures a 20 ms handler over 1, 8 and 64 channels with
// InFlight calls in flight and a ping every PingInterval on the same socket.
func runInvokeSlow(ctx context.Context, cfg Config, _ *env) ([]Result, error) {
	var out []Result
	for _, n := range cfg.SlowChannels {
		res, err := slowOnce(ctx, cfg, n, 0)
		if err != nil {
			return out, err
		}
		out = append(out, res)
		if n > connector.DefaultWorkers {
			res, err := slowOnce(ctx, cfg, n, n)
			if err != nil {
				return out, err
			}
			out = append(out, res)
		}
	}
	return out, nil
}

func slowOnce(ctx context.Context, cfg Config, n, workers int) (Result, error) {
	name := "invoke-slow/" + strconv.Itoa(n)
	if workers > 0 {
		name += "/workers=" + strconv.Itoa(workers)
	}
	dir, clean, err := scenarioDir(cfg, "invoke-slow")
	if err != nil {
		return Result{}, err
	}
	defer clean()
	r, err := newRig(ctx, dir, rigOptions{noHost: true, handlerLatency: cfg.HandlerLatency, workers: workers})
	if err != nil {
		return Result{}, err
	}
	defer r.close()
	w, err := r.wire(ctx, n)
	if err != nil {
		return Result{}, err
	}
	defer w.c.close()
	payloads, err := invokePayloads(toolSlow, w.channels, cfg.MessageSize)
	if err != nil {
		return Result{}, err
	}
	// Pings on the same socket, every PingInterval, for the whole load.
	pctx, stopPings := context.WithCancel(ctx)
	var pings Histogram
	var pingErr error
	pingDone := make(chan struct{})
	go func() {
		defer close(pingDone)
		t := time.NewTicker(cfg.PingInterval)
		defer t.Stop()
		for {
			select {
			case <-pctx.Done():
				return
			case <-t.C:
			}
			start := time.Now()
			if _, err := w.c.request(pctx, protocol.TypePing, "", protocol.EmptyPayload{}); err != nil {
				if pctx.Err() == nil {
					pingErr = err
				}
				return
			}
			pings.Record(time.Since(start))
		}
	}()
	m, err := runLoad(ctx, load{workers: cfg.InFlight, warmup: cfg.Warmup, duration: cfg.Duration,
		op: func(ctx context.Context, i int) error {
			_, err := w.c.request(ctx, protocol.TypeToolInvoke, w.channels[i%n], payloads[i%n])
			return err
		}})
	stopPings()
	<-pingDone
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", name, err)
	}
	if pingErr != nil {
		return Result{}, fmt.Errorf("%s: ping: %w", name, pingErr)
	}
	res := m.result(name, "op/s")
	ideal := float64(n) / cfg.HandlerLatency.Seconds()
	res.Ratio, res.Goal, res.Baseline = res.Rate/ideal, ">= 0.9", "ideal "+strconv.Itoa(n)+"/"+cfg.HandlerLatency.String()
	res.Extra = []Metric{
		{Name: "ping_p50", Value: ms(pings.Quantile(0.5)), Unit: "ms"},
		{Name: "ping_p99", Value: ms(pings.Quantile(0.99)), Unit: "ms (goal <= 5)"},
		{Name: "pings", Value: float64(pings.Count()), Unit: ""},
	}
	return res, nil
}
