package host

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/textproto"
)

// Chunk sizes of downloads into FilesDir. A copy starts with a small buffer
// so that the many small files of a chat cost little, and switches to the
// large one once a chunk comes back full: a 256 MiB file is then a few
// hundred write system calls instead of thousands of 32 KiB ones.
const (
	copyBufSmall = 64 << 10
	copyBufLarge = 1 << 20
)

// errFileTooLarge reports a download over Options.MaxFileBytes.
var errFileTooLarge = errors.New("host: file exceeds the download limit")

// copyChunks copies src to dst in chunks that start at copyBufSmall and
// grow to copyBufLarge, filling each chunk before writing it. Beyond limit
// bytes it writes the first limit and fails with errFileTooLarge.
func copyChunks(dst io.Writer, src io.Reader, limit int64) (int64, error) {
	return copyChunksSize(dst, src, limit, copyBufLarge)
}

// copyChunksSize is copyChunks with large chunks of the given size.
func copyChunksSize(dst io.Writer, src io.Reader, limit int64, large int) (int64, error) {
	buf := make([]byte, min(copyBufSmall, large))
	var total int64
	for {
		n, rerr := fill(src, buf)
		var werr error
		total, werr = writeLimited(dst, buf[:n], total, limit)
		if werr != nil {
			return total, werr
		}
		switch {
		case rerr == nil:
			if len(buf) < large {
				buf = make([]byte, large)
			}
		case errors.Is(rerr, io.EOF):
			return total, nil
		default:
			return total, rerr
		}
	}
}

// writeLimited writes p to dst after total bytes already written; past
// limit it writes up to the limit and fails with errFileTooLarge. It
// returns the new total.
func writeLimited(dst io.Writer, p []byte, total, limit int64) (int64, error) {
	tooLarge := false
	if int64(len(p)) > limit-total {
		p, tooLarge = p[:limit-total], true
	}
	n, err := dst.Write(p)
	total += int64(n)
	if err == nil && tooLarge {
		err = errFileTooLarge
	}
	return total, err
}

// fill reads into buf until it is full or src fails; unlike io.ReadFull it
// returns src's own error (io.EOF at a clean end), so that a truncated
// source is never taken for a complete one.
func fill(src io.Reader, buf []byte) (int, error) {
	n, empty := 0, 0
	for n < len(buf) {
		k, err := src.Read(buf[n:])
		n += k
		if err != nil {
			return n, err
		}
		if k > 0 {
			empty = 0
		} else if empty++; empty >= 100 {
			return n, io.ErrNoProgress
		}
	}
	return n, nil
}

// uploadBody is the multipart/form-data body of one upload: the part
// header, the file, the closing boundary; the bytes are the ones
// mime/multipart.Writer produces for the same part. It is sent with chunked
// encoding, as a streamed body of unknown length, but without a pipe and a
// writer goroutine: the transport calls WriteTo, which moves the file in
// chunks of up to copyBufLarge (three system calls per chunk instead of two
// per 32 KiB).
//
// An uploadBody is read once, by one goroutine.
type uploadBody struct {
	contentType string
	pre, post   []byte
	file        io.Reader
	r           io.Reader // pre, file, post: the Read path
}

// newUploadBody frames file as the "file" field named name with media
// type mt.
func newUploadBody(file io.Reader, name, mt string) (*uploadBody, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	hdr := textproto.MIMEHeader{}
	hdr.Set("Content-Disposition", mime.FormatMediaType("form-data", map[string]string{"name": "file", "filename": name}))
	hdr.Set("Content-Type", mt)
	if _, err := mw.CreatePart(hdr); err != nil {
		return nil, fmt.Errorf("multipart header: %w", err)
	}
	head := buf.Len()
	if err := mw.Close(); err != nil {
		return nil, fmt.Errorf("multipart trailer: %w", err)
	}
	framing := buf.Bytes()
	b := &uploadBody{contentType: mw.FormDataContentType(), pre: framing[:head], post: framing[head:], file: file}
	b.r = io.MultiReader(bytes.NewReader(b.pre), file, bytes.NewReader(b.post))
	return b, nil
}

// Read reads the body.
func (b *uploadBody) Read(p []byte) (int, error) { return b.r.Read(p) }

// WriteTo writes the whole body to w (the transport's chunked writer) in
// large chunks.
func (b *uploadBody) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(b.pre)
	total := int64(n)
	if err != nil {
		return total, err
	}
	m, err := copyChunks(w, b.file, math.MaxInt64)
	total += m
	if err != nil {
		return total, err
	}
	n, err = w.Write(b.post)
	return total + int64(n), err
}
