package connector

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xconn/xconn/delivery"
)

// deliveryCollector exports the outbox counters (IM v1 section 7.2: TTL,
// capacity, pending, attempts, deliveries, expirations, evictions,
// failures) and the live sign-in sessions, read at scrape time.
type deliveryCollector struct {
	s                                                             *Server
	pending, attempts, deliveries, expirations, evictions, failed *prometheus.Desc
	ttl, capacity, authSessions                                   *prometheus.Desc
}

func newDeliveryCollector(s *Server) *deliveryCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("xconn_connector_"+name, help, labels, nil)
	}
	return &deliveryCollector{
		s:            s,
		pending:      d("outbox_pending", "Messages pending in the outbox.", "queue"),
		attempts:     d("outbox_attempts_total", "Send attempts.", "queue"),
		deliveries:   d("outbox_deliveries_total", "Messages accepted or duplicate.", "queue"),
		expirations:  d("outbox_expirations_total", "Messages expired before a terminal ack.", "queue"),
		evictions:    d("outbox_evictions_total", "Messages evicted at capacity (capacity_exceeded).", "queue"),
		failed:       d("outbox_failures_total", "Messages rejected with retryable=false.", "queue"),
		ttl:          d("outbox_ttl_seconds", "Effective message TTL.", "queue"),
		capacity:     d("outbox_capacity", "Pending messages kept per channel.", "queue"),
		authSessions: d("auth_sessions", "Live sign-in sessions."),
	}
}

// Describe implements prometheus.Collector.
func (c *deliveryCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.pending, c.attempts, c.deliveries, c.expirations, c.evictions, c.failed, c.ttl, c.capacity, c.authSessions} {
		ch <- d
	}
}

// Collect implements prometheus.Collector; it reads storage at scrape time.
func (c *deliveryCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, ob := range []*delivery.Outbox{c.s.outbox, c.s.outv1} {
		st, err := ob.Stats(ctx)
		if err != nil {
			continue
		}
		q := st.Queue
		ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(st.Pending), q)
		ch <- prometheus.MustNewConstMetric(c.attempts, prometheus.CounterValue, float64(st.Attempts), q)
		ch <- prometheus.MustNewConstMetric(c.deliveries, prometheus.CounterValue, float64(st.Deliveries), q)
		ch <- prometheus.MustNewConstMetric(c.expirations, prometheus.CounterValue, float64(st.Expirations), q)
		ch <- prometheus.MustNewConstMetric(c.evictions, prometheus.CounterValue, float64(st.Evictions), q)
		ch <- prometheus.MustNewConstMetric(c.failed, prometheus.CounterValue, float64(st.Failures), q)
		ch <- prometheus.MustNewConstMetric(c.ttl, prometheus.GaugeValue, st.TTL.Seconds(), q)
		ch <- prometheus.MustNewConstMetric(c.capacity, prometheus.GaugeValue, float64(st.Capacity), q)
	}
	ch <- prometheus.MustNewConstMetric(c.authSessions, prometheus.GaugeValue, float64(c.s.auth.len()))
}
