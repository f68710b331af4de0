package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/xconn/xconn/internal/xtrace"
)

// Defaults of [ClientOptions].
const (
	// DefaultBaseURL is the OpenAI API.
	DefaultBaseURL = "https://api.openai.com/v1"
	// DefaultFirstByteTimeout bounds the wait for the response headers
	// (a local server may first load the model).
	DefaultFirstByteTimeout = 2 * time.Minute
	// DefaultIdleTimeout bounds the silence between two streamed chunks.
	DefaultIdleTimeout = time.Minute
	// DefaultRequestTimeout bounds one whole request, stream included.
	DefaultRequestTimeout = 5 * time.Minute
	// DefaultMaxResponseBytes bounds one streamed line, a non-streaming
	// answer and the assembled answer (content plus tool call arguments).
	DefaultMaxResponseBytes = 4 << 20
)

// maxErrorBody bounds the error body read from a failed request.
const maxErrorBody = 64 << 10

// maxToolCalls bounds the tool calls of one answer.
const maxToolCalls = 128

// ClientOptions configures a [Client]; zero fields take the defaults.
type ClientOptions struct {
	// BaseURL is the API root up to /v1, without /chat/completions
	// (default DefaultBaseURL). Ollama: http://127.0.0.1:11434/v1.
	BaseURL string
	// APIKey is sent as a Bearer token; "" sends none (local servers).
	// It never appears in an error or a log line.
	APIKey string
	// HTTPClient makes the requests (default: a client without an overall
	// timeout; the timeouts below apply). Its Timeout, if set, must leave
	// room for a whole stream.
	HTTPClient       *http.Client
	FirstByteTimeout time.Duration // default DefaultFirstByteTimeout
	IdleTimeout      time.Duration // default DefaultIdleTimeout
	RequestTimeout   time.Duration // default DefaultRequestTimeout
	MaxResponseBytes int           // default DefaultMaxResponseBytes
	// TracerProvider receives one client span per model request ("chat
	// MODEL", with the model, the server's host and the finish reason;
	// never the prompt, the answer or the key). nil is tracing off.
	TracerProvider trace.TracerProvider
}

// Client is a minimal Chat Completions client: one streamed request per
// call, no retries (the agent's [RetryPolicy] decides). It holds no
// per-request state and is safe for concurrent use.
type Client struct {
	opts     ClientOptions
	endpoint string
	now      func() time.Time
	tracer   *xtrace.Tracer
}

// NewClient returns a client for an OpenAI-compatible server.
func NewClient(opts ClientOptions) *Client {
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.FirstByteTimeout <= 0 {
		opts.FirstByteTimeout = DefaultFirstByteTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	return &Client{opts: opts, endpoint: strings.TrimRight(opts.BaseURL, "/") + "/chat/completions", now: time.Now,
		tracer: xtrace.New(opts.TracerProvider)}
}

// Stream sends req with "stream": true and calls onDelta with each piece
// of content as it arrives (on the calling goroutine; an error from it
// ends the request). It returns the assembled answer. Failures are an
// [*APIError] (an error status or an error object in the stream), a
// [*StreamError] when the stream broke after content was passed to
// onDelta, or another error (network, timeout, a stream that ended early)
// wrapped with its cause. A server that ignores "stream" and answers with
// one JSON completion is read as well.
func (c *Client) Stream(ctx context.Context, req *Request, onDelta func(string) error) (comp *Completion, err error) {
	if c.tracer != nil {
		var span trace.Span
		ctx, span = c.tracer.Start(ctx, "chat "+req.Model, trace.SpanKindClient,
			attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.request.model", req.Model),
			attribute.String("server.address", c.host()))
		defer func() {
			if comp != nil {
				span.SetAttributes(attribute.String("gen_ai.response.finish_reason", comp.FinishReason),
					attribute.Int("xconn.tool_calls", len(comp.ToolCalls)))
			}
			xtrace.End(span, err) // the client's errors are scrubbed of the key and URL credentials
		}()
	}
	r := *req
	r.Stream = true
	body, err := json.Marshal(&r)
	if err != nil {
		return nil, fmt.Errorf("openai: encode request: %w", err)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, c.opts.RequestTimeout, errTooLong)
	defer cancel()
	// The idle watchdog cancels the request when nothing arrives in time;
	// it is reset by every read and stopped on return.
	ictx, icancel := context.WithCancelCause(ctx)
	defer icancel(nil)
	watchdog := time.AfterFunc(c.opts.FirstByteTimeout, func() { icancel(errIdle) })
	defer watchdog.Stop()

	hreq, err := http.NewRequestWithContext(ictx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("openai: request: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	if c.opts.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
	}
	c.tracer.InjectHeader(ctx, hreq.Header)
	res, err := c.opts.HTTPClient.Do(hreq)
	if err != nil {
		return nil, c.cause(ictx, err)
	}
	defer res.Body.Close()
	watchdog.Reset(c.opts.IdleTimeout)
	if res.StatusCode/100 != 2 {
		return nil, c.apiError(res)
	}
	body2 := &idleReader{r: res.Body, reset: func() { watchdog.Reset(c.opts.IdleTimeout) }}
	ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if ct == "application/json" {
		return c.readWhole(ictx, body2, onDelta)
	}
	return c.readStream(ictx, body2, onDelta)
}

// host returns the model server's host name, for spans.
func (c *Client) host() string {
	if u, err := url.Parse(c.endpoint); err == nil {
		return u.Hostname()
	}
	return ""
}

// Endpoint returns the URL the client posts to, without credentials.
func (c *Client) Endpoint() string { return redactURL(c.endpoint) }

// cause replaces a context error by the reason the context ended.
func (c *Client) cause(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return fmt.Errorf("openai: %w", cause)
		}
		return fmt.Errorf("openai: %w", ctx.Err())
	}
	return fmt.Errorf("openai: %w", c.scrub(err))
}

// scrub removes the API key and the URL from a transport error.
func (c *Client) scrub(err error) error {
	var ue interface{ Unwrap() error }
	msg := err.Error()
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil && strings.Contains(msg, c.endpoint) {
			msg = "POST /chat/completions: " + inner.Error()
		}
	}
	if c.opts.APIKey != "" {
		msg = strings.ReplaceAll(msg, c.opts.APIKey, "[redacted]")
	}
	return errors.New(msg)
}

// apiError reads an error answer.
func (c *Client) apiError(res *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	e := &APIError{StatusCode: res.StatusCode, RetryAfter: parseRetryAfter(res.Header, c.now())}
	var wrapper struct {
		Error *errorBody `json:"error"`
	}
	if json.Unmarshal(b, &wrapper) == nil && wrapper.Error != nil {
		e.Type, e.Code, e.Message = wrapper.Error.Type, codeString(wrapper.Error.Code), wrapper.Error.Message
	} else if len(bytes.TrimSpace(b)) > 0 {
		e.Message = strings.TrimSpace(string(b))
	}
	e.Message = c.redact(shorten(e.Message, maxErrorMessage))
	return e
}

func (c *Client) redact(s string) string {
	if c.opts.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, c.opts.APIKey, "[redacted]")
}

// readStream reads Server-Sent Events until [DONE].
func (c *Client) readStream(ctx context.Context, r io.Reader, onDelta func(string) error) (*Completion, error) {
	asm := assembler{max: c.opts.MaxResponseBytes}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 16<<10), c.opts.MaxResponseBytes)
	var data []byte
	dispatch := func() (bool, error) {
		defer func() { data = data[:0] }()
		d := bytes.TrimSpace(data)
		if len(d) == 0 {
			return false, nil
		}
		if string(d) == "[DONE]" {
			return true, nil
		}
		var ch chunk
		if err := json.Unmarshal(d, &ch); err != nil {
			return false, fmt.Errorf("openai: bad stream chunk: %w", err)
		}
		if ch.Error != nil {
			return false, &APIError{Type: ch.Error.Type, Code: codeString(ch.Error.Code), Message: c.redact(shorten(ch.Error.Message, maxErrorMessage))}
		}
		return false, asm.add(&ch, onDelta)
	}
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			done, err := dispatch()
			if err != nil {
				return nil, asm.broken(err)
			}
			if done {
				return asm.result(), nil
			}
		case line[0] == ':': // a comment (keep-alive)
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[5:], []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
	}
	err := sc.Err()
	if err == nil {
		// End of body: a last event without its blank line counts.
		done, derr := dispatch()
		switch {
		case derr != nil:
			return nil, asm.broken(derr)
		case done || asm.finish != "":
			return asm.result(), nil
		}
		err = io.ErrUnexpectedEOF
	}
	if ctx.Err() != nil {
		err = c.cause(ctx, err)
	} else {
		err = fmt.Errorf("openai: read stream: %w", c.scrub(err))
	}
	return nil, asm.broken(err)
}

// readWhole reads a non-streaming completion.
func (c *Client) readWhole(ctx context.Context, r io.Reader, onDelta func(string) error) (*Completion, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(c.opts.MaxResponseBytes)+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, c.cause(ctx, err)
		}
		return nil, fmt.Errorf("openai: read answer: %w", c.scrub(err))
	}
	if len(b) > c.opts.MaxResponseBytes {
		return nil, fmt.Errorf("openai: answer over %d bytes", c.opts.MaxResponseBytes)
	}
	var ch chunk
	if err := json.Unmarshal(b, &ch); err != nil {
		return nil, fmt.Errorf("openai: bad answer: %w", err)
	}
	if ch.Error != nil {
		return nil, &APIError{Type: ch.Error.Type, Code: codeString(ch.Error.Code), Message: c.redact(shorten(ch.Error.Message, maxErrorMessage))}
	}
	asm := assembler{max: c.opts.MaxResponseBytes}
	if err := asm.add(&ch, onDelta); err != nil {
		return nil, asm.broken(err)
	}
	if asm.finish == "" {
		asm.finish = "stop"
	}
	return asm.result(), nil
}

// assembler joins streamed deltas: content in order, tool calls by index
// (id and name from their first fragment, arguments concatenated).
type assembler struct {
	max     int
	size    int
	content strings.Builder
	calls   []ToolCall
	finish  string
	sent    bool // content was passed to onDelta
}

func (a *assembler) add(ch *chunk, onDelta func(string) error) error {
	for _, choice := range ch.Choices {
		d := choice.Delta
		if d == nil {
			d = choice.Message
		}
		if choice.FinishReason != nil && *choice.FinishReason != "" {
			a.finish = *choice.FinishReason
		}
		if d == nil {
			continue
		}
		if d.Content != nil && *d.Content != "" {
			if a.size += len(*d.Content); a.size > a.max {
				return fmt.Errorf("openai: answer over %d bytes", a.max)
			}
			a.content.WriteString(*d.Content)
			a.sent = true
			if err := onDelta(*d.Content); err != nil {
				return err
			}
		}
		for _, tc := range d.ToolCalls {
			if a.size += len(tc.Function.Arguments) + len(tc.Function.Name) + len(tc.ID); a.size > a.max {
				return fmt.Errorf("openai: answer over %d bytes", a.max)
			}
			i := len(a.calls) - 1
			switch {
			case tc.Index != nil:
				i = *tc.Index
			case i < 0 || (tc.ID != "" && tc.ID != a.calls[i].ID):
				i = len(a.calls) // a server without indexes: a new id is a new call
			}
			if i < 0 || i > maxToolCalls {
				return fmt.Errorf("openai: tool call index %d out of range", i)
			}
			for len(a.calls) <= i {
				a.calls = append(a.calls, ToolCall{Type: "function"})
			}
			call := &a.calls[i]
			if call.ID == "" {
				call.ID = tc.ID
			}
			if call.Function.Name == "" {
				call.Function.Name = tc.Function.Name
			}
			call.Function.Arguments += tc.Function.Arguments
		}
		break // only the first choice (n = 1)
	}
	return nil
}

func (a *assembler) result() *Completion {
	out := &Completion{Content: a.content.String(), FinishReason: a.finish}
	for _, c := range a.calls {
		if c.Function.Name != "" {
			out.ToolCalls = append(out.ToolCalls, c)
		}
	}
	return out
}

// broken turns a failure into a *StreamError once content reached onDelta.
func (a *assembler) broken(err error) error {
	if !a.sent {
		return err
	}
	return &StreamError{Partial: *a.result(), Err: err}
}

// idleReader calls reset after every read that returned data.
type idleReader struct {
	r     io.Reader
	reset func()
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.reset()
	}
	return n, err
}
