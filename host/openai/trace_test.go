package openai_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/xconn/xconn/host/openai/openaitest"
)

// TestTraceOneChatRoundTrip follows one room message from the web chat
// page through the connector, the host and the model and back to the
// page. The connector and the host have providers of their own (as two
// processes would: service.name tells them apart) exporting to one
// in-memory exporter. Every span must belong to one trace with one root,
// every parent must be a span of that trace, and the parent links must be
// the path the message took, across both WebSocket hops and both outbox
// hops; the model server must get the model span's traceparent.
func TestTraceOneChatRoundTrip(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	provider := func(service string) *sdktrace.TracerProvider {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		return tp
	}
	s := newChatSystemTraced(t, nil, provider("connector"), provider("host"))
	b, _ := s.room("tia", "lobby", "code-1234")
	exp.Reset() // the sign-in's spans are traces of their own

	s.model.Enqueue(openaitest.Text("A traced answer."))
	b.post("trace me")
	if msgs, _ := b.collect(1); msgs[0].Text != "A traced answer." {
		t.Fatalf("message %+v", msgs[0])
	}
	// The host's send of the answer ends last (at the connector's ack).
	all := waitSpans(t, exp, func(sp tracetest.SpanStub) bool {
		return serviceOf(sp) == "host" && sp.Name == "chat.message send"
	})
	var publish tracetest.SpanStub
	for _, sp := range all {
		if sp.Name == "connector.publish" {
			publish = sp
		}
	}
	traceID := publish.SpanContext.TraceID()
	if !traceID.IsValid() {
		t.Fatalf("no connector.publish span:%s", dumpSpans(all))
	}
	// Other traces may run meanwhile (the host's health probes of the
	// connector, a sign-in's last polls), but no span of the message's
	// path may be among them: that would be a broken link.
	var spans tracetest.SpanStubs
	for _, sp := range all {
		if sp.SpanContext.TraceID() == traceID {
			spans = append(spans, sp)
			continue
		}
		switch sp.Name {
		case "connector.publish", "chat.message", "chat.message send", "store.commit inbox", "store.commit outbox", "chat fake-model":
			t.Fatalf("span %q is in trace %s, not in the message's %s:%s", sp.Name, sp.SpanContext.TraceID(), traceID, dumpSpans(all))
		}
	}
	t.Logf("spans of trace %s:%s", traceID, dumpSpans(spans))
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, sp := range spans {
		byID[sp.SpanContext.SpanID()] = sp
	}
	for _, sp := range spans {
		if sp.Parent.IsValid() && byID[sp.Parent.SpanID()].Name == "" {
			t.Fatalf("span %q has a parent %s that is not in the trace:%s", sp.Name, sp.Parent.SpanID(), dumpSpans(spans))
		}
		if !sp.Parent.IsValid() && sp.SpanContext.SpanID() != publish.SpanContext.SpanID() {
			t.Fatalf("a second root %q:%s", sp.Name, dumpSpans(spans))
		}
	}
	// find returns the one span of service named name whose parent is
	// parent (a zero parent: the root).
	find := func(service, name string, parent tracetest.SpanStub) tracetest.SpanStub {
		t.Helper()
		var got []tracetest.SpanStub
		for _, sp := range spans {
			if sp.Name == name && serviceOf(sp) == service && sp.Parent.SpanID() == parent.SpanContext.SpanID() {
				got = append(got, sp)
			}
		}
		if len(got) != 1 {
			t.Fatalf("%d %s spans %q under %q, want 1:%s", len(got), service, name, parent.Name, dumpSpans(spans))
		}
		return got[0]
	}
	// The page's message: Publish, its outbox commit, its send to the host.
	publish = find("connector", "connector.publish", tracetest.SpanStub{})
	find("connector", "store.commit outbox", publish)
	toHost := find("connector", "chat.message send", publish)
	// The host handles it: inbox commit, the model, the answer's outbox
	// commit and its send back to the connector.
	atHost := find("host", "chat.message", toHost)
	if !atHost.Parent.IsRemote() {
		t.Fatal("the host's chat.message span does not continue a remote parent (x-traceparent)")
	}
	find("host", "store.commit inbox", atHost)
	model := find("host", "chat fake-model", atHost)
	find("host", "store.commit outbox", atHost)
	toConn := find("host", "chat.message send", atHost)
	// The connector takes the answer to the page.
	back := find("connector", "chat.message", toConn)
	find("connector", "store.commit inbox", back)

	if reqs := s.model.Requests(); len(reqs) != 1 || !strings.Contains(reqs[0].Traceparent, model.SpanContext.SpanID().String()) ||
		!strings.Contains(reqs[0].Traceparent, traceID.String()) {
		t.Fatalf("the model server got traceparent %q, want the model span %s of trace %s", reqs[len(reqs)-1].Traceparent, model.SpanContext.SpanID(), traceID)
	}
	for _, sp := range spans {
		for _, kv := range sp.Attributes {
			if v := kv.Value.Emit(); strings.Contains(v, "trace me") || strings.Contains(v, "A traced answer") || strings.Contains(v, "sk-chat-canary") || strings.Contains(v, chatAPIKey) {
				t.Fatalf("span %q attribute %s carries message text or a key", sp.Name, kv.Key)
			}
		}
	}
}

// waitSpans waits until a span that done accepts is exported and every
// exported span's parent is exported too (a span is exported when it
// ends, so a parent still open is missing), and returns the spans.
func waitSpans(t *testing.T, exp *tracetest.InMemoryExporter, done func(tracetest.SpanStub) bool) tracetest.SpanStubs {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		spans := exp.GetSpans()
		ids := map[trace.SpanID]bool{}
		found := false
		for _, sp := range spans {
			ids[sp.SpanContext.SpanID()] = true
			found = found || done(sp)
		}
		open := 0
		for _, sp := range spans {
			if sp.Parent.IsValid() && !ids[sp.Parent.SpanID()] {
				open++
			}
		}
		if found && open == 0 {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: the awaited span found %v, %d spans with an open parent:%s", found, open, dumpSpans(spans))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func serviceOf(sp tracetest.SpanStub) string {
	if sp.Resource == nil {
		return ""
	}
	v, _ := sp.Resource.Set().Value("service.name")
	return v.AsString()
}

func dumpSpans(spans tracetest.SpanStubs) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "\n  %s %s parent=%s %-9s %-8s %s", s.SpanContext.TraceID().String()[:8], s.SpanContext.SpanID(), s.Parent.SpanID(), serviceOf(s), s.SpanKind, s.Name)
	}
	return b.String()
}

// TestTraceToolCall: a tool the model calls is a client span of the host
// under the message's span, and the connector's handling of it continues
// that span across the WebSocket.
func TestTraceToolCall(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s := newChatSystemTraced(t, nil, tp, tp)
	b, _ := s.room("tom", "lobby", "code-1234")
	exp.Reset()
	s.model.Enqueue(
		openaitest.Calls("", openaitest.ToolCall{ID: "call_t1", Name: "webchat_message_send", Arguments: `{"text":"from a tool"}`}),
		openaitest.Text("Done."),
	)
	b.post("use the tool")
	b.collect(2)
	spans := waitSpans(t, exp, func(sp tracetest.SpanStub) bool {
		return sp.Name == "tool.invoke" && sp.SpanKind == trace.SpanKindConsumer
	})
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, sp := range spans {
		byID[sp.SpanContext.SpanID()] = sp
	}
	parentName := func(sp tracetest.SpanStub) string { return byID[sp.Parent.SpanID()].Name }
	var chain []string
	for _, sp := range spans {
		if sp.Name == "tool.invoke" && sp.SpanKind == trace.SpanKindConsumer { // the connector's
			for p := sp; p.Name != ""; p = byID[p.Parent.SpanID()] {
				chain = append(chain, p.Name)
			}
		}
	}
	want := "tool.invoke < tool.invoke < execute_tool webchat_message_send < chat.message < chat.message send < connector.publish"
	if got := strings.Join(chain, " < "); got != want {
		t.Fatalf("the connector's tool span descends from\n  %s\nwant\n  %s%s", got, want, dumpSpans(spans))
	}
	for _, sp := range spans {
		if sp.SpanContext.TraceID() != spans[0].SpanContext.TraceID() {
			t.Fatalf("span %q (under %q) in another trace:%s", sp.Name, parentName(sp), dumpSpans(spans))
		}
	}
}
