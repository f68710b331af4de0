// Package chunkcopy copies file bodies on the transfer plane in large
// chunks with a size limit. It is shared by the connector SDK (caching
// uploads and published files) and the host (saving downloads). It holds no
// state; every call owns its buffer, so concurrent calls are safe.
package chunkcopy

import (
	"errors"
	"io"
)

// Chunk sizes. A copy starts with a Small buffer so that the many small
// files of a chat cost little, and switches to Large once a chunk comes back
// full: a 256 MiB file is then a few hundred write system calls instead of
// thousands of 4-32 KiB ones.
const (
	Small = 64 << 10
	Large = 1 << 20
)

// Copy copies src to dst in chunks that start at Small bytes and grow to
// large bytes, filling each chunk before writing it, and returns the bytes
// written. Beyond limit bytes it writes the first limit and returns
// tooLarge. A source that ends early with an error returns that error, never
// a short success.
func Copy(dst io.Writer, src io.Reader, limit int64, large int, tooLarge error) (int64, error) {
	buf := make([]byte, min(Small, large))
	var total int64
	for {
		n, rerr := Fill(src, buf)
		if n > 0 {
			p, over := buf[:n], false
			if int64(n) > limit-total {
				p, over = p[:limit-total], true
			}
			w, werr := dst.Write(p)
			total += int64(w)
			if werr != nil {
				return total, werr
			}
			if over {
				return total, tooLarge
			}
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

// Fill reads into buf until it is full or src fails; unlike io.ReadFull it
// returns src's own error (io.EOF at a clean end), so that a truncated
// source is never taken for a complete one. A source that returns nothing
// 100 times in a row fails with io.ErrNoProgress.
func Fill(src io.Reader, buf []byte) (int, error) {
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
