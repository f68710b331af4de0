package main

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzServerMessage: whatever a server answers, the quoted message is one
// bounded line.
func FuzzServerMessage(f *testing.F) {
	f.Add([]byte(`{"error":"forbidden","message":"system API key rejected"}`))
	f.Add([]byte("<html>\n<body>nope</body></html>"))
	f.Add([]byte(""))
	f.Add([]byte(`{"error":{"code":"x"},"message":"m"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got := serverMessage(body)
		if strings.Contains(got, "\n") || len(got) > 64<<10*6+16 || got == "" {
			t.Fatalf("serverMessage(%q) = %q", body, got)
		}
		if utf8.Valid(body) && !utf8.ValidString(got) && len(body) <= 200 {
			t.Fatalf("serverMessage broke UTF-8: %q", got)
		}
	})
}
