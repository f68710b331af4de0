package host

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// AnyDownloadOrigin in [Options.DownloadOrigins] lets the host download a
// download_url from any origin.
const AnyDownloadOrigin = "*"

// downloadOrigins is the parsed [Options.DownloadOrigins]: the origins the
// host downloads from besides the connector's own Base URL origin.
type downloadOrigins struct {
	any     bool
	origins map[string]bool
}

func parseDownloadOrigins(list []string) (downloadOrigins, error) {
	d := downloadOrigins{origins: map[string]bool{}}
	for _, s := range list {
		if s == AnyDownloadOrigin {
			d.any = true
			continue
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" {
			return d, fmt.Errorf("host: Options.DownloadOrigins: %q is not an origin (scheme://host[:port]) or %q", s, AnyDownloadOrigin)
		}
		d.origins[origin(u)] = true
	}
	return d, nil
}

// origin returns the origin of an http(s) URL in a canonical form:
// lower-case scheme and host, default port left out.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host
}

// errOriginRefused is the cause of a download refused by its origin.
var errOriginRefused = errors.New("download origin refused")

// originError reports a download_url (or a redirect) outside the allowed
// origins; it names the origin only (a download URL may carry a key).
type originError struct{ origin, base string }

func (e *originError) Error() string {
	return fmt.Sprintf("download_url origin %s is not allowed: the host downloads only from the connector's origin %s and Options.DownloadOrigins", e.origin, e.base)
}

func (e *originError) Unwrap() error { return errOriginRefused }

// check allows u when it has the origin of base, or one of the
// configured origins.
func (d downloadOrigins) check(base, u *url.URL) error {
	if d.any {
		return nil
	}
	o, b := origin(u), origin(base)
	if o == b || d.origins[o] {
		return nil
	}
	return &originError{origin: o, base: b}
}

type baseKey struct{}

// downloadClient returns a copy of c whose redirects are held to the same
// origin rule as the download_url itself: the request context carries the
// connector's Base URL (withDownloadBase).
func (d downloadOrigins) downloadClient(c *http.Client) *http.Client {
	dc := *c
	next := c.CheckRedirect
	dc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if base, ok := req.Context().Value(baseKey{}).(*url.URL); ok {
			if err := d.check(base, req.URL); err != nil {
				return err
			}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &dc
}

func withDownloadBase(ctx context.Context, base *url.URL) context.Context {
	return context.WithValue(ctx, baseKey{}, base)
}
