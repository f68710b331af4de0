package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/xconn/xconn/internal/netguard"
	"github.com/xconn/xconn/protocol"
)

// resolveDownloadURL makes a download_url absolute: an absolute http(s) URL
// is kept; a relative one is resolved against the Base URL, its path prefix
// prepended unless the URL already starts with it (section 13).
func resolveDownloadURL(base *url.URL, raw string) (*url.URL, error) {
	if strings.TrimSpace(raw) == "" {
		// Resolved, it would name the connector's root page.
		return nil, errors.New("file has no download_url (or url)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("download_url does not parse")
	}
	if u.User != nil {
		return nil, errors.New("download_url must not carry userinfo")
	}
	if u.IsAbs() {
		if u.Scheme != "http" && u.Scheme != "https" {
			return nil, fmt.Errorf("download_url scheme %q is not http(s)", u.Scheme)
		}
		return u, nil
	}
	if u.Host != "" {
		return nil, errors.New("download_url is protocol-relative")
	}
	prefix := strings.TrimRight(base.Path, "/")
	p := u.Path
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if prefix != "" && p != prefix && !strings.HasPrefix(p, prefix+"/") {
		p = prefix + p
	}
	out := *base
	out.Path, out.RawPath, out.RawQuery, out.Fragment = p, "", u.RawQuery, ""
	return &out, nil
}

// safeName keeps a file name displayable and harmless on disk.
func safeName(name string) string {
	name = filepath.Base(strings.ReplaceAll(name, "\\", "/"))
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 100 {
			break
		}
	}
	s := strings.Trim(b.String(), ".")
	if s == "" {
		return "file"
	}
	return s
}

// download fetches the files of one inbound message into FilesDir/ucID.
// Errors are *protocol.Error: file_too_large (not retryable),
// file_download_failed (retryable unless the connector answered 403/404).
func (h *Host) download(ctx context.Context, base *url.URL, ucID string, files []protocol.ChatFile) ([]File, error) {
	if len(files) == 0 {
		return nil, nil
	}
	if len(files) > h.opts.MaxFilesPerMessage {
		return nil, protocol.Errorf(protocol.CodeInvalidPacket, "message has %d files; at most %d are accepted", len(files), h.opts.MaxFilesPerMessage)
	}
	dir := filepath.Join(h.filesDir, safeName(ucID))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, &protocol.Error{Code: CodeFileDownloadFailed, Message: "cannot create the files directory", Retryable: true}
	}
	h.pruneFiles()
	var out []File
	cleanup := func() {
		for _, f := range out {
			_ = os.Remove(f.Path)
		}
	}
	for i, cf := range files {
		f, err := h.downloadOne(ctx, base, dir, cf)
		if err != nil {
			cleanup()
			return nil, fmt.Errorf("files[%d]: %w", i, err)
		}
		out = append(out, f)
	}
	return out, nil
}

func (h *Host) downloadOne(ctx context.Context, base *url.URL, dir string, cf protocol.ChatFile) (File, error) {
	fail := func(retry bool, format string, args ...any) error {
		return &protocol.Error{Code: CodeFileDownloadFailed, Message: fmt.Sprintf(format, args...), Retryable: retry}
	}
	if cf.ByteSize > h.opts.MaxFileBytes {
		return File{}, &protocol.Error{Code: CodeFileTooLarge, Message: fmt.Sprintf("file of %d bytes exceeds the limit of %d", cf.ByteSize, h.opts.MaxFileBytes)}
	}
	u, err := resolveDownloadURL(base, cf.SourceURL())
	if err != nil {
		return File{}, &protocol.Error{Code: protocol.CodeInvalidPacket, Message: err.Error()}
	}
	resp, err := h.dl.get(ctx, base, u) // no Authorization header (section 3)
	if err != nil {
		var oe *originError
		var be *netguard.BlockedError
		switch {
		case errors.As(err, &oe):
			return File{}, fail(false, "%v", oe)
		case errors.As(err, &be):
			return File{}, fail(false, "download_url refused: %v", be)
		}
		return File{}, fail(true, "download failed: %v", redactURLError(err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusForbidden:
		return File{}, fail(false, "download answered HTTP %d", resp.StatusCode)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return File{}, fail(true, "download answered HTTP %d", resp.StatusCode)
	}
	name := cf.Filename
	if name == "" {
		if _, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err == nil {
			name = params["filename"]
		}
	}
	mt := cf.MimeType
	if mt == "" {
		mt, _, _ = mime.ParseMediaType(resp.Header.Get("Content-Type"))
	}
	if name == "" {
		// Not the connector's file_ref: a model may see the name.
		name = "file"
		if exts, _ := mime.ExtensionsByType(mt); len(exts) > 0 {
			name += exts[0]
		}
	}
	fh, err := os.CreateTemp(dir, "in-*-"+safeName(name))
	if err != nil {
		return File{}, fail(true, "cannot store the file")
	}
	n, err := copyChunks(fh, resp.Body, h.opts.MaxFileBytes)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(fh.Name())
		if errors.Is(err, errFileTooLarge) {
			return File{}, &protocol.Error{Code: CodeFileTooLarge, Message: fmt.Sprintf("file exceeds the limit of %d bytes", h.opts.MaxFileBytes)}
		}
		return File{}, fail(true, "download interrupted")
	}
	ft := cf.Type
	if ft == "" {
		ft = fileTypeOf(mt)
	}
	return File{Path: fh.Name(), Filename: name, MimeType: mt, Type: ft, Size: n, FileRef: cf.FileRef}, nil
}

func fileTypeOf(mimeType string) protocol.FileType {
	switch {
	case strings.HasPrefix(mimeType, "image/"):
		return protocol.FileImage
	case strings.HasPrefix(mimeType, "video/"):
		return protocol.FileVideo
	case strings.HasPrefix(mimeType, "audio/"):
		return protocol.FileAudio
	}
	return protocol.FileFile
}

// upload sends one local file to POST /files/uploads for channelID and
// returns the chat.message file entry with the connector's file_ref.
func (h *Host) upload(ctx context.Context, rt *runtime, channelID string, f OutgoingFile) (protocol.ChatFile, error) {
	base, key, _ := rt.view()
	fh, err := os.Open(f.Path)
	if err != nil {
		return protocol.ChatFile{}, fmt.Errorf("upload: open file: %w", err)
	}
	defer fh.Close()
	name := f.Filename
	if name == "" {
		name = filepath.Base(f.Path)
	}
	mt := f.MimeType
	if mt == "" {
		mt = mime.TypeByExtension(filepath.Ext(name))
	}
	if mt == "" {
		mt = "application/octet-stream"
	}
	ft := f.Type
	if ft == "" {
		ft = fileTypeOf(mt)
	}

	body, err := newUploadBody(fh, name, mt)
	if err != nil {
		return protocol.ChatFile{}, fmt.Errorf("upload: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint(base, protocol.PathFileUploads), body)
	if err != nil {
		return protocol.ChatFile{}, fmt.Errorf("upload: %w", err)
	}
	req.Header.Set("Content-Type", body.contentType)
	req.Header.Set(protocol.HeaderChannelID, channelID)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := h.opts.HTTPClient.Do(req)
	if err != nil {
		return protocol.ChatFile{}, fmt.Errorf("upload: %w", redactURLError(err))
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, h.opts.MaxCardBytes))
	if err != nil {
		return protocol.ChatFile{}, fmt.Errorf("upload: read answer: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return protocol.ChatFile{}, fmt.Errorf("upload: HTTP %d", resp.StatusCode)
	}
	var ur protocol.UploadResponse
	if err := json.Unmarshal(answer, &ur); err != nil || ur.FileRef == "" {
		return protocol.ChatFile{}, errors.New("upload: answer has no file_ref")
	}
	out := protocol.ChatFile{Type: ur.FileType, FileRef: ur.FileRef, Filename: ur.Filename, MimeType: mt, ByteSize: ur.ByteSize, ExpiresAt: ur.ExpiresAt}
	if out.Type == "" {
		out.Type = ft
	}
	if out.Filename == "" {
		out.Filename = name
	}
	return out, nil
}

// pruneFiles deletes downloaded files older than FileRetention, at most
// once a minute, so that FilesDir stays bounded.
func (h *Host) pruneFiles() {
	now := time.Now()
	last := h.lastPrune.Load()
	if now.UnixNano()-last < int64(time.Minute) || !h.lastPrune.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	cutoff := now.Add(-h.opts.FileRetention)
	dirs, err := os.ReadDir(h.filesDir)
	if err != nil {
		return
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		sub := filepath.Join(h.filesDir, d.Name())
		files, err := os.ReadDir(sub)
		if err != nil {
			continue
		}
		for _, f := range files {
			if info, err := f.Info(); err == nil && !f.IsDir() && strings.HasPrefix(f.Name(), "in-") && info.ModTime().Before(cutoff) {
				_ = os.Remove(filepath.Join(sub, f.Name()))
			}
		}
	}
}
