package connector

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xconn/xconn/protocol"
)

// metrics are the server's Prometheus collectors, on its own registry.
type metrics struct {
	reg                                                       *prometheus.Registry
	sockets, openChannels                                     prometheus.Gauge
	packetsIn, packetsOut, errors, chatAcks, chatAcksIn       *prometheus.CounterVec
	toolCalls                                                 *prometheus.CounterVec
	toolLatency                                               *prometheus.HistogramVec
	dropped, channelsCreated, descriptorPushes                prometheus.Counter
	signins, signinFailures, toolReplays, published           prometheus.Counter
	uploads, uploadsRejected, downloads, filesExpired, leases prometheus.Counter
	busy, unsignedReclaimed, instancesRefused, logsSuppressed prometheus.Counter

	// inByType and outByType are packetsIn and packetsOut curried by every
	// known packet type, so that counting a packet is one map read; they
	// are filled by newMetrics and read-only afterwards.
	inByType, outByType map[string]prometheus.Counter

	tools sync.Map // tool label -> *toolMetrics, filled on first use
}

// toolMetrics are the collectors of one tool label, curried once: the
// calls that succeeded and the latency.
type toolMetrics struct {
	ok      prometheus.Counter
	latency prometheus.Observer
}

// tool returns the curried collectors of a tool label (bounded by
// metricTool to the declared tools). Safe for concurrent use.
func (m *metrics) tool(label string) *toolMetrics {
	if tm, ok := m.tools.Load(label); ok {
		return tm.(*toolMetrics)
	}
	tm, _ := m.tools.LoadOrStore(label, &toolMetrics{
		ok:      m.toolCalls.WithLabelValues(label, "ok"),
		latency: m.toolLatency.WithLabelValues(label),
	})
	return tm.(*toolMetrics)
}

// knownTypes lists every packet type of the common protocol and the
// standard Profiles.
func knownTypes() []string {
	types := []string{
		protocol.TypeHello, protocol.TypeHelloAck, protocol.TypeChannelOpen, protocol.TypeChannelOpenAck,
		protocol.TypeChannelClose, protocol.TypeChannelCloseAck, protocol.TypeAuthStart, protocol.TypeAuthStartAck,
		protocol.TypeAuthStatus, protocol.TypeAuthStatusAck, protocol.TypeAuthCancel, protocol.TypeAuthCancelAck,
		protocol.TypeAuthLogout, protocol.TypeAuthLogoutAck, protocol.TypeDescriptorGet, protocol.TypeDescriptorGetAck,
		protocol.TypeDescriptorPush, protocol.TypeToolInvoke, protocol.TypeToolInvokeAck, protocol.TypeToolProgressPush,
		protocol.TypePing, protocol.TypePong, protocol.TypeError,
	}
	for _, p := range protocol.Profiles() {
		for _, ps := range p.Packets {
			types = append(types, ps.Type)
		}
	}
	return types
}

// packetIn counts one received packet of type t.
func (m *metrics) packetIn(t string) {
	if c, ok := m.inByType[t]; ok {
		c.Inc()
		return
	}
	m.packetsIn.WithLabelValues(metricType(t)).Inc()
}

// packetOut counts one sent packet of type t.
func (m *metrics) packetOut(t string) {
	if c, ok := m.outByType[t]; ok {
		c.Inc()
		return
	}
	m.packetsOut.WithLabelValues(metricType(t)).Inc()
}

func newMetrics() *metrics {
	reg := prometheus.NewRegistry()
	f := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "xconn", Subsystem: "connector", Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	v := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "xconn", Subsystem: "connector", Name: name, Help: help}, labels)
		reg.MustRegister(c)
		return c
	}
	g := func(name, help string) prometheus.Gauge {
		c := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "xconn", Subsystem: "connector", Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	m := &metrics{
		reg:               reg,
		sockets:           g("sockets", "Open data-plane WebSocket connections."),
		openChannels:      g("open_channels", "Channels open on a data-plane connection."),
		packetsIn:         v("packets_received_total", "Packets received, by type.", "type"),
		packetsOut:        v("packets_sent_total", "Packets sent, by type.", "type"),
		errors:            v("errors_sent_total", "Error packets and ack errors sent, by code.", "code"),
		chatAcks:          v("chat_acks_sent_total", "chat.message.ack sent for assistant messages, by status.", "status"),
		chatAcksIn:        v("chat_acks_received_total", "chat.message.ack received for published messages, by status.", "status"),
		toolCalls:         v("tool_calls_total", "Tool invocations, by tool and result code.", "tool", "code"),
		dropped:           f("packets_dropped_total", "Packets of a Profile not negotiated, dropped silently."),
		channelsCreated:   f("channels_created_total", "Channels created by channel.open."),
		descriptorPushes:  f("descriptor_pushes_total", "connection.descriptor.push packets sent."),
		signins:           f("signins_total", "Completed sign-ins."),
		signinFailures:    f("signin_failures_total", "Failed or expired sign-ins."),
		toolReplays:       f("tool_call_replays_total", "Side-effecting tool calls answered from the idempotency record."),
		published:         f("messages_published_total", "Inbound messages put into the outbox."),
		uploads:           f("uploads_total", "Files uploaded to /files/uploads."),
		uploadsRejected:   f("uploads_rejected_total", "Uploads refused for size."),
		downloads:         f("downloads_total", "Files served from /files/refs."),
		filesExpired:      f("files_expired_total", "Files deleted by the sweeper."),
		leases:            f("lease_expirations_total", "connector_id leases that expired and were cleaned up."),
		busy:              f("packets_busy_total", "Requests answered channel_busy because a queue of their socket was full."),
		unsignedReclaimed: f("unsigned_channels_reclaimed_total", "Channels without a sign-in deleted after Options.UnsignedChannelTTL."),
		instancesRefused:  f("instances_refused_total", "Hellos for a new connector_id refused with capacity_exceeded: the instance table was full of connector_ids within their grace."),
		logsSuppressed:    f("log_lines_suppressed_total", "Repetitive warning lines left out by the log rate limit."),
	}
	m.toolLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "xconn", Subsystem: "connector", Name: "tool_call_seconds", Help: "Tool call latency.",
		Buckets: prometheus.DefBuckets,
	}, []string{"tool"})
	reg.MustRegister(m.toolLatency)
	m.inByType, m.outByType = map[string]prometheus.Counter{}, map[string]prometheus.Counter{}
	for _, t := range knownTypes() {
		if metricType(t) != t {
			continue
		}
		m.inByType[t] = m.packetsIn.WithLabelValues(t)
		m.outByType[t] = m.packetsOut.WithLabelValues(t)
	}
	return m
}

// metricCode bounds the code label to the codes xconn defines.
func metricCode(c protocol.Code) string {
	switch c {
	case protocol.CodeInvalidPacket, protocol.CodeHelloRequired, protocol.CodeConnectorCardIDMismatch,
		protocol.CodeConnectorIDMismatch, protocol.CodeChannelNotOpen, protocol.CodeConnectorChannelIDRequired,
		protocol.CodeConnectorChannelNotOwned, protocol.CodeConnectorChannelConnectorMismatch,
		protocol.CodeConnectorChannelUnavailable, protocol.CodeConnectionNotFound, protocol.CodeConnectionNotAuthenticated,
		protocol.CodeAuthSessionNotFound, protocol.CodeToolInvokeFailed, protocol.CodeUnsupportedPacket,
		protocol.CodeUnsupportedProtocolVersion, protocol.CodeTargetDeliveryFailed, protocol.CodeChannelBusy,
		protocol.CodeMessageConflict, protocol.CodeDeltaSequenceInvalid, protocol.CodeUnknownTool,
		protocol.CodeInvalidArguments, protocol.CodeToolCallConflict, protocol.CodeToolTimeout,
		protocol.CodeAuthFlowNotFound, protocol.CodeInvalidAuthInput, protocol.CodeInternal:
		return string(c)
	}
	return "other"
}

// metricType bounds the type label to known packet types.
func metricType(t string) string {
	if _, ok := protocol.LookupPacket(t); ok {
		return t
	}
	return "unknown"
}

// metricStatus bounds the ack status label.
func metricStatus(s protocol.AckStatus) string {
	switch s {
	case protocol.AckAccepted, protocol.AckDuplicate, protocol.AckRejected:
		return s
	}
	return "other"
}
