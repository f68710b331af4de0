package connector

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/textproto"
	"path/filepath"
	"strings"
)

// Limits of the upload's multipart parser.
const (
	// formBufSize is the read buffer of one upload: a part's bytes are
	// written to the file cache straight from it, so it is also the size of
	// those writes.
	formBufSize = 256 << 10
	// maxPartHeaderBytes bounds the header block of one part.
	maxPartHeaderBytes = 64 << 10
	// maxPartHeaders bounds the header lines of one part.
	maxPartHeaders = 1000
)

var errPartHeader = errors.New("multipart: malformed part header")

// formReader reads a multipart/form-data body (RFC 7578) part by part. It
// accepts what mime/multipart.Reader accepts and splits parts the same way
// (its boundary scanning is adapted from that package), but it reads the
// body through one formBufSize buffer and lets a part write its bytes
// straight from that buffer (formPart.WriteTo): a 256 MiB upload is then a
// few thousand large reads and writes, where mime/multipart reads and
// returns at most 4 KiB at a time.
//
// A formReader and its parts are not safe for concurrent use.
type formReader struct {
	br        *bufio.Reader
	cur       *formPart
	partsRead int

	nl               []byte // "\r\n" or "\n" (set after the first boundary line)
	nlDashBoundary   []byte // nl + "--boundary"
	dashBoundaryDash []byte // "--boundary--"
	dashBoundary     []byte // "--boundary"
}

// newFormReader reads body as multipart/form-data with the boundary of
// contentType, through a read buffer of size bytes (formBufSize for a large
// upload; tests use small ones to cross buffer edges often). It fails when
// contentType is not multipart/form-data with a boundary.
func newFormReader(body io.Reader, contentType string, size int) (*formReader, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, fmt.Errorf("multipart: content type: %w", err)
	}
	if mt != "multipart/form-data" {
		return nil, fmt.Errorf("multipart: content type %q is not multipart/form-data", mt)
	}
	boundary := params["boundary"]
	if boundary == "" {
		return nil, errors.New("multipart: no boundary")
	}
	b := []byte("\r\n--" + boundary + "--")
	return &formReader{
		br:               bufio.NewReaderSize(&stickyErrorReader{r: body}, size),
		nl:               b[:2],
		nlDashBoundary:   b[:len(b)-2],
		dashBoundaryDash: b[2:],
		dashBoundary:     b[2 : len(b)-2],
	}, nil
}

// stickyErrorReader keeps returning the first error of r: bufio.Reader
// forgets an error once it has reported it.
type stickyErrorReader struct {
	r   io.Reader
	err error
}

func (r *stickyErrorReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	var n int
	n, r.err = r.r.Read(p)
	return n, r.err
}

// NextPart skips the rest of the current part and returns the next one, or
// io.EOF after the final boundary.
func (r *formReader) NextPart() (*formPart, error) {
	if r.cur != nil {
		_ = r.cur.Close()
		r.cur = nil
	}
	expectNewPart := false
	for {
		line, err := r.br.ReadSlice('\n')
		if errors.Is(err, io.EOF) && r.isFinalBoundary(line) {
			return nil, io.EOF
		}
		if err != nil {
			return nil, fmt.Errorf("multipart: next part: %w", err)
		}
		if r.isBoundaryDelimiterLine(line) {
			r.partsRead++
			hdr, err := r.readHeader()
			if err != nil {
				return nil, err
			}
			p := &formPart{Header: hdr, fr: r}
			p.r = p.raw()
			if strings.EqualFold(hdr.Get("Content-Transfer-Encoding"), "quoted-printable") {
				hdr.Del("Content-Transfer-Encoding")
				p.r = quotedprintable.NewReader(p.raw())
				p.decoded = true
			}
			r.cur = p
			return p, nil
		}
		if r.isFinalBoundary(line) {
			return nil, io.EOF
		}
		if expectNewPart {
			return nil, fmt.Errorf("multipart: expecting a new part; got line %q", line)
		}
		if r.partsRead == 0 {
			continue // preamble
		}
		if bytes.Equal(line, r.nl) {
			expectNewPart = true
			continue
		}
		return nil, fmt.Errorf("multipart: unexpected line %q", line)
	}
}

// readHeader reads the header block of a part, up to its empty line, as
// net/textproto.Reader.ReadMIMEHeader does (folded lines joined by one
// space, a name with spaces kept as is, control bytes refused), within
// maxPartHeaderBytes and maxPartHeaders.
func (r *formReader) readHeader() (textproto.MIMEHeader, error) {
	hdr := textproto.MIMEHeader{}
	var size, count int
	var kv []byte // the logical line being assembled
	add := func() error {
		if kv == nil {
			return nil
		}
		k, v, _ := bytes.Cut(kv, []byte(":"))
		key, ok := headerKey(k)
		if !ok {
			return errPartHeader
		}
		v = bytes.TrimLeft(v, " \t")
		if !validHeaderValue(v) {
			return errPartHeader
		}
		if count++; count > maxPartHeaders {
			return errors.New("multipart: too many part headers")
		}
		hdr[key] = append(hdr[key], string(v))
		kv = nil
		return nil
	}
	for {
		line, err := r.br.ReadSlice('\n')
		size += len(line)
		if size > maxPartHeaderBytes || errors.Is(err, bufio.ErrBufferFull) {
			return nil, errors.New("multipart: part header too large")
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("multipart: part header: %w", err)
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) > 0 && (line[0] == ' ' || line[0] == '\t') { // obsolete line folding
			if kv == nil {
				return nil, errPartHeader
			}
			kv = append(append(kv, ' '), trimLWSP(line)...)
			continue
		}
		if err := add(); err != nil {
			return nil, err
		}
		if len(line) == 0 {
			return hdr, nil
		}
		if bytes.IndexByte(line, ':') < 0 {
			return nil, errPartHeader
		}
		kv = append([]byte(nil), trimLWSP(line)...) // ReadSlice reuses its buffer
	}
}

// headerKey canonicalizes a header name as net/textproto does: a token is
// canonicalized, a name with spaces is kept as it is, anything else fails.
func headerKey(k []byte) (string, bool) {
	if len(k) == 0 {
		return "", false
	}
	spaces := false
	for _, c := range k {
		switch {
		case c == ' ':
			spaces = true
		case c < ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0:
			return "", false
		}
	}
	if spaces {
		return string(k), true
	}
	return textproto.CanonicalMIMEHeaderKey(string(k)), true
}

// validHeaderValue refuses control bytes other than tab, as net/textproto
// does.
func validHeaderValue(v []byte) bool {
	for _, c := range v {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// trimLWSP trims spaces and tabs on both ends.
func trimLWSP(b []byte) []byte {
	return bytes.Trim(b, " \t")
}

func (r *formReader) isFinalBoundary(line []byte) bool {
	if !bytes.HasPrefix(line, r.dashBoundaryDash) {
		return false
	}
	rest := skipLWSPChar(line[len(r.dashBoundaryDash):])
	return len(rest) == 0 || bytes.Equal(rest, r.nl)
}

func (r *formReader) isBoundaryDelimiterLine(line []byte) bool {
	if !bytes.HasPrefix(line, r.dashBoundary) {
		return false
	}
	rest := skipLWSPChar(line[len(r.dashBoundary):])
	// Lines ending in \n instead of \r\n violate RFC 2046 but occur in
	// practice: the first boundary line decides.
	if r.partsRead == 0 && len(rest) == 1 && rest[0] == '\n' {
		r.nl = r.nl[1:]
		r.nlDashBoundary = r.nlDashBoundary[1:]
	}
	return bytes.Equal(rest, r.nl)
}

func skipLWSPChar(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// formPart is one part of a formReader: its header and a reader of its
// bytes, valid until the next NextPart.
type formPart struct {
	Header textproto.MIMEHeader

	fr      *formReader
	r       io.Reader // the part's bytes, decoded when decoded is set
	decoded bool

	n       int   // bytes at the head of the buffer known to be part data
	total   int64 // bytes of the part read so far
	err     error // set once the part's end or a read error is known
	readErr error // the body's error, once seen

	disposition string
	params      map[string]string
}

// FormName is the name parameter of a form-data Content-Disposition.
func (p *formPart) FormName() string {
	p.parseDisposition()
	if p.disposition != "form-data" {
		return ""
	}
	return p.params["name"]
}

// FileName is the base of the filename parameter of Content-Disposition.
func (p *formPart) FileName() string {
	p.parseDisposition()
	name := p.params["filename"]
	if name == "" {
		return ""
	}
	return filepath.Base(name)
}

func (p *formPart) parseDisposition() {
	if p.params != nil {
		return
	}
	var err error
	p.disposition, p.params, err = mime.ParseMediaType(p.Header.Get("Content-Disposition"))
	if err != nil || p.params == nil {
		p.params = map[string]string{}
	}
}

// Read reads the part's bytes.
func (p *formPart) Read(b []byte) (int, error) { return p.r.Read(b) }

// WriteTo writes the rest of the part's bytes to w, straight from the read
// buffer unless the part is quoted-printable.
func (p *formPart) WriteTo(w io.Writer) (int64, error) {
	if p.decoded {
		return io.Copy(w, onlyReader{p.r})
	}
	var written int64
	for {
		for p.n == 0 && p.err == nil {
			p.gather()
			p.scan()
		}
		if p.n == 0 {
			if errors.Is(p.err, io.EOF) {
				return written, nil
			}
			return written, p.err
		}
		buf, _ := p.fr.br.Peek(p.n)
		k, err := w.Write(buf)
		_, _ = p.fr.br.Discard(k)
		p.n -= k
		p.total += int64(k)
		written += int64(k)
		if err != nil {
			return written, err
		}
	}
}

// Close skips the rest of the part.
func (p *formPart) Close() error {
	_, _ = io.Copy(io.Discard, p)
	return nil
}

// onlyReader hides everything but Read.
type onlyReader struct{ io.Reader }

// raw returns a reader of the part's undecoded bytes.
func (p *formPart) raw() io.Reader { return rawPartReader{p} }

type rawPartReader struct{ p *formPart }

func (rr rawPartReader) Read(d []byte) (int, error) {
	p := rr.p
	for p.n == 0 && p.err == nil {
		p.scan()
	}
	if p.n == 0 {
		return 0, p.err
	}
	n, _ := p.fr.br.Read(d[:min(len(d), p.n)])
	p.total += int64(n)
	p.n -= n
	if p.n == 0 {
		return n, p.err
	}
	return n, nil
}

// gather waits until the read buffer is full or the body has ended, so
// that WriteTo passes large chunks on.
func (p *formPart) gather() {
	if p.readErr != nil {
		return
	}
	br := p.fr.br
	if _, err := br.Peek(br.Size()); err != nil {
		p.readErr = err
		if errors.Is(err, io.EOF) {
			p.readErr = io.ErrUnexpectedEOF
		}
	}
}

// scan finds how many buffered bytes are part data (p.n) and whether the
// part ends after them (p.err); when the buffer does not tell yet, it reads
// more.
func (p *formPart) scan() {
	br := p.fr.br
	peek, _ := br.Peek(br.Buffered())
	p.n, p.err = scanUntilBoundary(peek, p.fr.dashBoundary, p.fr.nlDashBoundary, p.total, p.readErr)
	if p.n == 0 && p.err == nil {
		// Force buffered I/O to read more into the buffer.
		if _, err := br.Peek(len(peek) + 1); err != nil {
			p.readErr = err
			if errors.Is(err, io.EOF) {
				p.readErr = io.ErrUnexpectedEOF
			}
		}
	}
}

// scanUntilBoundary scans buf to identify how much of it can be safely
// returned as part of the part body (adapted from mime/multipart).
// dashBoundary is "--boundary"; nlDashBoundary is "\r\n--boundary" or
// "\n--boundary"; total is the bytes of the part read so far, readErr the
// body's error if any. It returns the number of data bytes from the start of
// buf and the error to return after them: io.EOF when the boundary follows.
func scanUntilBoundary(buf, dashBoundary, nlDashBoundary []byte, total int64, readErr error) (int, error) {
	if total == 0 {
		// At the start of the body, the boundary may appear without a
		// leading newline.
		if bytes.HasPrefix(buf, dashBoundary) {
			switch matchAfterPrefix(buf, dashBoundary, readErr) {
			case -1:
				return len(dashBoundary), nil
			case 0:
				return 0, nil
			case +1:
				return 0, io.EOF
			}
		}
		if bytes.HasPrefix(dashBoundary, buf) {
			return 0, readErr
		}
	}
	// Search for "\n--boundary".
	if i := bytes.Index(buf, nlDashBoundary); i >= 0 {
		switch matchAfterPrefix(buf[i:], nlDashBoundary, readErr) {
		case -1:
			return i + len(nlDashBoundary), nil
		case 0:
			return i, nil
		case +1:
			return i, io.EOF
		}
	}
	if bytes.HasPrefix(nlDashBoundary, buf) {
		return 0, readErr
	}
	// Everything up to a possible start of the boundary at the end of buf
	// is data. That start can only lie in the last len(nlDashBoundary)-1
	// bytes (a whole one was searched for above): looking there only keeps
	// mime/multipart's answer without its byte-by-byte scan of the buffer.
	tail := max(0, len(buf)-len(nlDashBoundary)+1)
	if i := bytes.LastIndexByte(buf[tail:], nlDashBoundary[0]); i >= 0 && bytes.HasPrefix(nlDashBoundary, buf[tail+i:]) {
		return tail + i, nil
	}
	return len(buf), readErr
}

// matchAfterPrefix checks whether buf, which starts with prefix, is a
// boundary (+1), is not (-1), or cannot tell yet (0).
func matchAfterPrefix(buf, prefix []byte, readErr error) int {
	if len(buf) == len(prefix) {
		if readErr != nil {
			return +1
		}
		return 0
	}
	c := buf[len(prefix)]
	if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
		return +1
	}
	// Try to detect boundaryDash.
	if c == '-' {
		if len(buf) == len(prefix)+1 {
			if readErr != nil {
				return -1 // Not enough data to tell
			}
			return 0
		}
		if buf[len(prefix)+1] == '-' {
			return +1
		}
	}
	return -1
}
