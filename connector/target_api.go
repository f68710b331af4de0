package connector

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultRequestTimeout bounds one request of a target API whose context
// has no deadline of its own (see TargetAPI.Context).
const DefaultRequestTimeout = 30 * time.Second

// TargetAPIOptions configures [Server.TargetAPI]: the knobs every
// connector to an HTTP target API exposes (a connector's Options passes its
// own fields through; zero fields take the defaults).
type TargetAPIOptions struct {
	// BaseURL is the API's root: a self-hosted server, a regional host, a
	// fake in tests. "" takes DefaultURL.
	BaseURL string
	// DefaultURL is the public API's root.
	DefaultURL string
	// Field names BaseURL in errors (default "BaseURL"), as the
	// connector's own Options call it: "Options.APIURL".
	Field string
	// Proxy is the proxy of every request: http://, https://, socks5://
	// or socks5h://, with an optional user:password (its password is
	// redacted from logs). "" uses the standard environment (HTTPS_PROXY,
	// HTTP_PROXY, NO_PROXY).
	Proxy string
	// Transport, when set, replaces the HTTP transport (Proxy is then
	// ignored): a test's, or another TargetAPI's Client.Transport to
	// share its connections.
	Transport http.RoundTripper
	// Timeout bounds a request whose context has no deadline (default
	// DefaultRequestTimeout).
	Timeout time.Duration
	// MaxRetryWait is the longest rate-limit hint a call waits out
	// (default DefaultMaxRetryWait); see RateLimit.
	MaxRetryWait time.Duration
}

// TargetAPI is the HTTP side of a target system's API, the part every
// connector to one opens the same way: the API's root, one *http.Client
// (one connection pool, the proxy, and no redirects, since a redirect
// would carry a token in a URL or header to another host), the timeout of
// a request and the wait on the target's rate limits. A connector makes
// one with Server.TargetAPI in its New and keeps it for its target client;
// the server closes its idle connections when it closes. Safe for
// concurrent use; its fields must not change once it is in use.
type TargetAPI struct {
	// BaseURL is the API's root, without a trailing slash.
	BaseURL string
	// Client sends every request.
	Client *http.Client
	// Timeout bounds a request whose context has no deadline.
	Timeout time.Duration
	// RateLimit is the wait on the target's rate limits (MaxWait from
	// TargetAPIOptions.MaxRetryWait).
	RateLimit RateLimit
}

// TargetAPI returns the HTTP side of a target's API for a connector built
// on s: the base URL checked (an absolute http(s) URL), the proxy checked
// and its password added to the redaction set, the idle connections
// closed when s closes. Call it before Start, typically in the connector's
// New. Its errors name the option at fault and never quote a password.
func (s *Server) TargetAPI(o TargetAPIOptions) (*TargetAPI, error) {
	field := o.Field
	if field == "" {
		field = "BaseURL"
	}
	base := strings.TrimRight(o.BaseURL, "/")
	if base == "" {
		base = strings.TrimRight(o.DefaultURL, "/")
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s must be an absolute http(s) URL, got %q", field, o.BaseURL)
	}
	tr := o.Transport
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = http.ProxyFromEnvironment
		if o.Proxy != "" {
			pu, err := url.Parse(o.Proxy)
			if err != nil || pu.Host == "" {
				return nil, errors.New("Proxy must be a URL such as socks5://127.0.0.1:1080 or http://proxy:3128")
			}
			switch pu.Scheme {
			case "http", "https", "socks5", "socks5h":
			default:
				return nil, fmt.Errorf("proxy scheme %q: want http, https, socks5 or socks5h", pu.Scheme)
			}
			if pw, ok := pu.User.Password(); ok {
				s.Redact(pw)
			}
			t.Proxy = http.ProxyURL(pu)
		}
		tr = t
	}
	tr = s.traceTarget(tr)
	api := &TargetAPI{
		BaseURL: base,
		Client: &http.Client{Transport: tr,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		Timeout:   o.Timeout,
		RateLimit: RateLimit{MaxWait: o.MaxRetryWait},
	}
	if api.Timeout <= 0 {
		api.Timeout = DefaultRequestTimeout
	}
	s.OnClose(func(context.Context) error { api.Client.CloseIdleConnections(); return nil })
	return api, nil
}

// Context returns ctx bounded by the API's Timeout, unless ctx has a
// deadline already (a long poll sets its own).
func (a *TargetAPI) Context(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, a.Timeout)
}
