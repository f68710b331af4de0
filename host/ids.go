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
	return prefix + strings.ToLower(idEncoding.EncodeToString(b[:]))
}

func nowMillis() int64 { return time.Now().UnixMilli() }
