package telegram

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// answer is an http.RoundTripper that answers every request with one
// status and body.
type answer struct {
	status int
	body   string
}

func (a answer) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: a.status, Body: io.NopCloser(strings.NewReader(a.body)), Header: http.Header{}}, nil
}

// FuzzBotAPIAnswer: whatever the Bot API (or a proxy in front of it)
// answers, decoding it never panics, never puts the token in an error,
// and never yields a negative flood-control wait.
func FuzzBotAPIAnswer(f *testing.F) {
	f.Add(200, `{"ok":true,"result":[{"update_id":1,"message":{"message_id":2,"chat":{"id":3,"type":"private"},"text":"hi"}}]}`)
	f.Add(429, `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 5","parameters":{"retry_after":5}}`)
	f.Add(401, `{"ok":false,"error_code":401,"description":"Unauthorized 123:SECRET"}`)
	f.Add(502, `<html>Bad Gateway</html>`)
	f.Add(429, `{"ok":false,"parameters":{"retry_after":9223372037}}`)
	const token = "123:SECRET"
	f.Fuzz(func(t *testing.T, status int, body string) {
		if status < 100 || status > 999 {
			return
		}
		a := &botAPI{base: "http://bot.invalid", hc: &http.Client{Transport: answer{status, body}}, timeout: time.Second}
		var updates []Update
		err := a.do(context.Background(), token, "getUpdates", "application/json", nil, &updates)
		if err == nil {
			return
		}
		if strings.Contains(err.Error(), token) {
			t.Fatalf("error shows the token: %v", err)
		}
		var ae *APIError
		if errors.As(err, &ae) && ae.RetryAfter < 0 {
			t.Fatalf("retry after %v", ae.RetryAfter)
		}
	})
}

// FuzzSanitizeFilename: a file name put in a multipart header is never
// empty and holds no quote, backslash, slash or control character.
func FuzzSanitizeFilename(f *testing.F) {
	f.Add("photo.jpg")
	f.Add(`a"b\c/d` + "\r\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, name string) {
		s := sanitizeFilename(name)
		if s == "" || strings.ContainsAny(s, "\"\\/") || strings.IndexFunc(s, func(r rune) bool { return r < 0x20 }) >= 0 {
			t.Fatalf("sanitizeFilename(%q) = %q", name, s)
		}
	})
}
