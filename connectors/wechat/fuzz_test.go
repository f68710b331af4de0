package wechat

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzECB: media encryption round-trips for every 16-byte key, and
// decryption of anything refuses it as unusable media rather than
// panicking or returning more bytes than it was given.
func FuzzECB(f *testing.F) {
	f.Add([]byte("0123456789abcdef"), []byte("hello"))
	f.Add([]byte("0123456789abcdef"), []byte{})
	f.Add([]byte("short"), bytes.Repeat([]byte{16}, 32))
	f.Fuzz(func(t *testing.T, key, data []byte) {
		if out, err := decryptECB(key, data); err != nil {
			if !errors.Is(err, errBadMedia) {
				t.Fatalf("decrypt error %v is not errBadMedia", err)
			}
		} else if len(out) >= len(data) {
			t.Fatalf("decrypted %d bytes from %d", len(out), len(data))
		}
		if len(key) != 16 {
			return
		}
		ct, err := encryptECB(key, data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decryptECB(key, ct)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("round trip: %q, %v", got, err)
		}
	})
}

// FuzzDecodeKey: an AES key in any form decodes to 16 bytes or is refused
// as unusable media.
func FuzzDecodeKey(f *testing.F) {
	f.Add("00112233445566778899aabbccddeeff")
	f.Add("ABEiM0RVZneImaq7zN3u/w==")
	f.Add("MDAxMTIyMzM0NDU1NjY3Nzg4OTlhYWJiY2NkZGVlZmY=")
	f.Add("not a key")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := decodeKey(s)
		switch {
		case err != nil && !errors.Is(err, errBadMedia):
			t.Fatalf("error %v is not errBadMedia", err)
		case err == nil && len(k) != 16:
			t.Fatalf("%q decodes to a %d-byte key", s, len(k))
		}
	})
}
