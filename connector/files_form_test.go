package connector

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/textproto"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/xconn/xconn/internal/chunkcopy"
)

// parsedPart is what a multipart parser made of one part.
type parsedPart struct {
	Name, File string
	Header     textproto.MIMEHeader
	Data       string
}

// parsedBody is what a multipart parser made of a body: the parts up to
// the first error, and whether there was one.
type parsedBody struct {
	Parts []parsedPart
	Err   bool
}

// parseStd parses body with mime/multipart, the reference.
func parseStd(body []byte, boundary string) parsedBody {
	var out parsedBody
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			out.Err = true
			return out
		}
		data, err := io.ReadAll(p)
		out.Parts = append(out.Parts, parsedPart{Name: p.FormName(), File: p.FileName(), Header: p.Header, Data: string(data)})
		if err != nil {
			out.Err = true
			return out
		}
	}
}

// parseForm parses body with formReader over src, reading parts through
// WriteTo or Read in turn (or skipping every other one unread, when skip).
func parseForm(t *testing.T, src io.Reader, boundary string, size int, skip bool) parsedBody {
	t.Helper()
	var out parsedBody
	fr, err := newFormReader(src, `multipart/form-data; boundary="`+boundary+`"`, size)
	if err != nil {
		t.Fatalf("newFormReader: %v", err)
	}
	for i := 0; ; i++ {
		p, err := fr.NextPart()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			out.Err = true
			return out
		}
		if skip && i%2 == 1 {
			continue // NextPart skips it
		}
		var buf bytes.Buffer
		if i%2 == 0 {
			_, err = p.WriteTo(&buf)
		} else {
			_, err = io.Copy(&buf, onlyReader{p})
		}
		out.Parts = append(out.Parts, parsedPart{Name: p.FormName(), File: p.FileName(), Header: p.Header, Data: buf.String()})
		if err != nil {
			out.Err = true
			return out
		}
	}
}

// dropOdd keeps the even-numbered parts of want (what parseForm reads when
// it skips the others); an error is kept.
func dropOdd(want parsedBody) parsedBody {
	out := parsedBody{Err: want.Err}
	for i, p := range want.Parts {
		if i%2 == 0 {
			out.Parts = append(out.Parts, p)
		}
	}
	return out
}

// trickyData returns part content that contains pieces of the delimiter
// of boundary which are not delimiters.
func trickyData(rng *rand.Rand, boundary string, n int) []byte {
	pieces := []string{
		"\r", "\n", "\r\n", "-", "--", "\r\n-", "\r\n--", "\r\n--" + boundary[:len(boundary)/2],
		"\r\n--" + boundary + "x", "\n--" + boundary[:1], "--" + boundary + "X",
	}
	var b []byte
	for len(b) < n {
		if rng.IntN(4) == 0 {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
			continue
		}
		k := rng.IntN(64) + 1
		for range k {
			b = append(b, byte(rng.IntN(256)))
		}
	}
	// Random bytes may have formed a real delimiter: drop the body then.
	if bytes.Contains(b, []byte("--"+boundary)) {
		return bytes.ReplaceAll(b, []byte("--"+boundary), []byte("-x"+boundary))
	}
	return b
}

// writerBody builds a body with mime/multipart.Writer.
func writerBody(t *testing.T, rng *rand.Rand, nparts int, sizes []int) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for i := range nparts {
		var w io.Writer
		var err error
		switch i % 3 {
		case 0:
			w, err = mw.CreateFormFile("file", fmt.Sprintf("dir/f%d.bin", i))
		case 1:
			w, err = mw.CreateFormField(fmt.Sprintf("field%d", i))
		default:
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", `form-data; name="x"; filename="a b.txt"`)
			h.Set("Content-Type", "text/plain")
			h.Add("X-Extra", "one")
			h.Add("X-Extra", "two")
			w, err = mw.CreatePart(h)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(trickyData(rng, mw.Boundary(), sizes[i%len(sizes)])); err != nil {
			t.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), mw.Boundary()
}

// readers wraps a body in readers that return it in differently sized
// pieces.
var readers = []struct {
	name string
	wrap func([]byte) io.Reader
}{
	{"whole", func(b []byte) io.Reader { return bytes.NewReader(b) }},
	{"one-byte", func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) }},
	{"half", func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) }},
	{"data-err", func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) }},
}

// TestFormReaderMatchesMultipart checks that formReader splits bodies built
// by mime/multipart.Writer, and every truncation of them, exactly like
// mime/multipart.Reader does, whatever its buffer size and however the
// body arrives.
func TestFormReaderMatchesMultipart(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name   string
		nparts int
		sizes  []int
	}{
		{"no parts", 0, []int{0}},
		{"one empty", 1, []int{0}},
		{"one small", 1, []int{10}},
		{"three", 3, []int{1, 300, 70}},
		{"larger than buffers", 2, []int{5000, 9000}},
		{"many", 7, []int{0, 129, 130, 131, 700}},
	}
	for _, tc := range cases {
		for rep := range 3 {
			body, boundary := writerBody(t, rng, tc.nparts, tc.sizes)
			want := parseStd(body, boundary)
			if want.Err {
				t.Fatalf("%s: reference parser failed on a Writer body", tc.name)
			}
			for _, size := range []int{128, 333, 4096, formBufSize} {
				for _, rd := range readers {
					name := fmt.Sprintf("%s/%d/%d/%s", tc.name, rep, size, rd.name)
					if got := parseForm(t, rd.wrap(body), boundary, size, false); !reflect.DeepEqual(got, want) {
						t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
					}
					if got := parseForm(t, rd.wrap(body), boundary, size, true); !reflect.DeepEqual(got, dropOdd(want)) {
						t.Errorf("%s (skipping parts):\n got %+v\nwant %+v", name, got, dropOdd(want))
					}
				}
			}
			// Every truncation: the same parts, and an error whenever the
			// reference reports one. (formReader is stricter in one place:
			// a body cut inside a part's header block is an error, where
			// mime/multipart reports a clean end.)
			step := max(1, len(body)/150)
			for cut := 0; cut < len(body); cut += step {
				want := parseStd(body[:cut], boundary)
				for _, size := range []int{128, 4096} {
					if got := parseForm(t, bytes.NewReader(body[:cut]), boundary, size, false); !reflect.DeepEqual(got.Parts, want.Parts) || want.Err && !got.Err {
						t.Errorf("%s/%d cut at %d of %d, buffer %d:\n got %+v\nwant %+v", tc.name, rep, cut, len(body), size, got, want)
					}
				}
			}
		}
	}
}

// TestFormReaderHandWritten covers the lenient and the malformed inputs
// mime/multipart knows about: preamble and epilogue, LF line endings,
// transport padding, quoted-printable, bad headers.
func TestFormReaderHandWritten(t *testing.T) {
	t.Parallel()
	crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
	cases := []struct {
		name, body string
		wantErr    bool
	}{
		{"preamble and epilogue", crlf("This is a preamble\n--b\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\n\nhello\n--b--\nepilogue"), false},
		{"LF only", "--b\nContent-Disposition: form-data; name=\"file\"\n\nhello\nworld\n--b\nContent-Disposition: form-data; name=\"n\"\n\nv\n--b--\n", false},
		{"transport padding", crlf("--b  \t\nContent-Disposition: form-data; name=\"a\"\n\n1\n--b \nContent-Disposition: form-data; name=\"c\"\n\n2\n--b-- \n"), false},
		{"final boundary without newline", crlf("--b\nContent-Disposition: form-data; name=\"a\"\n\nx\n--b--"), false},
		{"quoted-printable", crlf("--b\nContent-Disposition: form-data; name=\"file\"\nContent-Transfer-Encoding: quoted-printable\n\nh=C3=A9llo=\n world\n--b--\n"), false},
		{"folded header", crlf("--b\nContent-Disposition: form-data;\n name=\"file\"\n\nx\n--b--\n"), false},
		{"empty part", crlf("--b\nContent-Disposition: form-data; name=\"a\"\n\n\n--b--\n"), false},
		{"no headers", crlf("--b\n\nbody\n--b--\n"), false},
		{"data lookalikes", crlf("--b\nContent-Disposition: form-data; name=\"a\"\n\n--bx is not\n--bx\n---b\n--b-x\n--b--\n"), false},
		{"no final boundary", crlf("--b\nContent-Disposition: form-data; name=\"a\"\n\nx"), true},
		{"empty body", "", false}, // a wrapped io.EOF, as in mime/multipart
		{"no boundary at all", "just text\r\n", false},
		{"malformed header", crlf("--b\nno colon here\n\nx\n--b--\n"), true},
		{"header with a space in its key", crlf("--b\nBad Key: v\n\nx\n--b--\n"), false},
		{"header with bad key", crlf("--b\nBad(Key): v\n\nx\n--b--\n"), true},
		{"header with control byte", crlf("--b\nX-A: a\x01b\n\nx\n--b--\n"), true},
		{"junk between parts", crlf("--b\nContent-Disposition: form-data; name=\"a\"\n\nx\n--b\nContent-Disposition: form-data; name=\"c\"\n\ny\n--b--\n"), false},
		{"truncated header", crlf("--b\nContent-Disposition: form-da"), true}, // mime/multipart: clean end
	}
	for _, tc := range cases {
		want := parseStd([]byte(tc.body), "b")
		if want.Err && !tc.wantErr {
			t.Fatalf("%s: the reference fails, the case expects no error", tc.name)
		}
		want.Err = tc.wantErr                           // stricter than the reference on a cut header
		for _, size := range []int{64, 65, 100, 4096} { // header lines must fit the buffer
			for _, rd := range readers {
				if got := parseForm(t, rd.wrap([]byte(tc.body)), "b", size, false); !reflect.DeepEqual(got, want) {
					t.Errorf("%s/%d/%s:\n got %+v\nwant %+v", tc.name, size, rd.name, got, want)
				}
			}
		}
	}
}

func TestNewFormReaderContentType(t *testing.T) {
	t.Parallel()
	for _, ct := range []string{"", "text/plain", "multipart/form-data", "multipart/mixed; boundary=b", "multipart/form-data; boundary=\"unterminated"} {
		if _, err := newFormReader(strings.NewReader(""), ct, formBufSize); err == nil {
			t.Errorf("content type %q accepted", ct)
		}
	}
	if _, err := newFormReader(strings.NewReader(""), "Multipart/Form-Data; Boundary=b", formBufSize); err != nil {
		t.Errorf("case-insensitive content type: %v", err)
	}
}

// TestFormReaderHeaderLimits checks the bounds on one part's header block.
func TestFormReaderHeaderLimits(t *testing.T) {
	t.Parallel()
	many := "--b\r\n" + strings.Repeat("X-A: 1\r\n", maxPartHeaders+1) + "\r\nx\r\n--b--\r\n"
	long := "--b\r\nX-A: " + strings.Repeat("a", maxPartHeaderBytes) + "\r\n\r\nx\r\n--b--\r\n"
	for name, body := range map[string]string{"many": many, "long": long} {
		fr, err := newFormReader(strings.NewReader(body), "multipart/form-data; boundary=b", formBufSize)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fr.NextPart(); err == nil {
			t.Errorf("%s: header block accepted", name)
		}
	}
}

// errReader fails with err after returning data.
type errReader struct {
	data []byte
	err  error
}

func (e *errReader) Read(p []byte) (int, error) {
	if len(e.data) == 0 {
		return 0, e.err
	}
	n := copy(p, e.data)
	e.data = e.data[n:]
	return n, nil
}

// TestCopyToFile covers the limit and the error rules of every copy path.
func TestCopyToFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), (3*chunkcopy.Small)/16+3) // crosses the small and the large buffer
	srcPath := filepath.Join(dir, "src")
	if err := os.WriteFile(srcPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	formBody := func() io.Reader {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		w, _ := mw.CreateFormFile("file", "f")
		_, _ = w.Write(data)
		_ = mw.Close()
		fr, err := newFormReader(&buf, mw.FormDataContentType(), formBufSize)
		if err != nil {
			t.Fatal(err)
		}
		p, err := fr.NextPart()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	sources := []struct {
		name string
		open func(t *testing.T) io.Reader
	}{
		{"file", func(t *testing.T) io.Reader {
			f, err := os.Open(srcPath)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f
		}},
		{"writer-to", func(*testing.T) io.Reader { return bytes.NewReader(data) }},
		{"form part", func(*testing.T) io.Reader { return formBody() }},
		{"plain reader", func(*testing.T) io.Reader { return iotest.HalfReader(bytes.NewReader(data)) }},
	}
	cases := []struct {
		name    string
		limit   int64
		wantN   int64
		tooLong bool
	}{
		{"under the limit", int64(len(data)) + 1, int64(len(data)), false},
		{"at the limit", int64(len(data)), int64(len(data)), false},
		{"over the limit", int64(len(data)) - 1, -1, true},
		{"small limit", 10, -1, true},
	}
	for _, src := range sources {
		for _, tc := range cases {
			dst, err := os.CreateTemp(dir, "dst")
			if err != nil {
				t.Fatal(err)
			}
			n, err := copyToFile(dst, src.open(t), tc.limit)
			dst.Close()
			if tc.tooLong {
				if !errors.Is(err, errTooLarge) {
					t.Errorf("%s/%s: err %v, want errTooLarge", src.name, tc.name, err)
				}
				continue
			}
			got, _ := os.ReadFile(dst.Name())
			if err != nil || n != tc.wantN || !bytes.Equal(got, data) {
				t.Errorf("%s/%s: n %d err %v, %d bytes on disk; want %d", src.name, tc.name, n, err, len(got), tc.wantN)
			}
		}
	}
	// A source that fails is never taken for a complete one.
	for _, rerr := range []error{boom, io.ErrUnexpectedEOF} {
		dst, err := os.CreateTemp(dir, "dst")
		if err != nil {
			t.Fatal(err)
		}
		_, err = copyToFile(dst, &errReader{data: data[:100], err: rerr}, 1<<30)
		dst.Close()
		if !errors.Is(err, rerr) {
			t.Errorf("source error %v: got %v", rerr, err)
		}
	}
	// A truncated multipart body fails too.
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, _ := mw.CreateFormFile("file", "f")
	_, _ = w.Write(data)
	fr, err := newFormReader(bytes.NewReader(buf.Bytes()), mw.FormDataContentType(), formBufSize)
	if err != nil {
		t.Fatal(err)
	}
	p, err := fr.NextPart()
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.CreateTemp(dir, "dst")
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := copyToFile(dst, p, 1<<30); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated multipart: %v", err)
	}
}

// TestFormReaderMutations flips, inserts and deletes bytes of valid bodies
// and checks that formReader agrees with mime/multipart on the result:
// the same parts, and an error exactly when the reference has one.
func TestFormReaderMutations(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("\r\n-: \t\"=;ab" + "\x00\x7f")
	for i := range 3000 {
		body, boundary := writerBody(t, rng, 1+rng.IntN(3), []int{0, 5, 40, 300})
		body = bytes.Clone(body)
		for range 1 + rng.IntN(3) {
			pos := rng.IntN(len(body))
			c := alphabet[rng.IntN(len(alphabet))]
			switch rng.IntN(3) {
			case 0:
				body[pos] = c
			case 1:
				body = append(body[:pos], append([]byte{c}, body[pos:]...)...)
			default:
				body = append(body[:pos], body[pos+1:]...)
			}
		}
		want := parseStd(body, boundary)
		got := parseForm(t, bytes.NewReader(body), boundary, 4096, false)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("mutation %d: body %q\n got %+v\nwant %+v", i, body, got, want)
		}
	}
}
