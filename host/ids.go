package host

import (
	"crypto/rand"
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
	var enc [26]byte       // idEncoding.EncodedLen(16)
	idEncoding.Encode(enc[:], b[:])
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

func nowMillis() int64 { return time.Now().UnixMilli() }
