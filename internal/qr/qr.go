// Package qr renders QR codes for sign-in flows (qr_login): a PNG data URL for
// auth.start.ack qr_code_image and a text rendering for terminals. Functions
// are pure and safe for concurrent use.
package qr

import (
	"encoding/base64"
	"fmt"
	"strings"

	qrcode "github.com/skip2/go-qrcode"
)

// Limits and defaults.
const (
	// DefaultSize is the PNG width and height used when size <= 0.
	DefaultSize = 256
	// MaxSize bounds the PNG width and height.
	MaxSize = 2048
	// MaxTextLen bounds the encoded text (a QR code holds at most 2953 bytes
	// at the lowest recovery level; xconn uses medium recovery).
	MaxTextLen = 2048
)

func encode(text string) (*qrcode.QRCode, error) {
	if text == "" {
		return nil, fmt.Errorf("qr: empty text")
	}
	if len(text) > MaxTextLen {
		return nil, fmt.Errorf("qr: text of %d bytes exceeds %d", len(text), MaxTextLen)
	}
	q, err := qrcode.New(text, qrcode.Medium)
	if err != nil {
		return nil, fmt.Errorf("qr: encode: %w", err)
	}
	return q, nil
}

// PNGDataURL returns "data:image/png;base64,..." of a size×size PNG QR code
// of text (DefaultSize when size <= 0, at most MaxSize).
func PNGDataURL(text string, size int) (string, error) {
	if size <= 0 {
		size = DefaultSize
	}
	if size > MaxSize {
		return "", fmt.Errorf("qr: size %d exceeds %d", size, MaxSize)
	}
	q, err := encode(text)
	if err != nil {
		return "", err
	}
	png, err := q.PNG(size)
	if err != nil {
		return "", fmt.Errorf("qr: render PNG: %w", err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(png), nil
}

// Terminal returns a text rendering of the QR code of text, quiet zone
// included, two modules per character cell with the half blocks ▀ ▄ █ and
// space. Light modules are drawn and dark ones left blank, so the code reads
// correctly on the usual dark terminal background (as `qrencode -t UTF8`).
// Lines end with "\n".
func Terminal(text string) (string, error) {
	q, err := encode(text)
	if err != nil {
		return "", err
	}
	bm := q.Bitmap() // true = dark module
	var b strings.Builder
	for y := 0; y < len(bm); y += 2 {
		for x := range bm[y] {
			top := !bm[y][x]
			bottom := y+1 < len(bm) && !bm[y+1][x]
			switch {
			case top && bottom:
				b.WriteString("█")
			case top:
				b.WriteString("▀")
			case bottom:
				b.WriteString("▄")
			default:
				b.WriteByte(' ')
			}
		}
		b.WriteByte('\n')
	}
	return b.String(), nil
}
