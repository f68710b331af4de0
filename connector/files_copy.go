package connector

import (
	"io"
	"math"
	"os"
	"syscall"

	"github.com/xconn/xconn/internal/chunkcopy"
)

// limitWriter passes at most n bytes to w and fails with errTooLarge
// beyond them (the bytes up to the limit are written). It lets a WriterTo
// source stream into a file under the upload limit.
type limitWriter struct {
	w io.Writer
	n int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.n {
		k, err := l.w.Write(p[:l.n])
		l.n -= int64(k)
		if err != nil {
			return k, err
		}
		return k, errTooLarge
	}
	k, err := l.w.Write(p)
	l.n -= int64(k)
	return k, err
}

// copyToFile copies src into dst and returns the bytes written. It fails
// with errTooLarge (wrapped or not) once src has more than limit bytes;
// dst may then hold a prefix, which the caller removes.
//
// Kernel copies are kept where the runtime has them (copy_file_range from
// a file, splice from a socket); a source with its own WriterTo (the
// upload's multipart part) writes straight from its buffer; anything else
// is read in large chunks.
func copyToFile(dst *os.File, src io.Reader, limit int64) (int64, error) {
	switch src.(type) {
	case *os.File, syscall.Conn:
		n, err := dst.ReadFrom(io.LimitReader(src, min(limit, math.MaxInt64-1)+1))
		if err == nil && n > limit {
			err = errTooLarge
		}
		return n, err
	case io.WriterTo:
		lw := &limitWriter{w: dst, n: limit}
		n, err := src.(io.WriterTo).WriteTo(lw)
		return n, err
	}
	return chunkcopy.Copy(dst, src, limit, chunkcopy.Large, errTooLarge)
}

// fileReader is what File.Open returns: the cached *os.File (it seeks,
// stats and reads like one) with a WriteTo that keeps the kernel's copy
// paths and reads in large chunks otherwise. io.Copy to a socket or a file
// is sendfile or copy_file_range as before; into a writer without ReadFrom,
// or into io.Discard (whose ReadFrom reads 8 KiB at a time), the file is
// read chunkcopy.Large at a time instead of 8-32 KiB.
//
// Like an *os.File, it is not meant for concurrent reads.
type fileReader struct{ *os.File }

// WriteTo writes the rest of the file to w.
func (f fileReader) WriteTo(w io.Writer) (int64, error) {
	if rf, ok := w.(io.ReaderFrom); ok && w != io.Discard {
		return rf.ReadFrom(f.File)
	}
	return chunkcopy.Copy(w, f.File, math.MaxInt64, chunkcopy.Large, errTooLarge)
}
