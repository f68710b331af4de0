// Package xtrace is xconn's OpenTelemetry plumbing: a TracerProvider built
// from the standard OTEL_* environment (off when no endpoint is set), W3C
// Trace Context carried in the envelope members x-traceparent and
// x-tracestate, and a bounded record that links a message's trace across
// the durable outbox hop.
//
// Nothing here touches the global otel state: a provider is handed to the
// connector and the host in their options, and its Shutdown belongs to
// whoever built it. A nil [Tracer] is tracing off; every helper is a cheap
// no-op then, so the hot paths pay one nil check.
package xtrace

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Scope is the instrumentation scope name of xconn's spans.
const Scope = "github.com/xconn/xconn"

// Tracer is the tracer of one component, or nil when tracing is off.
type Tracer struct {
	t trace.Tracer
}

// New returns the tracer of tp, or nil when tp is nil or a no-op provider
// (tracing off: the caller's hot paths then skip all span work).
func New(tp trace.TracerProvider) *Tracer {
	if p, ok := tp.(*Provider); ok {
		if p == nil {
			return nil
		}
		tp = p.TracerProvider
	}
	if tp == nil {
		return nil
	}
	if _, ok := tp.(noop.TracerProvider); ok {
		return nil
	}
	return &Tracer{t: tp.Tracer(Scope)}
}

// off is the span returned when tracing is off: ending it does nothing and
// converting it to the interface allocates nothing.
var off trace.Span = noop.Span{}

// Start starts a span named name as a child of ctx's span. With t nil it
// returns ctx unchanged and a span whose methods do nothing.
func (t *Tracer) Start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t == nil {
		return ctx, off
	}
	return t.t.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// StartLinked starts a span as a child of parent (when valid; else of
// ctx's span) under ctx: it continues a trace recorded earlier, across an
// asynchronous hop such as the outbox.
func (t *Tracer) StartLinked(ctx context.Context, parent trace.SpanContext, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t == nil {
		return ctx, off
	}
	if parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	return t.t.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// Enabled reports whether t records spans.
func (t *Tracer) Enabled() bool { return t != nil }

// End records err on span (status Error, with the error's text, which the
// callers keep secret-free) and ends it.
func End(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Current returns the span context of ctx's span (invalid when none).
func Current(ctx context.Context) trace.SpanContext {
	return trace.SpanContextFromContext(ctx)
}
