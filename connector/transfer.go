package connector

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/xconn/xconn/internal/signurl"
	"github.com/xconn/xconn/protocol"
)

// maxFormField bounds each non-file multipart field.
const maxFormField = 64 << 10

// serveUpload is POST /files/uploads: one multipart "file" part streamed
// to disk, bound to the channel of X-XAgent-Connector-Channel-ID. The body
// is parsed by formReader, which writes the part to the file cache in
// large chunks straight from its read buffer.
func (s *Server) serveUpload(w http.ResponseWriter, r *http.Request) {
	if !s.checkAPIKey(w, r) {
		return
	}
	if !s.started() {
		writeJSONError(w, http.StatusServiceUnavailable, "unavailable", "connector is not running")
		return
	}
	channel := r.Header.Get(protocol.HeaderChannelID)
	if channel == "" {
		writeJSONError(w, http.StatusBadRequest, string(protocol.CodeConnectorChannelIDRequired), protocol.HeaderChannelID+" is required")
		return
	}
	if _, err := s.channelState(channel); err != nil {
		writeJSONError(w, http.StatusNotFound, string(protocol.CodeConnectionNotFound), "unknown channel")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxUploadBytes+1<<20)
	bufSize := formBufSize // a small upload of known length gets a small buffer
	if r.ContentLength >= 0 && r.ContentLength < formBufSize {
		bufSize = max(int(r.ContentLength)+1, 4096)
	}
	mr, err := newFormReader(r.Body, r.Header.Get("Content-Type"), bufSize)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, string(protocol.CodeInvalidPacket), "multipart/form-data body required")
		return
	}
	var saved bool
	var resp protocol.UploadResponse
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if isTooLarge(err) {
				writeJSONError(w, http.StatusRequestEntityTooLarge, "file_too_large", "upload exceeds the limit")
				return
			}
			writeJSONError(w, http.StatusBadRequest, string(protocol.CodeInvalidPacket), "malformed multipart body")
			return
		}
		if part.FormName() != "file" || saved {
			_, _ = io.Copy(io.Discard, io.LimitReader(part, maxFormField))
			_ = part.Close()
			continue
		}
		rec, err := s.saveFile(r.Context(), channel, "upload", part.FileName(), partMime(part.Header.Get("Content-Type")), "", part, s.opts.FileTTL)
		_ = part.Close()
		if err != nil {
			if isTooLarge(err) {
				s.metrics.uploadsRejected.Inc()
				writeJSONError(w, http.StatusRequestEntityTooLarge, "file_too_large", "upload exceeds the limit")
				return
			}
			s.log.Error("connector: save upload", "err", err)
			writeJSONError(w, http.StatusInternalServerError, string(protocol.CodeInternal), "cannot store the file")
			return
		}
		saved = true
		resp = protocol.UploadResponse{FileRef: rec.Ref, FileType: rec.FileType, Filename: rec.Filename,
			ByteSize: rec.Size, ExpiresAt: rec.ExpiresAt.UnixMilli()}
	}
	if !saved {
		writeJSONError(w, http.StatusBadRequest, string(protocol.CodeInvalidPacket), `multipart field "file" is required`)
		return
	}
	s.metrics.uploads.Inc()
	writeJSON(w, resp)
}

// partMime keeps a part's media type unless it is the generic default.
func partMime(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt == "application/octet-stream" {
		return ""
	}
	return mt
}

// serveFileRef is GET /files/refs/{file_ref}: a signed URL (sig) or the
// system API key with the file's channel header. 404 for unknown or
// expired, 403 for a wrong channel or signature.
func (s *Server) serveFileRef(w http.ResponseWriter, r *http.Request) {
	if !s.started() {
		writeJSONError(w, http.StatusServiceUnavailable, "unavailable", "connector is not running")
		return
	}
	ref := r.PathValue("ref")
	rec, err := s.opts.Store.GetFile(r.Context(), s.card.ConnectorCardID, ref)
	if err != nil || !s.now().Before(rec.ExpiresAt) {
		writeJSONError(w, http.StatusNotFound, "not_found", "file_ref does not exist or expired")
		return
	}
	if sig := r.URL.Query().Get("sig"); sig != "" {
		switch err := s.signer.Verify(sig, fileSubject(ref, rec.ChannelID), s.now()); {
		case errors.Is(err, signurl.ErrExpired):
			writeJSONError(w, http.StatusNotFound, "not_found", "download URL expired")
			return
		case err != nil:
			writeJSONError(w, http.StatusForbidden, "forbidden", "download URL is not valid for this file")
			return
		}
	} else {
		if !s.checkAPIKey(w, r) {
			return
		}
		if r.Header.Get(protocol.HeaderChannelID) != rec.ChannelID {
			writeJSONError(w, http.StatusForbidden, "forbidden", "file_ref does not belong to this channel")
			return
		}
	}
	f, err := os.Open(rec.Path)
	if err != nil {
		writeJSONError(w, http.StatusNotFound, "not_found", "file_ref does not exist or expired")
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", rec.MimeType)
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": rec.Filename}))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "private, no-store")
	http.ServeContent(w, r, "", rec.CreatedAt, f)
	s.metrics.downloads.Inc()
}

func fileSubject(ref, channel string) string { return ref + "|" + channel }

// downloadURL returns the signed, short-lived URL of an inbound file.
func (s *Server) downloadURL(ref, channel string, expires time.Time) string {
	p := "/files/refs/" + url.PathEscape(ref) + "?sig=" + url.QueryEscape(s.signer.Sign(fileSubject(ref, channel), expires))
	if s.opts.PublicURL != "" {
		return strings.TrimRight(s.opts.PublicURL, "/") + p
	}
	return strings.TrimRight(s.opts.PathPrefix, "/") + p
}
