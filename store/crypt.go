package store

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeyFile is the name of the key file in Options.DataDir.
const KeyFile = "secret.key"

// KeySize is the size of the AES-256 key.
const KeySize = 32

// loadKey returns opts.Key, or the key of DataDir/secret.key, creating the
// file (64 hex digits, mode 0600) when absent. Two processes creating it at
// once agree: the loser reads the winner's file.
func loadKey(opts Options) ([]byte, error) {
	if opts.Key != nil {
		if len(opts.Key) != KeySize {
			return nil, fmt.Errorf("store: key must be %d bytes, got %d", KeySize, len(opts.Key))
		}
		return opts.Key, nil
	}
	if opts.DataDir == "" {
		return nil, errors.New("store: no secret key: set Options.Key or Options.DataDir")
	}
	path := filepath.Join(opts.DataDir, KeyFile)
	key := make([]byte, KeySize)
	rand.Read(key)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		_, werr := f.WriteString(hex.EncodeToString(key) + "\n")
		if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
			os.Remove(path)
			return nil, fmt.Errorf("store: write key file: %w", err)
		}
		return key, nil
	case !errors.Is(err, fs.ErrExist):
		return nil, fmt.Errorf("store: create key file: %w", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("store: key file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("store: key file %s is readable by others (mode %v); want 0600", path, st.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("store: read key file: %w", err)
	}
	key, err = hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(key) != KeySize {
		return nil, fmt.Errorf("store: key file %s must hold %d hex-encoded bytes", path, KeySize)
	}
	return key, nil
}

// sealer encrypts secret columns with AES-256-GCM. The stored form is
// version byte 1, a random 12-byte nonce, then the sealed bytes. The
// additional data binds a value to its column and row so that a ciphertext
// copied to another row does not decrypt.
type sealer struct{ aead cipher.AEAD }

func newSealer(key []byte) (*sealer, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("store: cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("store: cipher: %w", err)
	}
	return &sealer{aead: aead}, nil
}

func aad(parts ...string) []byte { return []byte(strings.Join(parts, "\x00")) }

// seal encrypts plain; nil stays nil (no secret stored).
func (s *sealer) seal(plain []byte, ad []byte) []byte {
	if plain == nil {
		return nil
	}
	out := make([]byte, 1+s.aead.NonceSize(), 1+s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	out[0] = 1
	rand.Read(out[1:])
	return s.aead.Seal(out, out[1:], plain, ad)
}

// open decrypts a sealed value; nil stays nil.
func (s *sealer) open(sealed []byte, ad []byte) ([]byte, error) {
	if sealed == nil {
		return nil, nil
	}
	n := 1 + s.aead.NonceSize()
	if len(sealed) < n || sealed[0] != 1 {
		return nil, errors.New("store: malformed encrypted value")
	}
	plain, err := s.aead.Open(nil, sealed[1:n], sealed[n:], ad)
	if err != nil {
		return nil, errors.New("store: cannot decrypt a secret (wrong key?)")
	}
	if plain == nil {
		plain = []byte{}
	}
	return plain, nil
}
