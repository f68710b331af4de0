package bench

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Row names of the latency scenario; each comes twice, at rest and with
// the suffix nameBackToBack.
const (
	nameLatencyIn     = "latency/inbound"
	nameLatencyOut    = "latency/outbound"
	nameRabbitLatency = nameRabbitMQ + "/latency"
	nameJSLatency     = nameJetStream + "/latency"
	nameBackToBack    = "/back-to-back"
)

// latencyPause is the pause of the at-rest latency rows between an ack
// and the next message: a chat user's next message meets a system whose
// bookkeeping of the previous one is done (the sender's outcome commit,
// its delivery worker handing the channel back), and with no pause the
// next message measured that bookkeeping too.
const latencyPause = time.Millisecond

// runLatency measures what a chat user feels at light load: one channel,
// one message at a time (the next is sent once the previous was acked),
// the latency from the user's post (Channel.Publish) to the Agent's
// handler and from the Agent's final (ReplyStream.Final) to the
// connector's target handler; next to it the same load on the two brokers,
// publish -> consumer handler. Every row is measured twice: at rest (a
// pause of latencyPause after each ack) and back to back (no pause).
func runLatency(ctx context.Context, cfg Config, e *env) ([]Result, error) {
	var out []Result
	for _, v := range []struct {
		suffix string
		pause  time.Duration
	}{{"", latencyPause}, {nameBackToBack, 0}} {
		l := chatLoad{channels: 1, window: 1, pause: v.pause}
		for _, b := range []struct {
			name string
			broker
		}{{nameRabbitLatency + v.suffix, rabbitBroker()}, {nameJSLatency + v.suffix, jetStreamBroker()}} {
			res, err := runBrokerAt(ctx, cfg, b.name, l, b.open(cfg))
			if se := (*skipError)(nil); errors.As(err, &se) {
				out = append(out, Result{Name: b.name, Skipped: se.Error()})
				continue
			}
			if err != nil {
				return out, fmt.Errorf("%s: %w", b.name, err)
			}
			res.Extra = append(res.Extra, Metric{Name: "fsync", Text: b.fsync})
			out = append(out, res)
		}
		js, rabbit := nameJSLatency+v.suffix, nameRabbitLatency+v.suffix
		for _, x := range []struct {
			name string
			run  func(ctx context.Context, cfg Config, e *env, l chatLoad, name string) (Result, error)
		}{{nameLatencyIn + v.suffix, runInboundAt}, {nameLatencyOut + v.suffix, runOutboundAt}} {
			res, err := x.run(ctx, cfg, e, l, x.name)
			if err != nil {
				return out, fmt.Errorf("%s: %w", x.name, err)
			}
			res.Baseline, res.Also = js, []string{rabbit}
			res.Goal = "p50 <= 2 x jetstream's"
			res.checks = []goalCheck{{against: js, kind: goalP50, factor: 2}, {against: rabbit, kind: goalP50, factor: 1}}
			if v.pause > 0 {
				res.Extra = append(res.Extra, Metric{Name: "pause_after_ack", Value: float64(v.pause.Microseconds()), Unit: "µs"})
			}
			out = append(out, res)
		}
	}
	return out, nil
}
