package protocol

import (
	"net/url"
	"strings"
)

// ValidateBaseURL checks a Connector Base URL against section 3: scheme http
// or https, a host, no userinfo, query or fragment. A path prefix is allowed
// and kept, with trailing slashes trimmed, so that fixed endpoints can be
// appended: u.JoinPath(PathCard). It returns the parsed URL when there is no
// violation, otherwise nil and every violation (path ""). It is pure and safe
// for concurrent use.
func ValidateBaseURL(raw string) (*url.URL, Violations) {
	var vs Violations
	if strings.TrimSpace(raw) == "" {
		vs.add("", "base URL is required")
		return nil, vs
	}
	u, err := url.Parse(raw)
	if err != nil {
		vs.add("", "base URL does not parse: %v", err)
		return nil, vs
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		u.Scheme = strings.ToLower(u.Scheme)
	case "":
		vs.add("", "base URL needs an http or https scheme")
	default:
		vs.add("", "base URL scheme must be http or https, not %q", u.Scheme)
	}
	if u.Opaque != "" {
		vs.add("", "base URL must be hierarchical (scheme://host/...)")
	}
	if u.Hostname() == "" {
		vs.add("", "base URL needs a host")
	}
	if u.User != nil {
		vs.add("", "base URL must not contain userinfo")
	}
	if u.RawQuery != "" || u.ForceQuery {
		vs.add("", "base URL must not contain a query")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		vs.add("", "base URL must not contain a fragment")
	}
	if len(vs) > 0 {
		return nil, vs
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = strings.TrimRight(u.RawPath, "/")
	return u, nil
}
