package connector

import (
	"errors"
	"io"
	"math"
	"os"
	"syscall"
)

// Chunk sizes of transfer-plane copies. A copy starts with a small buffer
// so that the many small files of a chat cost little, and switches to the
// large one once a chunk comes back full: a 256 MiB file is then a few
// hundred write system calls instead of thousands of 4-32 KiB ones.
const (
	copyBufSmall = 64 << 10
	copyBufLarge = 1 << 20
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
	return copyChunks(dst, src, limit)
}

// copyChunks copies src to dst in chunks that start at copyBufSmall and
// grow to copyBufLarge, filling each chunk before writing it. Beyond limit
// bytes it writes the first limit and fails with errTooLarge.
func copyChunks(dst io.Writer, src io.Reader, limit int64) (int64, error) {
	buf := make([]byte, copyBufSmall)
	var total int64
	for {
		n, rerr := fill(src, buf)
		if n > 0 {
			if total+int64(n) > limit {
				n = int(limit - total)
				rerr = errTooLarge
			}
			w, werr := dst.Write(buf[:n])
			total += int64(w)
			if werr != nil {
				return total, werr
			}
		}
		switch {
		case rerr == nil:
			if len(buf) < copyBufLarge {
				buf = make([]byte, copyBufLarge)
			}
		case errors.Is(rerr, io.EOF):
			return total, nil
		default:
			return total, rerr
		}
	}
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

// fileReader is what File.Open returns: the cached *os.File (it seeks,
// stats and reads like one) with a WriteTo that keeps the kernel's copy
// paths and reads in large chunks otherwise. io.Copy to a socket or a file
// is sendfile or copy_file_range as before; into a writer without ReadFrom,
// or into io.Discard (whose ReadFrom reads 8 KiB at a time), the file is
// read copyBufLarge at a time instead of 8-32 KiB.
//
// Like an *os.File, it is not meant for concurrent reads.
type fileReader struct{ *os.File }

// WriteTo writes the rest of the file to w.
func (f fileReader) WriteTo(w io.Writer) (int64, error) {
	if rf, ok := w.(io.ReaderFrom); ok && w != io.Discard {
		return rf.ReadFrom(f.File)
	}
	return copyChunks(w, f.File, math.MaxInt64)
}
