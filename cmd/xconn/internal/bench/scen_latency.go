package bench

import (
	"context"
	"fmt"
)

// Row names of the latency scenario.
const (
	nameLatencyIn     = "latency/inbound"
	nameLatencyOut    = "latency/outbound"
	nameRabbitLatency = nameRabbitMQ + "/latency"
	nameJSLatency     = nameJetStream + "/latency"
)

// runLatency measures what a chat user feels at light load: one channel,
// one message at a time (the next is sent once the previous was acked),
// the latency from the user's post (Channel.Publish) to the Agent's
// handler and from the Agent's final (ReplyStream.Final) to the
// connector's target handler; next to it the same load on the two brokers,
// publish -> consumer handler.
func runLatency(ctx context.Context, cfg Config, e *env) ([]Result, error) {
	var out []Result
	for _, b := range []struct {
		name string
		broker
	}{{nameRabbitLatency, rabbitBroker()}, {nameJSLatency, jetStreamBroker()}} {
		res, err := runBrokerAt(ctx, cfg, b.name, 1, 1, b.open(cfg))
		if se, ok := err.(*skipError); ok {
			out = append(out, Result{Name: b.name, Skipped: se.Error()})
			continue
		}
		if err != nil {
			return out, fmt.Errorf("%s: %w", b.name, err)
		}
		res.Extra = append(res.Extra, Metric{Name: "fsync", Text: b.fsync})
		out = append(out, res)
	}
	for _, x := range []struct {
		name string
		run  func(ctx context.Context, cfg Config, e *env, n, window int, name string) (Result, error)
	}{{nameLatencyIn, runInboundAt}, {nameLatencyOut, runOutboundAt}} {
		res, err := x.run(ctx, cfg, e, 1, 1, x.name)
		if err != nil {
			return out, fmt.Errorf("%s: %w", x.name, err)
		}
		res.Baseline, res.Also = nameJSLatency, []string{nameRabbitLatency}
		res.Goal = "p50 <= 2 x jetstream's"
		res.checks = []goalCheck{{against: nameJSLatency, kind: goalP50, factor: 2},
			{against: nameRabbitLatency, kind: goalP50, factor: 1}}
		out = append(out, res)
	}
	return out, nil
}
