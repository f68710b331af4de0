package xtrace

import (
	"context"
	"encoding/json"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/xconn/xconn/protocol"
)

// Limits on what is read from a peer's envelope. A traceparent is 55
// characters in version 00; W3C Trace Context bounds tracestate at 32
// members of at most 256 characters, and recommends propagating at least
// 512 characters of it.
const (
	maxTraceparent = 128
	maxTracestate  = 512
)

var propagator = propagation.TraceContext{}

// envCarrier maps the W3C header names onto the envelope's extension
// members.
type envCarrier struct{ env *protocol.Envelope }

func member(key string) (string, int) {
	switch key {
	case "traceparent":
		return protocol.ExtTraceparent, maxTraceparent
	case "tracestate":
		return protocol.ExtTracestate, maxTracestate
	}
	return "", 0
}

func (c envCarrier) Get(key string) string {
	name, limit := member(key)
	raw, ok := c.env.Extensions[name]
	if name == "" || !ok || len(raw) > limit+16 { // +16: quotes and a few escapes
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil || len(s) > limit {
		return "" // not a string, or too long: ignored, as an unknown member would be
	}
	return s
}

func (c envCarrier) Set(key, value string) {
	name, limit := member(key)
	if name == "" || value == "" || len(value) > limit {
		return
	}
	b, err := json.Marshal(value)
	if err != nil {
		return
	}
	if c.env.Extensions == nil {
		c.env.Extensions = protocol.Extensions{}
	}
	c.env.Extensions[name] = b
}

func (c envCarrier) Keys() []string { return []string{"traceparent", "tracestate"} }

// Inject writes the span context of ctx into env's x-traceparent and
// x-tracestate members. It does nothing when t is nil (tracing off) or ctx
// carries no valid span context, so untraced packets keep their exact
// bytes (and the SDK's one-pass encoding).
func (t *Tracer) Inject(ctx context.Context, env *protocol.Envelope) {
	if t == nil || env == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagator.Inject(ctx, envCarrier{env})
}

// Extract returns ctx carrying the remote span context found in env's
// x-traceparent and x-tracestate members; a missing or malformed value
// leaves ctx as it is. It does nothing when t is nil.
func (t *Tracer) Extract(ctx context.Context, env *protocol.Envelope) context.Context {
	if t == nil || env == nil || len(env.Extensions) == 0 {
		return ctx
	}
	return propagator.Extract(ctx, envCarrier{env})
}

// InjectSpanContext is Inject for a recorded span context rather than a
// context's.
func (t *Tracer) InjectSpanContext(sc trace.SpanContext, env *protocol.Envelope) {
	if t == nil || !sc.IsValid() {
		return
	}
	t.Inject(trace.ContextWithSpanContext(context.Background(), sc), env)
}

// InjectHeader writes the span context of ctx into h as the W3C
// traceparent and tracestate headers of an outgoing HTTP request (to a
// model server or a target API), so a traced peer continues the trace. It
// does nothing when t is nil or ctx carries no valid span context.
func (t *Tracer) InjectHeader(ctx context.Context, h http.Header) {
	if t == nil || h == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagator.Inject(ctx, propagation.HeaderCarrier(h))
}
