package host

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/xconn/xconn/internal/chunkcopy"
)

// TestUploadBodyBytes checks that the upload body, read or written, is
// byte for byte what the former streaming upload wrote through
// mime/multipart.Writer for the same part, and that mime/multipart reads
// the file back from it.
func TestUploadBodyBytes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, filename, mt string
		size               int
	}{
		{"empty", "a.txt", "text/plain", 0},
		{"small", "photo.jpg", "image/jpeg", 10},
		{"odd name", `we "ird" ñame.bin`, "application/octet-stream", 1000},
		{"several chunks", "big.bin", "application/octet-stream", 3*chunkcopy.Large + 17},
	}
	for _, tc := range cases {
		data := make([]byte, tc.size)
		for i := range data {
			data[i] = byte(i * 7)
		}
		for _, via := range []string{"read", "write-to"} {
			body, err := newUploadBody(bytes.NewReader(data), tc.filename, tc.mt)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if via == "read" {
				_, err = io.Copy(&got, iotest.HalfReader(body))
			} else {
				_, err = body.WriteTo(&got)
			}
			if err != nil {
				t.Fatalf("%s/%s: %v", tc.name, via, err)
			}
			// The reference, with the same boundary.
			_, params, _ := strings.Cut(body.contentType, "boundary=")
			var want bytes.Buffer
			mw := multipart.NewWriter(&want)
			if err := mw.SetBoundary(params); err != nil {
				t.Fatal(err)
			}
			hdr := textproto.MIMEHeader{}
			hdr.Set("Content-Disposition", mime.FormatMediaType("form-data", map[string]string{"name": "file", "filename": tc.filename}))
			hdr.Set("Content-Type", tc.mt)
			pw, _ := mw.CreatePart(hdr)
			_, _ = pw.Write(data)
			_ = mw.Close()
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("%s/%s: body differs from mime/multipart.Writer's (%d vs %d bytes)", tc.name, via, got.Len(), want.Len())
			}
			mr := multipart.NewReader(&got, params)
			p, err := mr.NextPart()
			if err != nil {
				t.Fatalf("%s/%s: %v", tc.name, via, err)
			}
			back, _ := io.ReadAll(p)
			if p.FormName() != "file" || p.Header.Get("Content-Type") != tc.mt || !bytes.Equal(back, data) {
				t.Errorf("%s/%s: read back %q %q, %d bytes", tc.name, via, p.FormName(), p.Header.Get("Content-Type"), len(back))
			}
		}
	}
}

// failWriter fails every write.
type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

// TestCopyChunks covers the limit and the error rules of the download copy.
func TestCopyChunks(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte("abcdefgh"), (2*chunkcopy.Large+chunkcopy.Small)/8+5)
	boom := errors.New("boom")
	cases := []struct {
		name    string
		src     func() io.Reader
		dst     func(*bytes.Buffer) io.Writer
		limit   int64
		wantN   int64
		wantErr error
	}{
		{"all", func() io.Reader { return bytes.NewReader(data) }, nil, int64(len(data)), int64(len(data)), nil},
		{"pieces", func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) }, nil, 1 << 40, int64(len(data)), nil},
		{"empty", func() io.Reader { return strings.NewReader("") }, nil, 10, 0, nil},
		{"one over", func() io.Reader { return bytes.NewReader(data) }, nil, int64(len(data)) - 1, int64(len(data)) - 1, errFileTooLarge},
		{"small limit", func() io.Reader { return bytes.NewReader(data) }, nil, 3, 3, errFileTooLarge},
		{"truncated source", func() io.Reader {
			return io.MultiReader(bytes.NewReader(data[:chunkcopy.Small+10]), iotest.ErrReader(io.ErrUnexpectedEOF))
		}, nil, 1 << 40, chunkcopy.Small + 10, io.ErrUnexpectedEOF},
		{"source error", func() io.Reader { return iotest.ErrReader(boom) }, nil, 1 << 40, 0, boom},
		{"write error", func() io.Reader { return bytes.NewReader(data) }, func(*bytes.Buffer) io.Writer { return failWriter{boom} }, 1 << 40, 0, boom},
	}
	for _, tc := range cases {
		var buf bytes.Buffer
		var dst io.Writer = &buf
		if tc.dst != nil {
			dst = tc.dst(&buf)
		}
		n, err := copyChunks(dst, tc.src(), tc.limit)
		if n != tc.wantN || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
			t.Errorf("%s: n %d err %v; want %d, %v", tc.name, n, err, tc.wantN, tc.wantErr)
		}
		if tc.dst == nil && !bytes.Equal(buf.Bytes(), data[:min(int(n), len(data))]) && tc.name != "truncated source" {
			t.Errorf("%s: wrong bytes written", tc.name)
		}
	}
}
