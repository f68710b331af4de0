package xtrace

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/xconn/xconn/protocol"
)

// chatFrame is a chat.message as the host receives it, without trace
// members (an untraced peer).
var chatFrame = []byte(`{"schema":"xagent.connector.packet/v1","packet_id":"pkt_01J9Z","connector_channel_id":"cch_4f1c","type":"chat.message","time":1733400000000,"payload":{"message_id":"msg_1","created_at":1733400000000,"text":"hello there"}}`)

// BenchmarkPacketTracing is the tracing work on one packet's path: the
// decode every packet pays (baseline), then the same with what the
// connector and the host add per packet (Extract, Start, Inject into the
// reply, End) with tracing off, and on (always sampled, spans dropped at
// the end). Run: go test -run '^$' -bench PacketTracing -benchmem ./internal/xtrace/
func BenchmarkPacketTracing(b *testing.B) {
	on := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	b.Cleanup(func() { _ = on.Shutdown(context.Background()) })
	ctx := context.Background()
	for _, bc := range []struct {
		name   string
		hooks  bool
		tracer *Tracer
	}{
		{"baseline", false, nil},
		{"off", true, New(nil)},
		{"on", true, New(on)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			reply := &protocol.Envelope{Type: protocol.TypeChatMessageAck}
			for b.Loop() {
				env, err := protocol.DecodeEnvelope(chatFrame)
				if err != nil {
					b.Fatal(err)
				}
				if !bc.hooks {
					continue
				}
				pctx, span := bc.tracer.Start(bc.tracer.Extract(ctx, env), env.Type, trace.SpanKindConsumer)
				bc.tracer.Inject(pctx, reply)
				End(span, nil)
				reply.Extensions = nil
			}
		})
	}
}

// BenchmarkHooksOff is the hooks alone with tracing off: what an untraced
// packet pays over the baseline above.
func BenchmarkHooksOff(b *testing.B) {
	b.ReportAllocs()
	var tr *Tracer
	ctx := context.Background()
	env := &protocol.Envelope{Type: protocol.TypeChatMessage}
	reply := &protocol.Envelope{Type: protocol.TypeChatMessageAck}
	for b.Loop() {
		pctx, span := tr.Start(tr.Extract(ctx, env), env.Type, trace.SpanKindConsumer)
		tr.Inject(pctx, reply)
		End(span, nil)
	}
}
