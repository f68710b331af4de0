package connector

import (
	"context"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/internal/xtrace"
	"github.com/xconn/xconn/protocol"
)

// Span attribute keys of the SDK's spans. Values never carry a secret: no
// URL path or query of a target (a token may live there), no message text.
const (
	attrChannel  = attribute.Key("xconn.channel_id")
	attrPacketID = attribute.Key("xconn.packet_id")
	attrMessage  = attribute.Key("xconn.message_id")
	attrCardID   = attribute.Key("xconn.card_id")
	attrAck      = attribute.Key("xconn.ack_status")
)

// packetSpan starts the span of one packet handled: named after the
// packet's type, a child of the trace context the sender put in the
// envelope (x-traceparent), else a root. With tracing off it returns
// sess.ctx and a no-op span.
func (sess *session) packetSpan(env *protocol.Envelope) (context.Context, trace.Span) {
	t := sess.srv.tracer
	if t == nil || env == nil {
		return sess.ctx, noSpan
	}
	ctx := t.Extract(sess.ctx, env)
	return t.Start(ctx, metricType(env.Type), trace.SpanKindConsumer,
		attrChannel.String(env.ConnectorChannelID), attrPacketID.String(env.PacketID))
}

var noSpan = trace.SpanFromContext(context.Background())

// tracedHTTP wraps a control-plane or transfer-plane handler in a server
// span named after its route (never the path: a file_ref is a capability).
func (s *Server) tracedHTTP(route string, h http.HandlerFunc) http.HandlerFunc {
	if s.tracer == nil {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, span := s.tracer.Start(r.Context(), "HTTP "+r.Method+" "+route, trace.SpanKindServer,
			attribute.String("http.request.method", r.Method), attribute.String("http.route", route))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h(sw, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", sw.code))
		if sw.code >= 500 {
			span.SetStatus(codes.Error, strconv.Itoa(sw.code))
		}
	}
}

// statusWriter records the status code written.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the underlying writer (write
// deadlines, flush).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// targetTransport records one client span per request to a target API:
// its method, host and status; the path and query stay out (a target such
// as Telegram keeps its token in the path).
type targetTransport struct {
	base   http.RoundTripper
	tracer *xtrace.Tracer
}

func (t *targetTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, span := t.tracer.Start(r.Context(), "target "+r.Method, trace.SpanKindClient,
		attribute.String("http.request.method", r.Method), attribute.String("server.address", r.URL.Hostname()))
	defer span.End()
	r = r.WithContext(ctx)
	if span.SpanContext().IsValid() {
		r.Header = r.Header.Clone() // a RoundTripper must not modify the caller's request
		t.tracer.InjectHeader(ctx, r.Header)
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		span.SetStatus(codes.Error, "request failed") // the error may quote the URL
		return nil, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		span.SetStatus(codes.Error, strconv.Itoa(resp.StatusCode))
	}
	return resp, nil
}

// CloseIdleConnections passes through to the wrapped transport, which
// TargetAPI's Close relies on.
func (t *targetTransport) CloseIdleConnections() {
	type closer interface{ CloseIdleConnections() }
	if c, ok := t.base.(closer); ok {
		c.CloseIdleConnections()
	}
}

// traceTarget wraps a target transport when tracing is on.
func (s *Server) traceTarget(rt http.RoundTripper) http.RoundTripper {
	if s.tracer == nil {
		return rt
	}
	return &targetTransport{base: rt, tracer: s.tracer}
}

// enqueueTraced stores a published message in the outbox under a
// "store.commit outbox" span and records the trace context for its send.
func (s *Server) enqueueTraced(ctx context.Context, id, msgID string, payload []byte) (delivery.EnqueueResult, error) {
	if s.tracer == nil {
		return s.outbox.Enqueue(ctx, id, msgID, payload)
	}
	// Recorded before the commit: the outbox may send the message as
	// soon as it is committed, before Enqueue returns.
	s.links.Put(id, msgID, xtrace.Current(ctx))
	sctx, span := s.tracer.Start(ctx, "store.commit outbox", trace.SpanKindInternal, attrChannel.String(id), attrMessage.String(msgID))
	res, err := s.outbox.Enqueue(sctx, id, msgID, payload)
	xtrace.End(span, err)
	if err != nil || res.Status != delivery.Enqueued {
		s.links.Remove(id, msgID) // not queued by this call
	}
	return res, err
}

// endSend ends the span of one chat.message attempt; a message done with
// (delivered, or failed for good) forgets its recorded trace context.
func (s *Server) endSend(span trace.Span, e delivery.Entry, err error) {
	if err == nil || !IsTemporary(err) {
		s.links.Remove(e.Channel, e.MessageID)
	}
	xtrace.End(span, err)
}
