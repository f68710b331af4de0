package host

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/xconn/xconn/internal/netguard"
)

// AnyDownloadOrigin in [Options.DownloadOrigins] lets the host download a
// download_url from any origin (the default when the list is empty).
const AnyDownloadOrigin = "*"

// maxDownloadRedirects bounds the redirects one download follows.
const maxDownloadRedirects = 10

// downloader fetches the download_urls connectors hand the host (inbound
// chat.message and message.push files, files of tool results). Created by
// New, it is immutable and safe for concurrent use.
//
// The connector's own Base URL origin, which the administrator chose and
// the host already talks to, is fetched with Options.HTTPClient. Any other
// origin (IM v2 sections 3 and 5.3 allow signed or one-time URLs of a CDN
// or an object store) is fetched with a client of its own whose every
// connection is dialed through netguard: after DNS resolution, for each
// address and at connect time, so a rebinding name cannot slip through,
// only public addresses are reached unless Options.AllowPrivateDownloads.
// Redirects are followed here, one hop at a time, each hop held to the
// origin restriction and fetched by the client of its own origin.
type downloader struct {
	restrict bool            // Options.DownloadOrigins lists origins
	origins  map[string]bool // those origins, canonical
	own      *http.Client    // the connector's origin; redirects returned
	guarded  *http.Client    // other origins; redirects returned
	dialer   *netguard.Dialer
}

func newDownloader(opts Options) (*downloader, error) {
	d := &downloader{origins: map[string]bool{}}
	anyOrigin := false
	for _, s := range opts.DownloadOrigins {
		if s == AnyDownloadOrigin {
			anyOrigin = true
			continue
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("host: Options.DownloadOrigins: %q is not an origin (scheme://host[:port]) or %q", s, AnyDownloadOrigin)
		}
		d.origins[origin(u)] = true
	}
	d.restrict = len(d.origins) > 0 && !anyOrigin
	noFollow := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	own := *opts.HTTPClient
	own.CheckRedirect = noFollow
	d.own = &own

	d.dialer = &netguard.Dialer{AllowPrivate: opts.AllowPrivateDownloads,
		Dialer: &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}}
	var tr *http.Transport
	if t, ok := opts.HTTPClient.Transport.(*http.Transport); ok {
		tr = t.Clone() // the embedder's TLS settings and pool sizes
	} else {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	// Every connection goes through the guard: no proxy (it would resolve
	// the name out of the guard's sight) and no other dial function.
	tr.Proxy, tr.DialContext, tr.DialTLSContext = nil, d.dialer.DialContext, nil
	tr.Dial, tr.DialTLS = nil, nil //nolint:staticcheck // deprecated fields a Clone carries over
	d.guarded = &http.Client{Transport: tr, Timeout: opts.HTTPClient.Timeout, CheckRedirect: noFollow}
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

// originError reports a download_url (or a redirect) outside
// Options.DownloadOrigins; it names the origin only (a download URL may
// carry a key).
type originError struct{ origin, base string }

func (e *originError) Error() string {
	return fmt.Sprintf("download_url origin %s is not allowed: the host downloads only from the connector's origin %s and Options.DownloadOrigins", e.origin, e.base)
}

func (e *originError) Unwrap() error { return errOriginRefused }

// check allows u when downloads are not restricted, or when it has the
// origin of base or one of the configured origins.
func (d *downloader) check(base, u *url.URL) error {
	o, b := origin(u), origin(base)
	if !d.restrict || o == b || d.origins[o] {
		return nil
	}
	return &originError{origin: o, base: b}
}

// get fetches u for the connector at base, without an Authorization
// header (section 3), following up to maxDownloadRedirects redirects. The
// response is the first that is not a redirect; its body is the caller's
// to close. An error is an *originError, a *netguard.BlockedError
// (possibly wrapped) or a transport error whose text may quote the URL:
// pass it through redactURLError.
func (d *downloader) get(ctx context.Context, base, u *url.URL) (*http.Response, error) {
	for hop := 0; ; hop++ {
		if err := d.check(base, u); err != nil {
			return nil, err
		}
		client := d.guarded
		if origin(u) == origin(base) {
			client = d.own
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, fmt.Errorf("bad download request")
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		loc := resp.Header.Get("Location")
		if !isRedirect(resp.StatusCode) || loc == "" {
			return resp, nil
		}
		resp.Body.Close()
		if hop >= maxDownloadRedirects {
			return nil, fmt.Errorf("stopped after %d redirects", maxDownloadRedirects)
		}
		next, err := u.Parse(loc)
		if err != nil || (next.Scheme != "http" && next.Scheme != "https") || next.User != nil {
			return nil, errors.New("redirected to an address that is not an http(s) URL")
		}
		u = next
	}
}

func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}
