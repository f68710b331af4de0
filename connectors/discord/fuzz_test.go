package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/xconn/xconn/connector"
)

// answer is a RoundTripper that answers every request with one status
// and body.
type answer struct {
	status int
	body   []byte
}

func (a answer) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: a.status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(a.body)), Request: r}, nil
}

// FuzzGatewayAnswer: whatever GET /gateway answers, the rewrite never
// panics, and an answer it passes on is JSON naming the configured
// Gateway.
func FuzzGatewayAnswer(f *testing.F) {
	f.Add([]byte(`{"url": "wss://gateway.discord.gg"}`))
	f.Add([]byte(`{"url": "wss://gateway.discord.gg", "shards": 1, "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 14400000, "max_concurrency": 1}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"url": 5}`))
	const gw = "ws://127.0.0.1:1/gateway"
	f.Fuzz(func(t *testing.T, body []byte) {
		rw := &rewriter{next: answer{http.StatusOK, body}, gateway: gw}
		req, _ := http.NewRequest(http.MethodGet, discordAPIPrefix+"v9/gateway", nil)
		res, err := rw.RoundTrip(req)
		if err != nil {
			return
		}
		defer res.Body.Close()
		var got struct {
			URL string `json:"url"`
		}
		raw, _ := io.ReadAll(res.Body)
		if err := json.Unmarshal(raw, &got); err != nil || got.URL != gw {
			t.Fatalf("rewritten answer %s (%v)", raw, err)
		}
	})
}

// FuzzRESTError: whatever an error answer of the REST API carries, the
// connector's error is an *APIError (or a rate limit around one) with the
// status, a message of at most 200 bytes of valid UTF-8, and a 429 waits
// no longer than connector.MaxRetryAfter.
func FuzzRESTError(f *testing.F) {
	f.Add(400, []byte(`{"message": "Invalid Form Body", "code": 50035, "errors": {"content": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}]}}}`))
	f.Add(403, []byte(`{"message": "Missing Access", "code": 50001}`))
	f.Add(404, []byte(`{"message": "Unknown Message", "code": 10008}`))
	f.Add(429, []byte(`{"message": "You are being rate limited.", "retry_after": 1.5, "global": false}`))
	f.Add(502, []byte(`<html>bad gateway</html>`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 400 || status > 599 {
			return
		}
		s, _ := discordgo.New("Bot " + botToken)
		s.Client = &http.Client{Transport: answer{status, body}}
		s.ShouldRetryOnRateLimit = false
		s.MaxRestRetries = 0
		_, err := s.User("@me")
		err = wrap("GET users/@me", err)
		var rl *connector.RateLimitError
		if errors.As(err, &rl) && (rl.RetryAfter < 0 || rl.RetryAfter > connector.MaxRetryAfter) {
			t.Fatalf("retry after %v", rl.RetryAfter)
		}
		var ae *APIError
		if !errors.As(err, &ae) {
			t.Fatalf("%d %q: %T %v", status, body, err, err)
		}
		if len(ae.Message) > maxErrorText+len("…") || !utf8.ValidString(ae.Message) {
			t.Fatalf("message %q", ae.Message)
		}
		if strings.Contains(err.Error(), botToken) {
			t.Fatal("the token in an error")
		}
	})
}

// FuzzMessageCreate: whatever a MESSAGE_CREATE dispatch carries, decoding
// it (discordgo) and turning it into a user message never panics; a text
// message publishes its content under dc-<id>, and an attachment that
// cannot be fetched is announced in the text, not lost silently.
func FuzzMessageCreate(f *testing.F) {
	f.Add([]byte(`{"id":"1200000000000000001","channel_id":"1100000000000000001","guild_id":"1000000000000000001","author":{"id":"900000000000000001","username":"alice"},"content":"hello","timestamp":"2026-12-05T10:00:00Z","type":0,"attachments":[]}`))
	f.Add([]byte(`{"id":"1200000000000000002","author":{"id":"9","username":"a"},"content":"","type":19,"message_reference":{"message_id":"1"},"attachments":[{"id":"5","filename":"a.png","size":10,"url":"https://cdn.discordapp.com/attachments/1/5/a.png","content_type":"image/png"}]}`))
	f.Add([]byte(`{"id":"3","type":7,"content":"joined"}`))
	c, err := New(Options{SDK: connector.Options{DataDir: f.TempDir(), APIKey: testKey},
		Transport: answer{http.StatusNotFound, []byte("gone")}, RequestTimeout: time.Second})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m discordgo.MessageCreate
		if json.Unmarshal(data, &m) != nil || m.Message == nil {
			return
		}
		_ = published(m.Type)
		um, files, err := c.userMessage(context.Background(), m.Message)
		if err != nil {
			t.Fatalf("userMessage: %v", err)
		}
		if um == nil {
			if strings.TrimSpace(m.Content) != "" || len(files) != 0 {
				t.Fatalf("%q published nothing", m.Content)
			}
			return
		}
		if um.MessageID != "dc-"+m.ID || !strings.HasPrefix(um.Text, strings.TrimSpace(m.Content)) && um.Text != m.Content {
			t.Fatalf("published %q %q from %q %q", um.MessageID, um.Text, m.ID, m.Content)
		}
		attached := 0
		for _, a := range m.Attachments {
			if a != nil {
				attached++
			}
		}
		if attached > 0 && len(files) == 0 && !strings.Contains(um.Text, "not forwarded") {
			t.Fatalf("%d attachments lost without a word: %q", attached, um.Text)
		}
	})
}
