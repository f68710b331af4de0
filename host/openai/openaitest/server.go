// Package openaitest is a fake OpenAI-compatible Chat Completions server
// for tests: it speaks the real streaming wire format (Server-Sent Events
// of "chat.completion.chunk" objects with content deltas and tool_calls
// fragments, a final chunk with finish_reason, then "data: [DONE]"), the
// non-streaming answer, and JSON error bodies with status codes and
// Retry-After. Each request takes the next scripted [Response] from a
// queue, and every request is recorded for assertions.
//
// It depends on nothing of xconn: what it checks is the wire.
package openaitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"
)

// Response is one scripted answer. With Status 0 or 200 it is a
// completion: Deltas streamed one chunk each, then ToolCalls, each sent as
// fragments (the id and name first, the arguments split across several
// chunks), then the finish_reason. Otherwise it is an error answer.
type Response struct {
	// Status is the HTTP status (default 200).
	Status int
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string
	// ErrorType, ErrorCode and ErrorMessage fill the JSON error body
	// {"error":{"message":...,"type":...,"code":...}} of an error answer.
	ErrorType, ErrorCode, ErrorMessage string
	// Deltas are the content pieces, one chunk each.
	Deltas []string
	// ToolCalls are the function calls of the answer.
	ToolCalls []ToolCall
	// FinishReason defaults to "tool_calls" when there are tool calls,
	// else "stop".
	FinishReason string
	// Delay waits before the headers (the request's context ends it).
	Delay time.Duration
	// Hang, after the deltas, keeps the stream open without data until the
	// client goes away (for idle timeouts).
	Hang bool
	// Truncate ends the body after the deltas: no finish_reason, no [DONE].
	Truncate bool
	// StreamError, after the deltas, sends an error object inside the
	// stream ("data: {"error":{...}}") and ends it.
	StreamError string
}

// ToolCall is one scripted function call.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Text returns a completion streaming text in pieces of about one word.
func Text(text string) Response {
	var deltas []string
	for i, w := range strings.SplitAfter(text, " ") {
		if w == "" && i > 0 {
			continue
		}
		deltas = append(deltas, w)
	}
	return Response{Deltas: deltas}
}

// Calls returns a completion that calls functions, after the optional
// text (an assistant message before the calls).
func Calls(text string, calls ...ToolCall) Response {
	r := Response{ToolCalls: calls}
	if text != "" {
		r.Deltas = Text(text).Deltas
	}
	return r
}

// Error returns an error answer with a JSON error body.
func Error(status int, message string) Response {
	typ := "server_error"
	switch {
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_exceeded"
	case status == http.StatusUnauthorized:
		typ = "invalid_request_error"
	case status < 500:
		typ = "invalid_request_error"
	}
	return Response{Status: status, ErrorType: typ, ErrorMessage: message}
}

// Request is one request the server received.
type Request struct {
	Method, Path string
	// Authorization is the Authorization header ("" when none).
	Authorization string
	// Traceparent is the W3C traceparent header ("" when none).
	Traceparent string
	Body        Body
	Raw         []byte
	// Streamed is Body.Stream.
	Streamed bool
}

// Body is the decoded request body (the fields a test asserts on).
type Body struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

// Message is one message of a request. Content is raw: a string, null or
// a parts array; see [Message.Text] and [Message.ImageURLs].
type Message struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	ToolCallID string `json:"tool_call_id"`
}

type part struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

// Text returns the message's text: the string content or its text parts.
func (m Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []part
	_ = json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// ImageURLs returns the URLs of the message's image_url parts.
func (m Message) ImageURLs() []string {
	var parts []part
	if json.Unmarshal(m.Content, &parts) != nil {
		return nil
	}
	var out []string
	for _, p := range parts {
		if p.ImageURL != nil {
			out = append(out, p.ImageURL.URL)
		}
	}
	return out
}

// ToolNames returns the function names a request offered.
func (b Body) ToolNames() []string {
	var out []string
	for _, t := range b.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

// Server is the fake. Create it with [NewServer]; Close stops it. Its
// methods are safe for concurrent use.
type Server struct {
	// URL is the API root to configure as base URL (ends in /v1).
	URL string

	srv    *httptest.Server
	apiKey string
	models []string // nil: any model

	mu       sync.Mutex
	queue    []func(Request) Response
	fallback *Response
	requests []Request
	arrived  chan struct{} // closed and replaced on each request
}

// Options configures a [Server].
type Options struct {
	// APIKey, when set, is required as "Authorization: Bearer <key>";
	// other requests get a 401 with an OpenAI-style error body.
	APIKey string
	// Models, when set, are the models the server knows: GET /v1/models
	// lists them, and a chat request for another model gets OpenAI's 404
	// (code "model_not_found"). Unset, /v1/models lists "fake-model" and
	// every model name is served.
	Models []string
}

// NewServer starts a fake server on a loopback port.
func NewServer(opts Options) *Server {
	s := &Server{apiKey: opts.APIKey, models: opts.Models, arrived: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.completions)
	mux.HandleFunc("GET /v1/models", s.listModels)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL + "/v1"
	return s
}

// Close stops the server, ending open streams.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Enqueue adds answers for the next requests, in order.
func (s *Server) Enqueue(rs ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rs {
		s.queue = append(s.queue, func(Request) Response { return r })
	}
}

// EnqueueFunc adds an answer computed from the request it answers (for
// instance a tool call whose arguments name a file_ref the request
// shows). fn runs on the server's handler goroutine.
func (s *Server) EnqueueFunc(fn func(Request) Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, fn)
}

// SetFallback sets the answer given when the queue is empty (by default a
// 500 error naming the missing script).
func (s *Server) SetFallback(r Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = &r
}

// Pending returns the number of queued answers not yet given.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns a copy of the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// WaitRequests waits until at least n requests arrived, or d passed, and
// returns the requests received.
func (s *Server) WaitRequests(n int, d time.Duration) []Request {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		got, ch := len(s.requests), s.arrived
		s.mu.Unlock()
		if got >= n {
			return s.Requests()
		}
		select {
		case <-ch:
		case <-deadline.C:
			return s.Requests()
		}
	}
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	req := Request{Method: r.Method, Path: r.URL.Path, Authorization: r.Header.Get("Authorization"),
		Traceparent: r.Header.Get("Traceparent"), Raw: raw}
	bodyErr := json.Unmarshal(raw, &req.Body)
	req.Streamed = req.Body.Stream

	s.mu.Lock()
	s.requests = append(s.requests, req)
	close(s.arrived)
	s.arrived = make(chan struct{})
	var resp Response
	var next func(Request) Response
	switch {
	case s.apiKey != "" && req.Authorization != "Bearer "+s.apiKey:
		resp = Response{Status: http.StatusUnauthorized, ErrorType: "invalid_request_error", ErrorCode: "invalid_api_key",
			ErrorMessage: "Incorrect API key provided."}
	case bodyErr != nil:
		resp = Error(http.StatusBadRequest, "bad JSON body: "+bodyErr.Error())
	case s.models != nil && !slices.Contains(s.models, req.Body.Model):
		resp = Response{Status: http.StatusNotFound, ErrorType: "invalid_request_error", ErrorCode: "model_not_found",
			ErrorMessage: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Body.Model)}
	case len(s.queue) > 0:
		next = s.queue[0]
		s.queue = s.queue[1:]
	case s.fallback != nil:
		resp = *s.fallback
	default:
		resp = Error(http.StatusInternalServerError, "openaitest: no scripted response for this request")
	}
	s.mu.Unlock()
	if next != nil {
		resp = next(req)
	}

	if resp.Delay > 0 {
		t := time.NewTimer(resp.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if resp.Status != 0 && resp.Status != http.StatusOK {
		writeError(w, resp)
		return
	}
	if !req.Streamed {
		writeWhole(w, req.Body.Model, resp)
		return
	}
	writeStream(w, r, req.Body.Model, resp)
}

// listModels answers GET /v1/models: the known models, or a 401 without
// the key.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	if s.apiKey != "" && r.Header.Get("Authorization") != "Bearer "+s.apiKey {
		writeError(w, Response{Status: http.StatusUnauthorized, ErrorType: "invalid_request_error", ErrorCode: "invalid_api_key",
			ErrorMessage: "Incorrect API key provided."})
		return
	}
	models := s.models
	if models == nil {
		models = []string{"fake-model"}
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, m := range models {
		list.Data = append(list.Data, model{ID: m, Object: "model", OwnedBy: "openaitest"})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

func writeError(w http.ResponseWriter, resp Response) {
	if resp.RetryAfter != "" {
		w.Header().Set("Retry-After", resp.RetryAfter)
	}
	var code any
	if resp.ErrorCode != "" {
		code = resp.ErrorCode
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.Status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": resp.ErrorMessage, "type": resp.ErrorType, "param": nil, "code": code}})
}

func finishReason(resp Response) string {
	switch {
	case resp.FinishReason != "":
		return resp.FinishReason
	case len(resp.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func writeWhole(w http.ResponseWriter, model string, resp Response) {
	msg := map[string]any{"role": "assistant", "content": strings.Join(resp.Deltas, "")}
	if len(resp.ToolCalls) > 0 {
		var calls []map[string]any
		for _, c := range resp.ToolCalls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		msg["tool_calls"] = calls
		if msg["content"] == "" {
			msg["content"] = nil
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finishReason(resp)}},
	})
}

// writeStream writes the answer as the Chat Completions stream does.
func writeStream(w http.ResponseWriter, r *http.Request, model string, resp Response) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	created := time.Now().Unix()
	send := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	send(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, d := range resp.Deltas {
		send(map[string]any{"content": d}, nil)
	}
	switch {
	case resp.Hang:
		<-r.Context().Done()
		return
	case resp.Truncate:
		return
	case resp.StreamError != "":
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": resp.StreamError, "type": "server_error", "code": nil}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		return
	}
	for i, c := range resp.ToolCalls {
		send(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil)
		for _, piece := range split(c.Arguments, 3) {
			send(map[string]any{"tool_calls": []any{map[string]any{"index": i,
				"function": map[string]any{"arguments": piece}}}}, nil)
		}
	}
	send(map[string]any{}, finishReason(resp))
	io.WriteString(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

// split cuts s into at most n pieces of about equal length (bytes; the
// client must join them before decoding).
func split(s string, n int) []string {
	if s == "" {
		return nil
	}
	size := (len(s) + n - 1) / n
	var out []string
	for len(s) > size {
		out = append(out, s[:size])
		s = s[size:]
	}
	return append(out, s)
}
