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

	"github.com/xconn/xconn/internal/chunkcopy"
)

// errFileTooLarge reports a download over Options.MaxFileBytes.
var errFileTooLarge = errors.New("host: file exceeds the download limit")

// copyChunks copies src to dst in chunks that start at chunkcopy.Small and
// grow to chunkcopy.Large, filling each chunk before writing it. Beyond limit
// bytes it writes the first limit and fails with errFileTooLarge.
func copyChunks(dst io.Writer, src io.Reader, limit int64) (int64, error) {
	return copyChunksSize(dst, src, limit, chunkcopy.Large)
}

// copyChunksSize is copyChunks with large chunks of the given size.
func copyChunksSize(dst io.Writer, src io.Reader, limit int64, large int) (int64, error) {
	return chunkcopy.Copy(dst, src, limit, large, errFileTooLarge)
}

// uploadBody is the multipart/form-data body of one upload: the part
// header, the file, the closing boundary; the bytes are the ones
// mime/multipart.Writer produces for the same part. It is sent with chunked
// encoding, as a streamed body of unknown length, but without a pipe and a
// writer goroutine: the transport calls WriteTo, which moves the file in
// chunks of up to chunkcopy.Large (three system calls per chunk instead of two
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
