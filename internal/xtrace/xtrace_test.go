package xtrace

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/goleak"

	"github.com/xconn/xconn/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newRecorder(t *testing.T) (*Tracer, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return New(tp), exp
}

func TestNewOff(t *testing.T) {
	for name, tp := range map[string]trace.TracerProvider{"nil": nil, "noop": noop.NewTracerProvider()} {
		tr := New(tp)
		if tr != nil {
			t.Fatalf("%s: New = %v, want nil (off)", name, tr)
		}
		ctx := context.Background()
		got, span := tr.Start(ctx, "x", trace.SpanKindInternal)
		if got != ctx || span.IsRecording() {
			t.Fatalf("%s: Start with tracing off changed the context or records", name)
		}
		End(span, io.EOF)
		env := &protocol.Envelope{Type: "ping"}
		tr.Inject(ctx, env)
		if env.Extensions != nil {
			t.Fatalf("%s: Inject with tracing off wrote %v", name, env.Extensions)
		}
	}
}

func TestInjectExtractRoundTrip(t *testing.T) {
	tr, exp := newRecorder(t)
	ctx, span := tr.Start(context.Background(), "send", trace.SpanKindProducer)
	env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: "p1", ConnectorChannelID: "ch", Type: protocol.TypeChatMessage, Payload: json.RawMessage(`{"message_id":"m"}`)}
	tr.Inject(ctx, env)
	span.End()
	frame, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(frame), `"x-traceparent":"00-`) {
		t.Fatalf("frame %s has no x-traceparent", frame)
	}
	if vs := protocol.ValidateEnvelope(env); len(vs) > 0 {
		t.Fatalf("envelope with trace members fails validation: %v", vs)
	}
	got, err := protocol.DecodeEnvelope(frame)
	if err != nil {
		t.Fatal(err)
	}
	rctx := tr.Extract(context.Background(), got)
	sc := trace.SpanContextFromContext(rctx)
	want := exp.GetSpans()[0].SpanContext
	if !sc.IsRemote() || sc.TraceID() != want.TraceID() || sc.SpanID() != want.SpanID() {
		t.Fatalf("extracted %v, want remote %v", sc, want)
	}
	_, child := tr.Start(rctx, "handle", trace.SpanKindConsumer)
	child.End()
	spans := exp.GetSpans()
	if spans[1].Parent.SpanID() != want.SpanID() || spans[1].SpanContext.TraceID() != want.TraceID() {
		t.Fatalf("child parent = %v, want %v", spans[1].Parent, want)
	}
}

func TestExtractIgnoresHostileValues(t *testing.T) {
	tr, _ := newRecorder(t)
	cases := map[string]string{
		"not a string":   `{"x-traceparent":42}`,
		"malformed":      `{"x-traceparent":"00-zz-yy-01"}`,
		"too long":       `{"x-traceparent":"` + strings.Repeat("a", 4096) + `"}`,
		"all zero trace": `{"x-traceparent":"00-00000000000000000000000000000000-0000000000000000-01"}`,
		"null":           `{"x-traceparent":null}`,
	}
	for name, ext := range cases {
		t.Run(name, func(t *testing.T) {
			frame := `{"schema":"xagent.connector.packet/v1","packet_id":"p","type":"ping",` + ext[1:]
			env, err := protocol.DecodeEnvelope([]byte(frame))
			if err != nil {
				t.Fatal(err)
			}
			if sc := trace.SpanContextFromContext(tr.Extract(context.Background(), env)); sc.IsValid() {
				t.Fatalf("hostile %s gave a valid span context %v", name, sc)
			}
		})
	}
}

func TestLinksBounded(t *testing.T) {
	tr, _ := newRecorder(t)
	ctx, span := tr.Start(context.Background(), "publish", trace.SpanKindProducer)
	defer span.End()
	sc := trace.SpanContextFromContext(ctx)
	l := NewLinks(3)
	for _, id := range []string{"a", "b", "c", "d"} {
		l.Put("ch", id, sc)
	}
	if l.Len() != 3 || l.Get("ch", "a").IsValid() || !l.Get("ch", "d").IsValid() {
		t.Fatalf("after 4 puts into 3: len %d, a %v, d %v", l.Len(), l.Get("ch", "a"), l.Get("ch", "d"))
	}
	l.Remove("ch", "b")
	l.Put("ch", "b", sc) // takes a new slot; the old one must not evict it
	l.Put("ch", "e", sc)
	if !l.Get("ch", "b").IsValid() {
		t.Fatal("re-recorded key evicted through its stale slot")
	}
	l.Put("ch", "x", trace.SpanContext{})
	if l.Get("ch", "x").IsValid() || l.Len() > 3 {
		t.Fatalf("invalid span context recorded or bound broken: len %d", l.Len())
	}
	var nilLinks *Links
	nilLinks.Put("ch", "a", sc)
	if nilLinks.Get("ch", "a").IsValid() {
		t.Fatal("nil Links recorded")
	}
}

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestFromEnvOff(t *testing.T) {
	for name, m := range map[string]map[string]string{
		"unset":     {},
		"disabled":  {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
		"none":      {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
		"only name": {"OTEL_SERVICE_NAME": "x"},
	} {
		p, err := FromEnv(context.Background(), "xconn", "", env(m))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.On() || New(p) != nil {
			t.Fatalf("%s: tracing on, want off", name)
		}
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatalf("%s: Shutdown: %v", name, err)
		}
	}
}

func TestFromEnvRefuses(t *testing.T) {
	for name, m := range map[string]map[string]string{
		"grpc":   {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		"zipkin": {"OTEL_TRACES_EXPORTER": "zipkin"},
	} {
		if _, err := FromEnv(context.Background(), "xconn", "", env(m)); err == nil {
			t.Fatalf("%s: FromEnv accepted it", name)
		}
	}
}

// TestFromEnvExports runs an OTLP HTTP receiver on loopback and checks
// that a span reaches it at Shutdown, with the service name from
// OTEL_SERVICE_NAME.
func TestFromEnvExports(t *testing.T) {
	var posts atomic.Int32
	var body atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" && r.Method == http.MethodPost {
			posts.Add(1)
			body.Store(string(b))
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "xconn-test-svc")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := FromEnv(ctx, "xconn", "v0", getenvOS)
	if err != nil {
		t.Fatal(err)
	}
	if !p.On() {
		t.Fatal("tracing off with an endpoint set")
	}
	tr := New(p)
	_, span := tr.Start(ctx, "chat.message", trace.SpanKindConsumer)
	span.End()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if posts.Load() == 0 {
		t.Fatal("no OTLP export reached the receiver")
	}
	b, _ := body.Load().(string)
	if !strings.Contains(b, "xconn-test-svc") || !strings.Contains(b, "chat.message") {
		t.Fatal("the export lacks the service name or the span name")
	}
}

func getenvOS(k string) string { return os.Getenv(k) }
