package qr

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image/png"
	"strings"
	"testing"

	qrcode "github.com/skip2/go-qrcode"
)

func TestPNGDataURL(t *testing.T) {
	for _, size := range []int{0, 128, 300} {
		got, err := PNGDataURL("https://example.test/login?t=abc", size)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		const prefix = "data:image/png;base64,"
		if !strings.HasPrefix(got, prefix) {
			t.Fatalf("size %d: no data URL prefix: %.40s", size, got)
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(got, prefix))
		if err != nil {
			t.Fatalf("size %d: base64: %v", size, err)
		}
		img, err := png.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("size %d: PNG: %v", size, err)
		}
		want := size
		if want == 0 {
			want = DefaultSize
		}
		if b := img.Bounds(); b.Dx() != want || b.Dy() != want {
			t.Fatalf("size %d: image is %dx%d", size, b.Dx(), b.Dy())
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		fn   func() (string, error)
	}{
		{"png empty", func() (string, error) { return PNGDataURL("", 0) }},
		{"png too large", func() (string, error) { return PNGDataURL("x", MaxSize+1) }},
		{"png too long", func() (string, error) { return PNGDataURL(strings.Repeat("x", MaxTextLen+1), 0) }},
		{"terminal empty", func() (string, error) { return Terminal("") }},
		{"terminal too long", func() (string, error) { return Terminal(strings.Repeat("x", MaxTextLen+1)) }},
	}
	for _, tt := range tests {
		if got, err := tt.fn(); err == nil {
			t.Errorf("%s: got %.20q, want error", tt.name, got)
		}
	}
}

// TestTerminalMatchesBitmap decodes the half-block rendering back into
// modules and compares it with the encoder's bitmap.
func TestTerminalMatchesBitmap(t *testing.T) {
	const text = "xconn-login:sess_abc123"
	got, err := Terminal(text)
	if err != nil {
		t.Fatal(err)
	}
	q, err := qrcode.New(text, qrcode.Medium)
	if err != nil {
		t.Fatal(err)
	}
	bm := q.Bitmap()
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != (len(bm)+1)/2 {
		t.Fatalf("%d lines for %d module rows", len(lines), len(bm))
	}
	for i, line := range lines {
		cells := []rune(line)
		if len(cells) != len(bm[0]) {
			t.Fatalf("line %d has %d cells, want %d", i, len(cells), len(bm[0]))
		}
		for x, c := range cells {
			var top, bottom bool // light?
			switch c {
			case '█':
				top, bottom = true, true
			case '▀':
				top = true
			case '▄':
				bottom = true
			case ' ':
			default:
				t.Fatalf("unexpected rune %q", c)
			}
			if top != !bm[2*i][x] {
				t.Fatalf("module (%d,%d) mismatch", x, 2*i)
			}
			if 2*i+1 < len(bm) && bottom != !bm[2*i+1][x] {
				t.Fatalf("module (%d,%d) mismatch", x, 2*i+1)
			}
		}
	}
	// The quiet zone is light: the first line is all full blocks.
	if strings.Trim(lines[0], "█") != "" {
		t.Fatalf("first line is not quiet zone: %q", lines[0])
	}
}

func ExampleTerminal() {
	s, err := Terminal("hi")
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.Count(s, "\n"))
	// Output: 15
}
