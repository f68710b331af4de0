// Package wxcrypt is WeCom's callback encryption, as the "加解密方案说明"
// page documents it (developer.work.weixin.qq.com/document/path/90968)
// and the official WXBizMsgCrypt samples implement it:
//
//   - msg_signature = hex(SHA-1(concatenation of the sorted strings
//     token, timestamp, nonce, encrypt));
//   - AESKey = Base64_Decode(EncodingAESKey + "="), 32 bytes; AES-256-CBC
//     with the first 16 bytes of AESKey as IV; PKCS#7 padding to a multiple
//     of 32 bytes;
//   - the plaintext is random(16) ‖ msg_len (4 bytes, big-endian) ‖ msg ‖
//     receiveid, where receiveid is the corp_id for a self-built
//     application's callbacks (and "" for an intelligent robot's).
//
// A Crypter checks signatures in constant time and refuses a plaintext
// whose receiveid is another one. Its errors are typed by kind (Kind), so
// that a caller can count forged callbacks per kind without matching text;
// they never hold the token, the key or the ciphertext.
package wxcrypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"sort"
	"strings"
)

// Kind is the reason a callback was refused.
type Kind int

const (
	// KindSignature: msg_signature does not match (a forged or altered
	// callback, or another token).
	KindSignature Kind = iota + 1
	// KindDecrypt: the ciphertext does not open (not base64, a bad
	// length, bad padding or msg_len: another EncodingAESKey).
	KindDecrypt
	// KindReceiver: the plaintext is for another receiveid (corp_id).
	KindReceiver
)

func (k Kind) String() string {
	switch k {
	case KindSignature:
		return "bad signature"
	case KindDecrypt:
		return "cannot decrypt (wrong EncodingAESKey?)"
	case KindReceiver:
		return "wrong receiveid"
	}
	return "unknown"
}

// Error is a refused callback: its Kind and a secret-free detail.
type Error struct {
	Kind   Kind
	Detail string
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return "wxcrypt: " + e.Kind.String()
	}
	return "wxcrypt: " + e.Kind.String() + ": " + e.Detail
}

// KindOf returns the Kind of a *Error in err's chain, else 0.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

const (
	// KeyLen is the length of an EncodingAESKey (43 Base64 characters).
	KeyLen = 43
	// blockSize is the PKCS#7 block of WeCom's padding (32 bytes, not
	// AES's 16).
	blockSize = 32
	// MaxMessage bounds one decrypted message (a callback body is far
	// smaller).
	MaxMessage = 1 << 20
)

// ErrKey is returned by New for an EncodingAESKey that is not 43 Base64
// characters decoding to 32 bytes.
var ErrKey = errors.New("wxcrypt: EncodingAESKey must be 43 characters of Base64 (decoding to 32 bytes)")

// Crypter checks, opens and seals the callbacks of one receiver. It is a
// value safe for concurrent use.
type Crypter struct {
	token     string
	block     cipher.Block
	iv        []byte
	receiveID string
}

// New returns the Crypter of token, encodingAESKey and receiveID (the
// corp_id of a self-built application).
func New(token, encodingAESKey, receiveID string) (*Crypter, error) {
	key, err := DecodeKey(encodingAESKey)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, ErrKey
	}
	return &Crypter{token: token, block: block, iv: key[:aes.BlockSize], receiveID: receiveID}, nil
}

// DecodeKey returns AESKey = Base64_Decode(EncodingAESKey + "=").
func DecodeKey(encodingAESKey string) ([]byte, error) {
	if len(encodingAESKey) != KeyLen {
		return nil, ErrKey
	}
	key, err := base64.StdEncoding.DecodeString(encodingAESKey + "=")
	if err != nil || len(key) != 32 {
		return nil, ErrKey
	}
	return key, nil
}

// Signature is msg_signature: hex SHA-1 of token, timestamp, nonce and
// encrypt, sorted and concatenated.
func Signature(token, timestamp, nonce, encrypt string) string {
	s := []string{token, timestamp, nonce, encrypt}
	sort.Strings(s)
	h := sha1.Sum([]byte(strings.Join(s, "")))
	return hex.EncodeToString(h[:])
}

// Verify reports, in constant time, whether signature is the
// msg_signature of timestamp, nonce and encrypt under the token.
func (c *Crypter) Verify(signature, timestamp, nonce, encrypt string) bool {
	want := Signature(c.token, timestamp, nonce, encrypt)
	return subtle.ConstantTimeCompare([]byte(strings.ToLower(signature)), []byte(want)) == 1
}

// Open verifies the signature, then decrypts: what a callback handler
// calls with the query's msg_signature, timestamp and nonce and the
// echostr or the body's Encrypt.
func (c *Crypter) Open(signature, timestamp, nonce, encrypt string) ([]byte, error) {
	if !c.Verify(signature, timestamp, nonce, encrypt) {
		return nil, &Error{Kind: KindSignature}
	}
	return c.Decrypt(encrypt)
}

// Decrypt opens encrypt (Base64 of the AES-256-CBC ciphertext) and
// returns msg, after checking the padding, msg_len and the receiveid.
// It does not check a signature: see Open.
func (c *Crypter) Decrypt(encrypt string) ([]byte, error) {
	if base64.StdEncoding.DecodedLen(len(encrypt)) > MaxMessage+2*blockSize+aes.BlockSize+len(c.receiveID)+4 {
		return nil, &Error{Kind: KindDecrypt, Detail: "too long"}
	}
	raw, err := base64.StdEncoding.DecodeString(encrypt)
	if err != nil {
		return nil, &Error{Kind: KindDecrypt, Detail: "not Base64"}
	}
	if len(raw) < blockSize || len(raw)%aes.BlockSize != 0 {
		return nil, &Error{Kind: KindDecrypt, Detail: "bad length"}
	}
	plain := make([]byte, len(raw))
	cipher.NewCBCDecrypter(c.block, c.iv).CryptBlocks(plain, raw)
	pad := int(plain[len(plain)-1])
	if pad < 1 || pad > blockSize || pad > len(plain) {
		return nil, &Error{Kind: KindDecrypt, Detail: "bad padding"}
	}
	for _, b := range plain[len(plain)-pad:] {
		if int(b) != pad {
			return nil, &Error{Kind: KindDecrypt, Detail: "bad padding"}
		}
	}
	plain = plain[:len(plain)-pad]
	if len(plain) < 20 {
		return nil, &Error{Kind: KindDecrypt, Detail: "too short"}
	}
	n := binary.BigEndian.Uint32(plain[16:20])
	rest := plain[20:]
	if uint64(n) > uint64(len(rest)) || n > MaxMessage {
		return nil, &Error{Kind: KindDecrypt, Detail: "bad msg_len"}
	}
	msg, id := rest[:n], rest[n:]
	if subtle.ConstantTimeCompare(id, []byte(c.receiveID)) != 1 {
		return nil, &Error{Kind: KindReceiver}
	}
	return msg, nil
}

// Encrypt seals msg as WeCom does: 16 bytes from random (crypto/rand
// when nil), msg_len, msg, receiveid, padded to 32 bytes, AES-256-CBC,
// Base64.
func (c *Crypter) Encrypt(msg []byte, random io.Reader) (string, error) {
	if random == nil {
		random = rand.Reader
	}
	if len(msg) > MaxMessage {
		return "", errors.New("wxcrypt: message too long")
	}
	n := 20 + len(msg) + len(c.receiveID)
	pad := blockSize - n%blockSize
	plain := make([]byte, n+pad)
	if _, err := io.ReadFull(random, plain[:16]); err != nil {
		return "", err
	}
	binary.BigEndian.PutUint32(plain[16:20], uint32(len(msg)))
	copy(plain[20:], msg)
	copy(plain[20+len(msg):], c.receiveID)
	for i := n; i < len(plain); i++ {
		plain[i] = byte(pad)
	}
	cipher.NewCBCEncrypter(c.block, c.iv).CryptBlocks(plain, plain)
	return base64.StdEncoding.EncodeToString(plain), nil
}

// DecryptFile opens a file an intelligent robot's message links to: data
// encrypted with AES-256-CBC under the message's aeskey (Base64 of 32
// bytes), IV its first 16 bytes, PKCS#7 padding to 32 bytes (as the
// official SDK's decryptFile).
func DecryptFile(aesKey string, data []byte) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(aesKey)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(aesKey, "="))
	}
	if err != nil || len(key) != 32 {
		return nil, &Error{Kind: KindDecrypt, Detail: "bad aeskey"}
	}
	if len(data) == 0 || len(data)%aes.BlockSize != 0 {
		return nil, &Error{Kind: KindDecrypt, Detail: "bad length"}
	}
	block, _ := aes.NewCipher(key)
	plain := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, key[:aes.BlockSize]).CryptBlocks(plain, data)
	pad := int(plain[len(plain)-1])
	if pad < 1 || pad > blockSize || pad > len(plain) {
		return nil, &Error{Kind: KindDecrypt, Detail: "bad padding"}
	}
	for _, b := range plain[len(plain)-pad:] {
		if int(b) != pad {
			return nil, &Error{Kind: KindDecrypt, Detail: "bad padding"}
		}
	}
	return plain[:len(plain)-pad], nil
}
