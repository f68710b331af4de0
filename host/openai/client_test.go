package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// rawServer answers every request with status, content type and body.
func rawServer(t *testing.T, status int, contentType, body string, header http.Header) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return NewClient(ClientOptions{BaseURL: srv.URL + "/v1", APIKey: "sk-client-canary"})
}

func stream(t *testing.T, c *Client) (*Completion, string, error) {
	t.Helper()
	var deltas strings.Builder
	comp, err := c.Stream(context.Background(), &Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}},
		func(s string) error { deltas.WriteString(s); return nil })
	return comp, deltas.String(), err
}

// Servers differ: no space after "data:", comments, multi-line data,
// tool calls without an index, a last event without a blank line and
// without [DONE].
func TestStreamVariants(t *testing.T) {
	body := ": keep-alive\n\n" +
		"data:{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\n\n" +
		"event: message\ndata: {\"choices\":[{\"delta\":\n" + "data: {\"content\":\"lo\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\\\"\"}}]}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\":1}\"}}]}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"b\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}"
	comp, deltas, err := stream(t, rawServer(t, 200, "text/event-stream", body, nil))
	if err != nil {
		t.Fatal(err)
	}
	if comp.Content != "Hello" || deltas != "Hello" || comp.FinishReason != "tool_calls" {
		t.Fatalf("completion %+v, deltas %q", comp, deltas)
	}
	if len(comp.ToolCalls) != 2 || comp.ToolCalls[0].Function.Arguments != `{"x":1}` || comp.ToolCalls[1].ID != "b" || comp.ToolCalls[1].Function.Name != "g" {
		t.Fatalf("tool calls %+v", comp.ToolCalls)
	}
}

// A server that ignores "stream" answers with one JSON completion.
func TestNonStreamingAnswer(t *testing.T) {
	body := `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi!","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`
	comp, deltas, err := stream(t, rawServer(t, 200, "application/json", body, nil))
	if err != nil || comp.Content != "Hi!" || deltas != "Hi!" || len(comp.ToolCalls) != 1 {
		t.Fatalf("%+v %q %v", comp, deltas, err)
	}
}

func TestErrorAnswers(t *testing.T) {
	cases := []struct {
		name      string
		status    int
		body      string
		header    http.Header
		retryable bool
		after     time.Duration
		want      string
	}{
		{"openai body", 429, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`,
			http.Header{"Retry-After": {"7"}}, true, 7 * time.Second, "429 Too Many Requests (rate_limit_exceeded): Rate limit reached"},
		{"retry-after-ms", 429, `{"error":{"message":"slow"}}`, http.Header{"Retry-After-Ms": {"250"}}, true, 250 * time.Millisecond, "slow"},
		{"string error", 500, `{"error":"model crashed"}`, nil, true, 0, "500 Internal Server Error: model crashed"},
		{"plain text", 502, `Bad Gateway`, nil, true, 0, "502 Bad Gateway: Bad Gateway"},
		{"401 with key echoed", 401, `{"error":{"message":"Incorrect API key provided: sk-client-canary","code":"invalid_api_key"}}`,
			nil, false, 0, "check the API key"},
		{"404", 404, `{"error":{"message":"model not found"}}`, nil, false, 0, "model not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := stream(t, rawServer(t, tc.status, "application/json", tc.body, tc.header))
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("error %v", err)
			}
			if ae.Retryable() != tc.retryable || ae.RetryAfter != tc.after || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%q retryable %v after %v", err, ae.Retryable(), ae.RetryAfter)
			}
			if strings.Contains(err.Error(), "sk-client-canary") {
				t.Fatal("the key is in the error")
			}
		})
	}
}

// A stream that breaks after content is a *StreamError with the partial
// answer, never retried; before content it is a plain retryable error.
func TestBrokenStreams(t *testing.T) {
	_, _, err := stream(t, rawServer(t, 200, "text/event-stream", "data: {\"choices\":[{\"delta\":{\"content\":\"par\"}}]}\n\n", nil))
	var se *StreamError
	if !errors.As(err, &se) || se.Partial.Content != "par" || retryable(err) {
		t.Fatalf("after content: %v", err)
	}
	_, _, err = stream(t, rawServer(t, 200, "text/event-stream", ": nothing\n\n", nil))
	if err == nil || errors.As(err, &se) || !retryable(err) {
		t.Fatalf("before content: %v", err)
	}
	_, _, err = stream(t, rawServer(t, 200, "text/event-stream", "data: {not json}\n\n", nil))
	if err == nil {
		t.Fatal("bad chunk accepted")
	}
}

func TestRetryDelay(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 3}.withDefaults()
	if _, ok := p.delay(3, &APIError{StatusCode: 500}); ok {
		t.Fatal("retried past MaxAttempts")
	}
	if d, ok := p.delay(1, &APIError{StatusCode: 429, RetryAfter: 3 * time.Second}); !ok || d != 3*time.Second {
		t.Fatalf("429: %v %v", d, ok)
	}
	if _, ok := p.delay(1, &APIError{StatusCode: 429, RetryAfter: time.Hour}); ok {
		t.Fatal("waited for an hour-long Retry-After")
	}
	if _, ok := p.delay(1, &APIError{StatusCode: 401}); ok {
		t.Fatal("401 retried")
	}
	if d, ok := p.delay(2, errors.New("connection refused")); !ok || d < DefaultMinBackoff || d > 2*DefaultMinBackoff {
		t.Fatalf("network error: %v %v", d, ok)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}
	if d := parseRetryAfter(h, now); d != 90*time.Second {
		t.Fatalf("date: %v", d)
	}
	if d := parseRetryAfter(http.Header{"Retry-After": {"soon"}}, now); d != 0 {
		t.Fatalf("junk: %v", d)
	}
}
