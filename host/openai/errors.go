package openai

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxErrorMessage bounds the provider message kept in an [APIError].
const maxErrorMessage = 300

// APIError is a failed Chat Completions request: the HTTP status (0 for
// an error object inside a stream), the provider's error type, code and
// message (shortened, with the API key removed), and the delay the
// provider asked for (Retry-After, retry-after-ms), if any.
type APIError struct {
	StatusCode int
	Type       string
	Code       string
	Message    string
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("openai: ")
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, "%d %s", e.StatusCode, http.StatusText(e.StatusCode))
	} else {
		b.WriteString("error in stream")
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.StatusCode == http.StatusUnauthorized {
		b.WriteString(" — check the API key (OPENAI_API_KEY)")
	}
	return b.String()
}

// Retryable reports whether the same request may succeed later: 408, 409,
// 429, 5xx and errors inside a stream. 400, 401, 403, 404 and 422 are not.
func (e *APIError) Retryable() bool {
	switch {
	case e.StatusCode == 0, e.StatusCode == http.StatusRequestTimeout, e.StatusCode == http.StatusConflict,
		e.StatusCode == http.StatusTooManyRequests, e.StatusCode >= 500:
		return true
	}
	return false
}

// Misconfigured reports whether the failure is the operator's to fix and
// will not pass by itself: the server refuses the key (401, 403), or knows
// neither the model nor the endpoint (404: a wrong model name, or a base
// URL without its /v1).
func (e *APIError) Misconfigured() bool {
	switch e.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return true
	}
	return false
}

// fix says in a few words what the operator should check after a
// misconfiguration.
func (e *APIError) fix() string {
	if e.StatusCode == http.StatusNotFound {
		return "check --model and --base-url (an OpenAI-compatible root usually ends in /v1)"
	}
	return "check the API key (OPENAI_API_KEY) and its access to the model"
}

// StreamError is a stream that broke (a network error, an idle timeout, an
// end without [DONE] or finish_reason) after the model had begun to answer.
// Partial holds what arrived; the request is not retried, since its text
// already reached the user.
type StreamError struct {
	Partial Completion
	Err     error
}

func (e *StreamError) Error() string { return "openai: stream broken: " + e.Err.Error() }
func (e *StreamError) Unwrap() error { return e.Err }

// errIdle is the cause of a request cancelled for silence, errTooLong of
// one that passed RequestTimeout.
var (
	errIdle    = errors.New("no data from the model server in time")
	errTooLong = errors.New("the model request took too long")
)

// retryable classifies an error of one attempt.
func retryable(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Retryable()
	}
	var se *StreamError
	if errors.As(err, &se) {
		return false
	}
	// Network errors, timeouts, truncated streams before any content; the
	// retry loop stops first when the caller's context ended.
	return true
}

// parseRetryAfter reads retry-after-ms (OpenAI) or Retry-After (seconds or
// an HTTP date); 0 when absent or unreadable.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// codeString renders an error code that may be a string, a number or null.
func codeString(raw []byte) string {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return ""
	}
	if unq, err := strconv.Unquote(s); err == nil {
		return unq
	}
	return s
}

// shorten cuts s to at most n bytes on a rune boundary, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
