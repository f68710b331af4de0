package host

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/internal/xtrace"
	"github.com/xconn/xconn/protocol"
)

// Span attribute keys of the host's spans; values never carry a secret
// (no payload, no text, no API key).
const (
	attrCardID   = attribute.Key("xconn.card_id")
	attrChannel  = attribute.Key("xconn.channel_id")
	attrUserChan = attribute.Key("xconn.user_channel_id")
	attrPacketID = attribute.Key("xconn.packet_id")
	attrMessage  = attribute.Key("xconn.message_id")
)

// packetSpan starts the span of one packet the host handles, named after
// its type and continuing the trace context the connector put in the
// envelope (x-traceparent). With tracing off it returns ctx and a no-op
// span.
func (s *session) packetSpan(ctx context.Context, env *protocol.Envelope) (context.Context, trace.Span) {
	t := s.rt.h.tracer
	if t == nil {
		return ctx, noSpan
	}
	return t.Start(t.Extract(ctx, env), env.Type, trace.SpanKindConsumer,
		attrCardID.String(s.rt.cardID), attrChannel.String(env.ConnectorChannelID), attrPacketID.String(env.PacketID))
}

var noSpan = trace.SpanFromContext(context.Background())

// requestSpan starts the client span of a request the host sends (tool
// invocations, sign-in, channel packets) and puts its trace context in env.
func (s *session) requestSpan(ctx context.Context, env *protocol.Envelope) (context.Context, trace.Span) {
	t := s.rt.h.tracer
	if t == nil {
		return ctx, noSpan
	}
	ctx, span := t.Start(ctx, env.Type, trace.SpanKindClient,
		attrCardID.String(s.rt.cardID), attrChannel.String(env.ConnectorChannelID), attrPacketID.String(env.PacketID))
	t.Inject(ctx, env)
	return ctx, span
}

// enqueueFinal stores an assistant final in the outbox under a
// "store.commit outbox" span and records the trace context for its send.
func (h *Host) enqueueFinal(ctx context.Context, ucID, msgID string, payload []byte) error {
	if h.tracer == nil {
		_, err := h.outbox.Enqueue(ctx, ucID, msgID, payload)
		return err
	}
	// Recorded before the commit: the outbox may send the final as soon
	// as it is committed, before Enqueue returns.
	h.links.Put(ucID, msgID, xtrace.Current(ctx))
	sctx, span := h.tracer.Start(ctx, "store.commit outbox", trace.SpanKindInternal, attrUserChan.String(ucID), attrMessage.String(msgID))
	res, err := h.outbox.Enqueue(sctx, ucID, msgID, payload)
	xtrace.End(span, err)
	if err != nil || res.Status != delivery.Enqueued {
		h.links.Remove(ucID, msgID) // not queued by this call
	}
	return err
}

// sendSpan starts the span of one attempt to send a pending final, a
// child of the span under which the Agent produced it.
func (h *Host) sendSpan(ctx context.Context, e delivery.Entry, env *protocol.Envelope) (context.Context, trace.Span) {
	if h.tracer == nil {
		return ctx, noSpan
	}
	ctx, span := h.tracer.StartLinked(ctx, h.links.Get(e.Channel, e.MessageID), "chat.message send", trace.SpanKindProducer,
		attrUserChan.String(e.Channel), attrMessage.String(e.MessageID), attrPacketID.String(env.PacketID))
	h.tracer.Inject(ctx, env)
	return ctx, span
}

// endSend ends a send span; a final done with forgets its trace context.
func (h *Host) endSend(span trace.Span, e delivery.Entry, err error) {
	if h.tracer == nil {
		return
	}
	if pe := protocol.AsError(err); err == nil || (pe != nil && !pe.Retryable) {
		h.links.Remove(e.Channel, e.MessageID)
	}
	xtrace.End(span, err)
}
