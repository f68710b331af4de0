// Package signurl makes short-lived, unguessable signed tokens: download URLs
// of /files/refs/{file_ref}, QR login tokens and the like. A token binds a
// subject (for example "fileref|channel") and an expiry with HMAC-SHA256;
// the subject is not inside the token, so a token for one subject never
// verifies for another. Every token also carries a random nonce, so two
// tokens for the same subject and expiry differ.
package signurl

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"strings"
	"time"
)

// MinKeyLen is the shortest accepted HMAC key.
const MinKeyLen = 32

// MaxSubjectLen bounds the subject [Signer.Sign] and [Signer.Verify] accept.
const MaxSubjectLen = 4096

const (
	version  = 1
	nonceLen = 16
	macLen   = sha256.Size
	rawLen   = 1 + 8 + nonceLen + macLen
	// domain separates these MACs from other uses of the same key.
	domain = "xconn/signurl/v1\x00"
)

// Errors of [Signer.Verify].
var (
	// ErrInvalid: the token is malformed, forged, or for another subject.
	ErrInvalid = errors.New("signurl: invalid token")
	// ErrExpired: the token is authentic but its expiry has passed.
	ErrExpired = errors.New("signurl: token expired")
)

// Signer signs and verifies tokens with one HMAC-SHA256 key. It is immutable
// and safe for concurrent use.
type Signer struct {
	key []byte
}

// NewSigner returns a Signer for key, which must be at least MinKeyLen bytes
// (generate it with crypto/rand and keep it in the data directory). The key
// is copied.
func NewSigner(key []byte) (*Signer, error) {
	if len(key) < MinKeyLen {
		return nil, fmt.Errorf("signurl: key of %d bytes, need at least %d", len(key), MinKeyLen)
	}
	return &Signer{key: append([]byte(nil), key...)}, nil
}

// Sign returns an URL-safe token binding subject (e.g. "fileref|channel")
// until expires (millisecond precision). A subject longer than MaxSubjectLen
// yields a token that never verifies.
func (s *Signer) Sign(subject string, expires time.Time) string {
	raw := make([]byte, rawLen)
	raw[0] = version
	binary.BigEndian.PutUint64(raw[1:9], uint64(expires.UnixMilli()))
	_, _ = rand.Read(raw[9 : 9+nonceLen]) // never fails (crypto/rand)
	copy(raw[9+nonceLen:], s.mac(raw[:9+nonceLen], subject))
	return base64.RawURLEncoding.EncodeToString(raw)
}

// Verify checks token against subject at time now. It returns nil,
// ErrInvalid (malformed, forged, other subject) or ErrExpired (authentic but
// now is at or after the expiry). The MAC is compared in constant time and
// checked before the expiry, so a forged token never reports ErrExpired.
func (s *Signer) Verify(token, subject string, now time.Time) error {
	if len(token) != base64.RawURLEncoding.EncodedLen(rawLen) || len(subject) > MaxSubjectLen {
		return ErrInvalid
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) != rawLen || raw[0] != version {
		return ErrInvalid
	}
	if !hmac.Equal(raw[9+nonceLen:], s.mac(raw[:9+nonceLen], subject)) {
		return ErrInvalid
	}
	exp := int64(binary.BigEndian.Uint64(raw[1:9]))
	if now.UnixMilli() >= exp {
		return ErrExpired
	}
	return nil
}

func (s *Signer) mac(header []byte, subject string) []byte {
	var h hash.Hash = hmac.New(sha256.New, s.key)
	h.Write([]byte(domain))
	h.Write(header)
	h.Write([]byte(subject))
	return h.Sum(nil)
}

// RandomID returns prefix followed by 26 lowercase base32 characters from
// crypto/rand (128 bits): unguessable identifiers for auth sessions, file
// refs and the like. Safe for concurrent use.
func RandomID(prefix string) string {
	return prefix + strings.ToLower(rand.Text())
}
