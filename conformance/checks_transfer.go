package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"

	"github.com/xconn/xconn/protocol"
)

// uploadState caches the first upload of a run, which also decides whether
// the Connector serves POST /files/uploads at all.
type uploadState struct {
	done      bool
	supported bool
	why       string
	res       httpResult
	err       error
	fileRef   string
}

// conformanceFile is the content the suite uploads.
const conformanceFile = "xconn conformance check file\n"

// upload posts a small text file for channel ch ("" sends no channel
// header) with key.
func (s *session) uploadFile(ctx context.Context, ch, key string) (httpResult, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("file", "conformance.txt")
	if err != nil {
		return httpResult{}, fmt.Errorf("build upload: %w", err)
	}
	if _, err := fw.Write([]byte(conformanceFile)); err != nil {
		return httpResult{}, fmt.Errorf("build upload: %w", err)
	}
	if err := mw.Close(); err != nil {
		return httpResult{}, fmt.Errorf("build upload: %w", err)
	}
	h := http.Header{"Content-Type": {mw.FormDataContentType()}}
	if ch != "" {
		h.Set(protocol.HeaderChannelID, ch)
	}
	return s.do(ctx, http.MethodPost, s.endpoint(protocol.PathFileUploads), key, h, &body)
}

// uploadsSupported performs the run's first upload (once) on the main
// channel and reports whether the endpoint exists.
func (s *session) uploadsSupported() (bool, string) {
	u := &s.upload
	if !u.done {
		if s.primary == nil || s.channelID == "" {
			return false, "no open channel to upload for"
		}
		u.done = true
		u.res, u.err = s.uploadFile(s.ctx, s.channelID, s.opts.APIKey)
		switch {
		case u.err != nil:
			u.why = "POST /files/uploads failed: " + u.err.Error()
		case oneOf(fmt.Sprint(u.res.status), "404", "405", "501"):
			u.why = fmt.Sprintf("the Connector does not serve POST /files/uploads (HTTP %d)", u.res.status)
		default:
			u.supported = true
			var up protocol.UploadResponse
			if u.res.status/100 == 2 && json.Unmarshal(u.res.body, &up) == nil {
				u.fileRef = up.FileRef
			}
		}
	}
	return u.supported, u.why
}

// probeTransfer checks the transfer plane.
func probeTransfer(ctx context.Context, s *session, r *recorder) {
	if r.want("transfer.download-unknown") {
		res, err := s.get(ctx, protocol.PathFileRefsPrefix+"conformance-unknown-ref", s.opts.APIKey)
		if err != nil {
			r.fail("transfer.download-unknown", "HTTP 404", err.Error(), "")
		} else {
			r.check("transfer.download-unknown", res.status == http.StatusNotFound, "HTTP 404", res.String(), "")
		}
	}
	if !r.any("transfer.upload", "transfer.upload-channel", "apikey.uploads") {
		return
	}
	u := &s.upload
	r.check("transfer.upload", u.fileRef != "", "2xx with a JSON body carrying file_ref", u.res.String(), "")
	var bad []string
	for _, ch := range []string{"", "cch_conformance_unknown_upload"} {
		res, err := s.uploadFile(ctx, ch, s.opts.APIKey)
		switch {
		case err != nil:
			bad = append(bad, err.Error())
		case res.status/100 != 4:
			bad = append(bad, fmt.Sprintf("channel %q: %s", ch, res.String()))
		}
	}
	r.check("transfer.upload-channel", len(bad) == 0, "4xx without a channel and for an unknown channel", strings.Join(bad, "; "), "")
	if r.want("apikey.uploads") {
		if s.card.Security == nil || !s.card.Security.APIKeyRequired || s.opts.APIKey == "" {
			r.skip("apikey.uploads", "the Card does not require an API key, or none was given")
			return
		}
		res, err := s.uploadFile(ctx, s.channelID, "")
		if err != nil {
			r.fail("apikey.uploads", "401 or 403", err.Error(), "")
			return
		}
		r.check("apikey.uploads", res.status == 401 || res.status == 403, "401 or 403", res.String(), "")
	}
}

// probeDownloads fetches every download_url the Connector published, as
// xAgent does: the URL alone, without a header.
func probeDownloads(ctx context.Context, s *session, r *recorder) {
	var bad []string
	for _, f := range s.obs.files {
		u, err := s.resolve(f.DownloadURL)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", f.FileRef, err))
			continue
		}
		res, err := s.do(ctx, http.MethodGet, u, "", nil, nil)
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s: %v", f.FileRef, err))
		case res.status/100 != 2:
			bad = append(bad, fmt.Sprintf("%s: %s", redactURL(u), res.String()))
		case res.header.Get("Content-Type") == "":
			bad = append(bad, fmt.Sprintf("%s: no Content-Type", redactURL(u)))
		}
	}
	r.check("transfer.download", len(bad) == 0, "2xx raw bytes with a Content-Type", strings.Join(bad, "; "), "")
}

// probeDownloadOtherChannel asks for each published file by its fixed
// endpoint GET /files/refs/{file_ref}, without the download_url's query
// (its signed token), with the API key and the channel header of another
// channel: section 5.2 answers 403 when the file_ref does not match the
// channel. 401 and 404 are refusals too; only the file's bytes (2xx) fail.
func probeDownloadOtherChannel(ctx context.Context, s *session, r *recorder) {
	other := s.closedChannel
	if other == "" {
		other = "cch_conformance_other_" + runTag(s)
	}
	var bad []string
	seen := map[string]bool{}
	for _, f := range s.obs.files {
		if f.FileRef == "" || seen[f.FileRef] {
			continue
		}
		seen[f.FileRef] = true
		u := s.endpoint(protocol.PathFileRefsPrefix + url.PathEscape(f.FileRef))
		res, err := s.do(ctx, http.MethodGet, u, s.opts.APIKey, http.Header{protocol.HeaderChannelID: {other}}, nil)
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s: %v", f.FileRef, err))
		case res.status/100 == 2:
			bad = append(bad, fmt.Sprintf("%s for channel %s: %s", redactURL(u), other, res.String()))
		}
	}
	if len(seen) == 0 {
		r.skip("transfer.download-other-channel", "no published file has a file_ref")
		return
	}
	r.check("transfer.download-other-channel", len(bad) == 0, "403 (or another refusal) for a file_ref of another channel", strings.Join(bad, "; "), "")
}

// resolve resolves a download_url by RFC 3986 reference resolution
// (net/url) against the Base URL, so that its query (a ?sig= token) stays
// a query: an absolute http(s) URL is kept; an absolute path gets the Base
// URL's path prefix unless it already starts with it, as xAgent resolves it.
func (s *session) resolve(raw string) (*url.URL, error) {
	ref, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("download_url does not parse")
	}
	if ref.IsAbs() {
		if ref.Scheme != "http" && ref.Scheme != "https" {
			return nil, fmt.Errorf("download_url scheme %q is not http(s)", ref.Scheme)
		}
		return ref, nil
	}
	prefix := s.base.Path
	if ref.Host == "" && strings.HasPrefix(ref.Path, "/") && prefix != "" && ref.Path != prefix && !strings.HasPrefix(ref.Path, prefix+"/") {
		ref.Path = prefix + ref.Path
		ref.RawPath = ""
	}
	base := *s.base
	base.Path = prefix + "/" // a directory, so that a relative path stays under the prefix
	return base.ResolveReference(ref), nil
}

// redactURL drops the query of a URL, which may hold a one-time token.
func redactURL(u *url.URL) string {
	c := *u
	c.RawQuery = ""
	return c.Redacted()
}
