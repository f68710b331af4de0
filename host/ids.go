package host

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"strings"
	"time"
)

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newID returns prefix followed by 26 characters of crypto/rand base32
// (128 bits): unguessable, URL-safe.
func newID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return encodeID(prefix, b[:])
}

// encodeID returns prefix followed by the lower-case base32 of 16 bytes.
func encodeID(prefix string, b []byte) string {
	var enc [26]byte // idEncoding.EncodedLen(16)
	idEncoding.Encode(enc[:], b)
	for i, c := range enc {
		if 'A' <= c && c <= 'Z' {
			enc[i] = c + ('a' - 'A')
		}
	}
	var sb strings.Builder // one allocation
	sb.Grow(len(prefix) + len(enc))
	sb.WriteString(prefix)
	sb.Write(enc[:])
	return sb.String()
}

// derivedID returns prefix followed by 26 base32 characters of the
// SHA-256 of parts: the same parts give the same ID, in any process.
func derivedID(prefix string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		var n [8]byte
		for i := range n {
			n[i] = byte(len(p) >> (8 * i))
		}
		h.Write(n[:]) // length-prefixed: ("ab","c") and ("a","bc") differ
		h.Write([]byte(p))
	}
	return encodeID(prefix, h.Sum(nil)[:16])
}

func nowMillis() int64 { return time.Now().UnixMilli() }
