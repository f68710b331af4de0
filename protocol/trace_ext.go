package protocol

// ExtTraceparent and ExtTracestate are the envelope extension members in
// which xconn carries W3C Trace Context (the traceparent and tracestate
// header values, as JSON strings) across the data plane, so that one trace
// follows a message from the chat app through the connector and the host to
// the model and back. The spec defines no tracing member; the published
// schemas admit unknown members everywhere (no object sets
// additionalProperties false), and a receiver that does not know these
// must tolerate and should ignore them (schemas section 0). A peer that
// does not trace never sends them; xconn reads them only when tracing is on
// and ignores a malformed value.
const (
	ExtTraceparent = "x-traceparent"
	ExtTracestate  = "x-tracestate"
)
