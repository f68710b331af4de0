package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// Broker baselines: what a user would put between a chat app and an agent
// instead of xconn. Each runs the chat scenarios' load on a message broker
// (the same channel counts, chatPendingPerChannel unacked messages per
// channel, MessageSize-byte messages, durable and acked end to end): a
// producer per channel publishes and waits until the broker confirms the
// message stored (as Channel.Publish returns after its commit), a consumer
// takes it, acks it, and only that ack frees the producer's slot. The
// latency is from the publish to the consumer's handler, as the chat rows'
// is from the publish to the receiving handler.

// Row names of the broker baselines; a row per channel count gets "/N".
const (
	nameRabbitMQ  = "baseline/rabbitmq-quorum"
	nameJetStream = "baseline/jetstream-file"
)

// Default broker addresses (the services this project's machines run).
const (
	DefaultRabbitMQURL = "amqp://guest:guest@127.0.0.1:5672/"
	DefaultNATSURL     = "nats://127.0.0.1:4222"
)

// brokerDialTimeout bounds the connection to a broker: one that does not
// answer by then is reported skipped.
const brokerDialTimeout = 3 * time.Second

// brokerSession is one broker baseline's connections, queues and
// consumers at one channel count. send publishes body on channel p and
// returns once the broker confirmed it durable; close deletes what the
// session declared and closes its connections.
type brokerSession interface {
	send(ctx context.Context, p int, body []byte) error
	close()
}

// brokerOpen connects to a broker and declares n channels whose consumers
// report to d (d.arrived with the body, then d.acked(p) after the ack).
// An error wrapped in skipError means the broker did not answer.
type brokerOpen func(ctx context.Context, n int, d *chatDriver) (brokerSession, error)

// skipError marks a baseline that could not run because its broker is not
// there; the row is reported skipped with the reason.
type skipError struct{ err error }

func (e *skipError) Error() string { return e.err.Error() }
func (e *skipError) Unwrap() error { return e.err }

// broker is one broker baseline: its row name, its durability note and
// how a session at n channels opens.
type broker struct {
	name, fsync string
	open        func(cfg Config) brokerOpen
}

// rabbitBroker is the RabbitMQ baseline (base_rabbitmq.go).
func rabbitBroker() broker {
	return broker{nameRabbitMQ, rabbitFsync, func(cfg Config) brokerOpen {
		return func(ctx context.Context, n int, d *chatDriver) (brokerSession, error) {
			return openRabbit(ctx, cfg.RabbitMQURL, n, d)
		}
	}}
}

// jetStreamBroker is the NATS JetStream baseline (base_jetstream.go).
func jetStreamBroker() broker {
	return broker{nameJetStream, jetStreamFsync, func(cfg Config) brokerOpen {
		return func(ctx context.Context, n int, d *chatDriver) (brokerSession, error) {
			return openJetStream(ctx, cfg.NATSURL, n, d)
		}
	}}
}

// scenario returns the registry's run function of b: the chat load at
// every chat channel count (skipped when the broker does not answer).
func (b broker) scenario() func(ctx context.Context, cfg Config, _ *env) ([]Result, error) {
	return func(ctx context.Context, cfg Config, _ *env) ([]Result, error) {
		return runBrokerRows(ctx, cfg, b.name, b.fsync, cfg.ChatChannels, chatPendingPerChannel, b.open(cfg))
	}
}

// runBrokerRows measures the broker baseline name at every chat channel
// count with window unacked messages per channel: one row per count, or one
// skipped row when the broker does not answer.
func runBrokerRows(ctx context.Context, cfg Config, name, fsync string, counts []int, window int, open brokerOpen) ([]Result, error) {
	var out []Result
	for _, n := range counts {
		row := name + "/" + strconv.Itoa(n)
		res, err := runBrokerAt(ctx, cfg, row, chatLoad{channels: n, window: window}, open)
		if se := (*skipError)(nil); errors.As(err, &se) {
			// The broker is not there: one skipped row says why, and the
			// other counts would say the same.
			return append(out, Result{Name: name, Skipped: se.Error()}), nil
		}
		if err != nil {
			return out, fmt.Errorf("%s: %w", row, err)
		}
		res.Extra = append(res.Extra, Metric{Name: "fsync", Text: fsync})
		out = append(out, res)
	}
	return out, nil
}

// runBrokerAt runs the warm-up and the measurement of one broker baseline
// row.
func runBrokerAt(ctx context.Context, cfg Config, name string, l chatLoad, open brokerOpen) (Result, error) {
	n := l.channels
	d := newChatDriver(0, l)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	d.bind(ids)
	s, err := open(ctx, n, d)
	if err != nil {
		return Result{}, err
	}
	defer s.close()
	send := func(ctx context.Context, p int, key string) error {
		return s.send(ctx, p, []byte(chatText(key, cfg.MessageSize)))
	}
	if _, err := d.run(ctx, n, cfg.Warmup, send); err != nil {
		return Result{}, fmt.Errorf("warm-up: %w", err)
	}
	cpu0 := cpuTime()
	m, err := d.run(ctx, n, cfg.Duration, send)
	if err != nil {
		return Result{}, err
	}
	cpu1 := cpuTime()
	res := m.result(name, "msg/s")
	if m.ops > 0 && cpu1 > cpu0 {
		res.Extra = append(res.Extra, Metric{Name: "client_cpu_per_msg", Value: round2(float64(cpu1-cpu0) / float64(m.ops) / 1e3),
			Unit: "µs (this process: the broker clients; the broker's own CPU is not counted)"})
	}
	for _, n := range m.notes() {
		if n.Name != "chat_message_packets_on_wire" { // xconn's packets: none here
			res.Extra = append(res.Extra, n)
		}
	}
	return res, nil
}

// brokerRunID names the queues and streams of one run.
func brokerRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// redactURL returns u without its password, for messages.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "the configured URL"
	}
	return p.Redacted()
}
