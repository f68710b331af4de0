package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// rabbitFsync is the durability of the RabbitMQ baseline, printed next to
// its figures.
const rabbitFsync = "quorum queue: a publish is confirmed after the Raft log (WAL) holding it is fsynced on the node's majority (here one node)"

// rabbitSession is the RabbitMQ baseline at one channel count: one quorum
// queue for every chat channel (one FIFO queue with one consumer keeps
// each channel's order; a queue per channel measured half the rate here,
// since each queue's Raft log then fsyncs its own few messages), persistent
// messages published with publisher confirms on an AMQP channel per
// producer, and one consumer with manual acks whose prefetch is the window
// of every channel. The producer's index travels as the correlation id.
type rabbitSession struct {
	pub, sub *amqp.Connection
	pubChs   []*amqp.Channel
	queue    string
	wg       sync.WaitGroup
}

func openRabbit(ctx context.Context, url string, n int, d *chatDriver) (_ *rabbitSession, err error) {
	cfg := amqp.Config{Dial: amqp.DefaultDial(brokerDialTimeout), Heartbeat: 0}
	pub, err := amqp.DialConfig(url, cfg)
	if err != nil {
		return nil, &skipError{fmt.Errorf("RabbitMQ at %s does not answer: %w", redactURL(url), err)}
	}
	s := &rabbitSession{pub: pub}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.sub, err = amqp.DialConfig(url, cfg); err != nil {
		return nil, fmt.Errorf("rabbitmq: %w", err)
	}
	decl, err := s.pub.Channel()
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: channel: %w", err)
	}
	defer decl.Close()
	s.queue = "xconn-bench-" + brokerRunID()
	if _, err := decl.QueueDeclare(s.queue, true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
		s.queue = ""
		return nil, fmt.Errorf("rabbitmq: declare quorum queue: %w", err)
	}
	sub, err := s.sub.Channel()
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: channel: %w", err)
	}
	if err := sub.Qos(d.perChannel*n, 0, false); err != nil {
		return nil, fmt.Errorf("rabbitmq: qos: %w", err)
	}
	msgs, err := sub.ConsumeWithContext(ctx, s.queue, "", false, false, false, false, nil)
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: consume: %w", err)
	}
	s.wg.Go(func() {
		// Ends when the consumer connection closes.
		for m := range msgs {
			d.arrived(string(m.Body))
			if m.Ack(false) == nil {
				p, err := strconv.Atoi(m.CorrelationId)
				if err != nil {
					p = -1
				}
				d.acked(p)
			}
		}
	})
	for range n {
		ch, err := s.pub.Channel()
		if err != nil {
			return nil, fmt.Errorf("rabbitmq: channel: %w", err)
		}
		s.pubChs = append(s.pubChs, ch)
		if err := ch.Confirm(false); err != nil {
			return nil, fmt.Errorf("rabbitmq: confirm mode: %w", err)
		}
	}
	return s, nil
}

func (s *rabbitSession) send(ctx context.Context, p int, body []byte) error {
	dc, err := s.pubChs[p].PublishWithDeferredConfirmWithContext(ctx, "", s.queue, false, false,
		amqp.Publishing{DeliveryMode: amqp.Persistent, ContentType: "text/plain", CorrelationId: strconv.Itoa(p), Body: body})
	if err != nil {
		return fmt.Errorf("rabbitmq: publish: %w", err)
	}
	ok, err := dc.WaitContext(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("rabbitmq: confirm: %w", err)
	case !ok:
		return errors.New("rabbitmq: publish not confirmed (nack)")
	}
	return nil
}

func (s *rabbitSession) close() {
	if s.pub != nil && s.queue != "" {
		if ch, err := s.pub.Channel(); err == nil {
			_, _ = ch.QueueDelete(s.queue, false, false, false)
			_ = ch.Close()
		}
	}
	if s.sub != nil {
		_ = s.sub.Close()
	}
	s.wg.Wait()
	if s.pub != nil {
		_ = s.pub.Close()
	}
}
