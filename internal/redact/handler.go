package redact

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// IsSecretKey reports whether an attribute or field key names a secret: it
// equals or ends with one of api_key, apikey, token, password, passwd,
// secret, authorization, access_code, cookie, bot_token, private_key,
// ignoring case and treating '-' as '_' ("X-Api-Key", "botToken",
// "x_token" and "Set-Cookie" are secret; "token_count" is not).
func IsSecretKey(key string) bool {
	words := [...]string{
		"api_key", "apikey", "token", "password", "passwd", "secret",
		"authorization", "access_code", "cookie", "bot_token", "private_key",
	}
	k := strings.ReplaceAll(strings.ToLower(key), "-", "_")
	for _, w := range words {
		if strings.HasSuffix(k, w) {
			return true
		}
	}
	return false
}

// NewHandler wraps h: attribute values whose key looks secret ([IsSecretKey])
// become "[REDACTED]"; every string attribute value, every error or
// fmt.Stringer value (rendered as a string) and the message are scrubbed
// with s (s may be nil). Groups, WithAttrs and WithGroup are covered. The
// returned handler is safe for concurrent use when h is.
func NewHandler(h slog.Handler, s *Secrets) slog.Handler {
	return &handler{next: h, secrets: s}
}

type handler struct {
	next    slog.Handler
	secrets *Secrets
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.secrets.Scrub(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return &handler{next: h.next.WithAttrs(red), secrets: h.secrets}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name), secrets: h.secrets}
}

// attr returns a with its value redacted or scrubbed.
func (h *handler) attr(a slog.Attr) slog.Attr {
	if IsSecretKey(a.Key) {
		return slog.String(a.Key, Redacted)
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.secrets.Scrub(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]slog.Attr, len(g))
		for i, ga := range g {
			red[i] = h.attr(ga)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(red...)}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.secrets.Scrub(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, h.secrets.Scrub(x.String()))
		case []byte:
			return slog.String(a.Key, h.secrets.Scrub(string(x)))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
