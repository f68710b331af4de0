package redact

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

const canary = "canary-SECRET-7f3a9c"

func TestIsSecretKey(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"api_key", true}, {"APIKEY", true}, {"X-Api-Key", true}, {"token", true},
		{"x_token", true}, {"botToken", true}, {"bot_token", true}, {"password", true},
		{"client_secret", true}, {"Authorization", true}, {"access_code", true},
		{"Set-Cookie", true}, {"refresh_token", true}, {"private_key", true},
		{"token_count", false}, {"text", false}, {"channel", false}, {"key", false},
		{"", false}, {"user", false}, {"secretary_name", false},
	}
	for _, tt := range tests {
		if got := IsSecretKey(tt.key); got != tt.want {
			t.Errorf("IsSecretKey(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

func TestSecretsScrub(t *testing.T) {
	s := NewSecrets(0)
	s.Add(canary, "short", "abcdefgh", "abcdefghijkl")
	if s.Len() != 3 {
		t.Fatalf("Len = %d, want 3 (short value ignored)", s.Len())
	}
	tests := []struct{ in, want string }{
		{"token=" + canary + " end", "token=[REDACTED] end"},
		{canary + canary, "[REDACTED][REDACTED]"},
		{"a short word", "a short word"},
		{"x abcdefghijkl y", "x [REDACTED] y"}, // longer secret wins over its prefix
		{"x abcdefgh y", "x [REDACTED] y"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := s.Scrub(tt.in); got != tt.want {
			t.Errorf("Scrub(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	s.Remove(canary)
	if got := s.Scrub(canary); got != canary {
		t.Errorf("after Remove, Scrub = %q", got)
	}
	var nilSet *Secrets
	nilSet.Add(canary)
	if nilSet.Scrub(canary) != canary || nilSet.Len() != 0 {
		t.Error("nil Secrets must scrub nothing")
	}
}

func TestSecretsBoundDropsOldest(t *testing.T) {
	s := NewSecrets(3)
	s.Add("secret-1", "secret-2", "secret-3")
	s.Add("secret-1") // refresh: now newest
	s.Add("secret-4") // evicts secret-2
	if s.Len() != 3 {
		t.Fatalf("Len = %d, want 3", s.Len())
	}
	got := s.Scrub("secret-1 secret-2 secret-3 secret-4")
	if want := "[REDACTED] secret-2 [REDACTED] [REDACTED]"; got != want {
		t.Fatalf("Scrub = %q, want %q", got, want)
	}
}

func TestSecretsConcurrent(t *testing.T) {
	s := NewSecrets(100)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				v := fmt.Sprintf("value-%d-%d", i, j)
				s.Add(v)
				if got := s.Scrub("<" + v + ">"); got != "<[REDACTED]>" && got != "<"+v+">" {
					t.Errorf("Scrub = %q", got)
				}
				if j%3 == 0 {
					s.Remove(v)
				}
			}
		})
	}
	wg.Wait()
	if s.Len() > 100 {
		t.Fatalf("Len = %d exceeds the bound 100", s.Len())
	}
}

type stringer string

func (s stringer) String() string { return string(s) }

func TestHandlerRedactsCanaryAtDebug(t *testing.T) {
	var buf bytes.Buffer
	secrets := NewSecrets(10)
	secrets.Add(canary)
	log := slog.New(NewHandler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), secrets))

	log.Debug("login with "+canary,
		"api_key", "k-123456789",
		"X-Bot-Token", 42,
		"note", "value "+canary,
		"err", errors.New("dial https://h/?t="+canary),
		"target", stringer("url "+canary),
		"raw", []byte(canary),
		slog.Group("auth", "password", "hunter22", "user", "bob", slog.Group("deep", "text", canary)),
	)
	log.With("cookie", "sess=abcdef", "ctx", canary).WithGroup("g").Debug("x", "authorization", "Bearer zzzzzz", "plain", "ok")

	out := buf.String()
	for _, leak := range []string{canary, "k-123456789", "hunter22", "sess=abcdef", "Bearer zzzzzz"} {
		if strings.Contains(out, leak) {
			t.Errorf("log output leaks %q:\n%s", leak, out)
		}
	}
	for _, keep := range []string{`"user":"bob"`, `"plain":"ok"`, `"X-Bot-Token":"[REDACTED]"`, `"g":{`, `"msg":"login with [REDACTED]"`} {
		if !strings.Contains(out, keep) {
			t.Errorf("log output lacks %s:\n%s", keep, out)
		}
	}
	if n := strings.Count(out, Redacted); n < 12 {
		t.Errorf("only %d redactions:\n%s", n, out)
	}
}

func TestHandlerEnabledFollowsWrapped(t *testing.T) {
	h := NewHandler(slog.NewTextHandler(&bytes.Buffer{}, &slog.HandlerOptions{Level: slog.LevelInfo}), nil)
	if h.Enabled(t.Context(), slog.LevelDebug) || !h.Enabled(t.Context(), slog.LevelError) {
		t.Fatal("Enabled does not follow the wrapped handler")
	}
}

func ExampleNewHandler() {
	secrets := NewSecrets(0)
	secrets.Add("tg-123456:ABCDEF")
	h := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})
	log := slog.New(NewHandler(h, secrets))
	log.Info("calling https://api.telegram.org/bottg-123456:ABCDEF/getMe", "bot_token", "tg-123456:ABCDEF", "chat", "42")
	// Output:
	// level=INFO msg="calling https://api.telegram.org/bot[REDACTED]/getMe" bot_token=[REDACTED] chat=42
}

func FuzzScrub(f *testing.F) {
	f.Add("prefix "+canary+" suffix", canary)
	f.Add("aaaaaaaaaa", "aaaaaa")
	f.Fuzz(func(t *testing.T, text, secret string) {
		s := NewSecrets(4)
		s.Add(secret)
		got := s.Scrub(text)
		if len(secret) >= MinSecretLen && !strings.Contains(Redacted, secret) && strings.Contains(got, secret) {
			// A secret may re-form across a replacement boundary only if it
			// overlaps "[REDACTED]"; otherwise it must be gone.
			if !strings.Contains(strings.ReplaceAll(got, Redacted, "\x00"), secret) {
				return
			}
			t.Fatalf("Scrub(%q) = %q still contains %q", text, got, secret)
		}
	})
}

// TestSecretsBoundedByBytes: a set is bounded in bytes as well as count;
// large values push out the oldest ones, and values over MaxSecretLen are
// not kept.
func TestSecretsBoundedByBytes(t *testing.T) {
	s := NewSecretsBytes(1000, 10<<10)
	for i := range 100 {
		s.Add(fmt.Sprintf("%04d", i) + strings.Repeat("x", 1020))
		if s.Bytes() > 10<<10 {
			t.Fatalf("after %d values Bytes = %d, over the bound %d", i+1, s.Bytes(), 10<<10)
		}
	}
	if s.Len() != 10 {
		t.Fatalf("Len = %d, want 10 values of 1 KiB in 10 KiB", s.Len())
	}
	newest := "0099" + strings.Repeat("x", 1020)
	if got := s.Scrub("<" + newest + ">"); got != "<"+Redacted+">" {
		t.Errorf("newest value not scrubbed: %.40q", got)
	}
	s.Add(strings.Repeat("y", MaxSecretLen+1))
	if s.Len() != 10 {
		t.Errorf("a value over MaxSecretLen was kept (Len = %d)", s.Len())
	}
}

// TestScrubMatchesReplacer compares Scrub with a strings.Replacer built
// over the same values, longest first (the former implementation).
func TestScrubMatchesReplacer(t *testing.T) {
	vals := []string{"abcdef", "abcdefgh", "zzzzzzzzz", "xabcdefx", "000000", "0000000000"}
	texts := []string{"", "abcdef", "abcdefgh!", "xxabcdefxx", "0000000000000", "a abcdeg abcdefg", "zzzzzzzzzzzzzzzzzz", "no secret here at all"}
	s := NewSecrets(0)
	s.Add(vals...)
	sorted := slices.Clone(vals)
	slices.SortFunc(sorted, byLenDesc)
	var pairs []string
	for _, v := range sorted {
		pairs = append(pairs, v, Redacted)
	}
	r := strings.NewReplacer(pairs...)
	for _, tt := range texts {
		if got, want := s.Scrub(tt), r.Replace(tt); got != want {
			t.Errorf("Scrub(%q) = %q, want %q", tt, got, want)
		}
	}
}

// TestAddIsIncremental: with many values held, adding one more and
// scrubbing does not rebuild anything over all of them: the allocations of
// an Add are the same with 10 and with 5,000 values held.
func TestAddIsIncremental(t *testing.T) {
	allocs := func(n int) float64 {
		s := NewSecrets(n + 200)
		for i := range n {
			s.Add(fmt.Sprintf("held-secret-%06d", i))
		}
		i := 0
		return testing.AllocsPerRun(100, func() {
			i++
			s.Add(fmt.Sprintf("new-secret-%06d", i))
			_ = s.Scrub("a log line with new-secret-000001 in it")
		})
	}
	small, large := allocs(10), allocs(5000)
	if large > small+2 {
		t.Fatalf("Add+Scrub allocations grow with the set: %.0f with 10 values, %.0f with 5,000", small, large)
	}
}

// FuzzScrubMatchesReplacer checks Scrub against strings.Replacer for two
// secrets.
func FuzzScrubMatchesReplacer(f *testing.F) {
	f.Add("xx abcdefgh abcdef", "abcdef", "abcdefgh")
	f.Add("aaaaaaaaaaaa", "aaaaaa", "aaaaaaa")
	f.Fuzz(func(t *testing.T, text, a, b string) {
		s := NewSecrets(4)
		s.Add(a, b)
		var vals []string
		for _, v := range []string{a, b} {
			if len(v) >= MinSecretLen && len(v) <= MaxSecretLen && !slices.Contains(vals, v) {
				vals = append(vals, v)
			}
		}
		slices.SortFunc(vals, byLenDesc)
		var pairs []string
		for _, v := range vals {
			pairs = append(pairs, v, Redacted)
		}
		want := text
		if len(pairs) > 0 {
			want = strings.NewReplacer(pairs...).Replace(text)
		}
		if got := s.Scrub(text); got != want {
			t.Fatalf("Scrub(%q) with %q, %q = %q, want %q", text, a, b, got, want)
		}
	})
}

// TestPinnedSurvivesFlood: a pinned value (the API key) is never pushed
// out by a flood of other secrets, which do evict one another.
func TestPinnedSurvivesFlood(t *testing.T) {
	s := NewSecretsBytes(10, 4<<10)
	s.Pin(canary)
	s.Pin(canary) // idempotent
	for i := range 1000 {
		s.Add(fmt.Sprintf("flood-%06d-", i) + strings.Repeat("z", 500))
	}
	if got := s.Scrub("key " + canary); got != "key "+Redacted {
		t.Fatalf("pinned value evicted: %q", got)
	}
	if s.Len() > 11 {
		t.Fatalf("Len = %d, want at most 10 values and the pinned one", s.Len())
	}
	s.Add(canary) // adding a pinned value keeps it pinned
	for i := range 20 {
		s.Add(fmt.Sprintf("again-%06d", i))
	}
	if got := s.Scrub(canary); got != Redacted {
		t.Fatalf("pinned value evicted after Add: %q", got)
	}
	s.Remove(canary)
	if got := s.Scrub(canary); got != canary {
		t.Fatalf("Remove of a pinned value: Scrub = %q", got)
	}
}
