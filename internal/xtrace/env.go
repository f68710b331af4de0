package xtrace

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Provider is a TracerProvider built by [FromEnv] with the Shutdown its
// builder owns: call it once, at exit, to flush the spans still batched.
type Provider struct {
	trace.TracerProvider
	shutdown func(context.Context) error
}

// On reports whether the provider exports spans.
func (p *Provider) On() bool { return p != nil && p.shutdown != nil }

// Shutdown flushes and stops the exporter; it is a no-op when tracing is
// off.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.shutdown == nil {
		return nil
	}
	return p.shutdown(ctx)
}

// FromEnv builds a TracerProvider from the standard OpenTelemetry
// environment, read through getenv (os.Getenv in the binary):
//
//   - OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT
//     turns tracing on, exporting OTLP over HTTP (protobuf) in batches;
//     with neither set, or OTEL_SDK_DISABLED=true, or
//     OTEL_TRACES_EXPORTER=none, the provider is a no-op;
//   - OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION, _CERTIFICATE and
//     their _TRACES_ variants are read by the exporter;
//   - OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name the resource
//     (service defaults to defaultService);
//   - OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG choose the sampler
//     (default parentbased_always_on), read by the SDK.
//
// Only the OTLP HTTP exporter is built in: OTEL_EXPORTER_OTLP_PROTOCOL
// other than http/protobuf is refused, as is an OTEL_TRACES_EXPORTER other
// than otlp or none. The global otel state is left alone.
func FromEnv(ctx context.Context, defaultService, version string, getenv func(string) string) (*Provider, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return &Provider{TracerProvider: noop.NewTracerProvider()}, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return &Provider{TracerProvider: noop.NewTracerProvider()}, nil
	case "", "otlp":
	default:
		return nil, fmt.Errorf("tracing: OTEL_TRACES_EXPORTER=%q is not supported (otlp or none)", exp)
	}
	if getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" {
		return &Provider{TracerProvider: noop.NewTracerProvider()}, nil
	}
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		return nil, fmt.Errorf("tracing: OTLP protocol %q is not supported (http/protobuf)", proto)
	}
	// The exporter reads the endpoint, headers, timeout, TLS and
	// compression from the environment itself.
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	attrs := []resource.Option{resource.WithAttributes(semconv.ServiceName(defaultService))}
	if version != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceVersion(version)))
	}
	// WithFromEnv comes last: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// override the defaults. It reads the process environment.
	attrs = append(attrs, resource.WithFromEnv(), resource.WithTelemetrySDK())
	res, err := resource.New(ctx, attrs...)
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Provider{TracerProvider: tp, shutdown: tp.Shutdown}, nil
}
