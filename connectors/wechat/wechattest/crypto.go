package wechattest

import (
	"bytes"
	"crypto/aes"
	"encoding/base64"
	"encoding/hex"
	"errors"
)

// KeyEncoding is how the fake writes an inbound media.aes_key (fact sheet
// §11.1: both forms are seen on the wire).
type KeyEncoding int

const (
	// KeyBase64Raw is base64 of the raw 16 key bytes (seen for images).
	KeyBase64Raw KeyEncoding = iota
	// KeyBase64Hex is base64 of the 32-character hex string of the key
	// (seen for files, voice and video).
	KeyBase64Hex
)

// encodeKey writes key as an aes_key value.
func encodeKey(key []byte, enc KeyEncoding) string {
	if enc == KeyBase64Hex {
		return base64.StdEncoding.EncodeToString([]byte(hex.EncodeToString(key)))
	}
	return base64.StdEncoding.EncodeToString(key)
}

// DecodeKey reads an aes_key in any form the fact sheet lists: base64 of
// 16 raw bytes, base64 of 32 hex characters, or a bare 32-character hex
// string.
func DecodeKey(s string) ([]byte, error) {
	if len(s) == 32 {
		if k, err := hex.DecodeString(s); err == nil {
			return k, nil
		}
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("aes key: not base64 or hex")
	}
	switch len(b) {
	case 16:
		return b, nil
	case 32:
		k, err := hex.DecodeString(string(b))
		if err != nil {
			return nil, errors.New("aes key: 32 bytes that are not hex")
		}
		return k, nil
	}
	return nil, errors.New("aes key: wrong length")
}

// Encrypt is AES-128-ECB with PKCS#7 padding (§11.1).
func Encrypt(key, plain []byte) ([]byte, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	pad := 16 - len(plain)%16
	buf := append(bytes.Clone(plain), bytes.Repeat([]byte{byte(pad)}, pad)...)
	for i := 0; i < len(buf); i += 16 {
		b.Encrypt(buf[i:i+16], buf[i:i+16])
	}
	return buf, nil
}

// Decrypt reverses Encrypt and checks the padding.
func Decrypt(key, ct []byte) ([]byte, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	if len(ct) == 0 || len(ct)%16 != 0 {
		return nil, errors.New("ciphertext is not a whole number of blocks")
	}
	out := make([]byte, len(ct))
	for i := 0; i < len(ct); i += 16 {
		b.Decrypt(out[i:i+16], ct[i:i+16])
	}
	pad := int(out[len(out)-1])
	if pad < 1 || pad > 16 || !bytes.Equal(out[len(out)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
		return nil, errors.New("bad PKCS#7 padding")
	}
	return out[:len(out)-pad], nil
}
