package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jetStreamFsync is the durability of the JetStream baseline, printed next
// to its figures.
const jetStreamFsync = "file storage, server default sync_interval (2 min): a publish is acked once written to the stream's file, fsync in the background; survives a crash of the server process, not of the machine"

// jsSession is the JetStream baseline at one channel count: one stream
// with file storage and work-queue retention, a subject per chat channel,
// publishes that wait for the stream's ack, and one pull consumer with
// explicit acks whose pending acks are bounded by the window of every
// channel.
type jsSession struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	stream string
	subj   string
	cc     jetstream.ConsumeContext
}

// jsMinPull is the smallest pull batch of the consumer: MaxAckPending
// bounds the window, and a pull of one message at a time (the latency
// row's window) left a message waiting for the next pull request now and
// then (once in 8,621 in one run, 10 s).
const jsMinPull = 64

func openJetStream(ctx context.Context, url string, n int, d *chatDriver) (_ *jsSession, err error) {
	nc, err := nats.Connect(url, nats.Timeout(brokerDialTimeout), nats.MaxReconnects(0), nats.Name("xconn bench"))
	if err != nil {
		return nil, &skipError{fmt.Errorf("NATS at %s does not answer: %w", redactURL(url), err)}
	}
	s := &jsSession{nc: nc}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.js, err = jetstream.New(nc); err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	id := brokerRunID()
	s.stream, s.subj = "XCONN_BENCH_"+strings.ToUpper(id), "xconnbench."+id+"."
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := s.js.CreateStream(actx, jetstream.StreamConfig{Name: s.stream, Subjects: []string{s.subj + "*"},
		Storage: jetstream.FileStorage, Retention: jetstream.WorkQueuePolicy})
	if err != nil {
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			s.stream = ""
			return nil, &skipError{fmt.Errorf("NATS at %s has JetStream off: %w", redactURL(url), err)}
		}
		return nil, fmt.Errorf("jetstream: create stream: %w", err)
	}
	window := d.perChannel * n
	c, err := st.CreateConsumer(actx, jetstream.ConsumerConfig{Durable: "bench", AckPolicy: jetstream.AckExplicitPolicy,
		MaxAckPending: window})
	if err != nil {
		return nil, fmt.Errorf("jetstream: create consumer: %w", err)
	}
	s.cc, err = c.Consume(func(m jetstream.Msg) {
		d.arrived(string(m.Data()))
		if m.Ack() == nil {
			p, _ := strconv.Atoi(strings.TrimPrefix(m.Subject(), s.subj))
			d.acked(p)
		}
	}, jetstream.PullMaxMessages(max(window, jsMinPull)))
	if err != nil {
		return nil, fmt.Errorf("jetstream: consume: %w", err)
	}
	return s, nil
}

func (s *jsSession) send(ctx context.Context, p int, body []byte) error {
	if _, err := s.js.Publish(ctx, s.subj+strconv.Itoa(p), body); err != nil {
		return fmt.Errorf("jetstream: publish: %w", err)
	}
	return nil
}

func (s *jsSession) close() {
	if s.cc != nil {
		s.cc.Stop()
		<-s.cc.Closed()
	}
	if s.stream != "" && s.js != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = s.js.DeleteStream(ctx, s.stream)
		cancel()
	}
	s.nc.Close()
}
