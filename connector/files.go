package connector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/xconn/xconn/internal/signurl"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// File is a transfer-plane file: an upload from xAgent (the files of an
// AssistantMessage, a file_ref given to a tool) or a cached inbound file.
type File struct {
	Ref       string
	Type      protocol.FileType
	Filename  string
	MimeType  string
	Size      int64
	ExpiresAt time.Time
	path      string
}

// Open opens the file's bytes; the caller closes the reader. The reader is
// also an io.Seeker, and io.Copy from it to a socket or a file stays in the
// kernel (sendfile, copy_file_range).
func (f *File) Open() (io.ReadCloser, error) {
	r, err := os.Open(f.path)
	if err != nil {
		return nil, fmt.Errorf("connector: open file %s: %w", f.Ref, err)
	}
	return fileReader{r}, nil
}

func fileOf(rec store.File) File {
	return File{Ref: rec.Ref, Type: rec.FileType, Filename: rec.Filename, MimeType: rec.MimeType,
		Size: rec.Size, ExpiresAt: rec.ExpiresAt, path: rec.Path}
}

// errTooLarge reports an upload over Options.MaxUploadBytes.
var errTooLarge = errors.New("connector: file exceeds the upload limit")

// saveFile streams r to the file cache (bounded by MaxUploadBytes) and
// records it for channel.
func (s *Server) saveFile(ctx context.Context, channel, direction, name, mimeType string, typ protocol.FileType, r io.Reader, ttl time.Duration) (store.File, error) {
	ref := signurl.RandomID("file_")
	dir, err := s.channelDir(channel)
	if err != nil {
		return store.File{}, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return store.File{}, fmt.Errorf("connector: file cache: %w", err)
	}
	path := filepath.Join(dir, ref)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return store.File{}, fmt.Errorf("connector: create file: %w", err)
	}
	n, err := copyToFile(f, r, s.opts.MaxUploadBytes)
	cerr := f.Close()
	if err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		if errors.Is(err, errTooLarge) {
			return store.File{}, err
		}
		return store.File{}, fmt.Errorf("connector: write file: %w", err)
	}
	name = cleanFilename(name)
	if mimeType == "" {
		mimeType = mime.TypeByExtension(filepath.Ext(name))
	}
	if mimeType == "" {
		mimeType = "application/octet-stream"
	}
	if typ == "" {
		typ = fileTypeOf(mimeType)
	}
	now := s.now()
	rec := store.File{Ref: ref, CardID: s.card.ConnectorCardID, ChannelID: channel, Direction: direction,
		Path: path, Filename: name, MimeType: mimeType, FileType: typ, Size: n,
		ExpiresAt: now.Add(ttl), CreatedAt: now}
	if err := s.opts.Store.PutFile(ctx, rec); err != nil {
		_ = os.Remove(path)
		return store.File{}, fmt.Errorf("connector: record file: %w", err)
	}
	return rec, nil
}

// channelDir is the cache directory of one channel's files, removed with
// the channel. Channel ids are server-issued; anything that could escape
// the cache is refused.
func (s *Server) channelDir(channel string) (string, error) {
	if channel == "" || channel == "." || channel == ".." || strings.ContainsAny(channel, "/\\\x00") {
		return "", fmt.Errorf("connector: channel id %q cannot name a cache directory", channel)
	}
	return filepath.Join(s.dataDir, channel), nil
}

// removeChannelFiles deletes the bytes of every file of a channel.
func (s *Server) removeChannelFiles(channel string) {
	dir, err := s.channelDir(channel)
	if err != nil {
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		s.log.Warn("connector: remove channel files", "channel", channel, "err", err)
	}
}

// cleanFilename keeps the base name only, without path or control bytes.
func cleanFilename(name string) string {
	name = filepath.Base(strings.ReplaceAll(name, "\\", "/"))
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '"' {
			return -1
		}
		return r
	}, name)
	if name == "." || name == "/" || name == "" {
		return "file"
	}
	if len(name) > 255 {
		name = name[:255]
	}
	return name
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

// lookupFile returns a live file of channel, or a secret-free error.
func (s *Server) lookupFile(ctx context.Context, channel, ref string) (store.File, *protocol.Error) {
	rec, err := s.opts.Store.GetFile(ctx, s.card.ConnectorCardID, ref)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return rec, protocol.Errorf(protocol.CodeInvalidPacket, "file_ref %s does not exist", ref)
	case err != nil:
		s.log.Error("connector: load file", "err", err)
		return rec, &protocol.Error{Code: protocol.CodeInternal, Message: "file store unavailable", Retryable: true}
	case !s.now().Before(rec.ExpiresAt):
		return rec, protocol.Errorf(protocol.CodeInvalidPacket, "file_ref %s expired", ref)
	case rec.ChannelID != channel:
		return rec, protocol.Errorf(protocol.CodeConnectorChannelNotOwned, "file_ref %s belongs to another channel", ref)
	}
	return rec, nil
}

// resolveFiles turns the file_refs of a final message into Files.
func (s *Server) resolveFiles(ctx context.Context, channel string, files []protocol.ChatFile) ([]File, *protocol.Error) {
	out := make([]File, 0, len(files))
	for _, cf := range files {
		rec, perr := s.lookupFile(ctx, channel, cf.FileRef)
		if perr != nil {
			return nil, perr
		}
		f := fileOf(rec)
		if cf.Filename != "" {
			f.Filename = cleanFilename(cf.Filename)
		}
		if cf.Type != "" {
			f.Type = cf.Type
		}
		out = append(out, f)
	}
	return out, nil
}

func (s *Server) openFile(ctx context.Context, channel, ref string) (*File, error) {
	rec, perr := s.lookupFile(ctx, channel, ref)
	if perr != nil {
		return nil, perr
	}
	f := fileOf(rec)
	return &f, nil
}

// sweepFiles deletes expired files from disk and from the store.
func (s *Server) sweepFiles(ctx context.Context) {
	for range 100 { // bounded work per sweep
		files, err := s.opts.Store.ExpiredFiles(ctx, s.card.ConnectorCardID, s.now(), 256)
		if err != nil {
			s.log.Warn("connector: list expired files", "err", err)
			return
		}
		for _, f := range files {
			if err := os.Remove(f.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
				s.log.Warn("connector: remove expired file", "ref", f.Ref, "err", err)
			}
			if err := s.opts.Store.DeleteFile(ctx, s.card.ConnectorCardID, f.Ref); err != nil {
				s.log.Warn("connector: delete expired file", "ref", f.Ref, "err", err)
				return
			}
			s.metrics.filesExpired.Inc()
		}
		if len(files) < 256 {
			return
		}
	}
}
