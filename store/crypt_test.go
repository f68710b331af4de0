package store

import (
	"bytes"
	"testing"
)

func FuzzSealer(f *testing.F) {
	s, err := newSealer(testKey)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("token"), []byte{1, 2, 3})
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, plain, junk []byte) {
		sealed := s.seal(plain, aad("t", "k"))
		got, err := s.open(sealed, aad("t", "k"))
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("round trip: %q %v", got, err)
		}
		if _, err := s.open(sealed, aad("t", "other")); err == nil {
			t.Fatal("opened under other additional data")
		}
		if len(plain) > 0 && bytes.Contains(sealed, plain) && len(plain) > 8 {
			t.Fatal("plaintext visible in the sealed value")
		}
		// Arbitrary stored bytes never panic and rarely decrypt.
		if _, err := s.open(junk, aad("t", "k")); err == nil && len(junk) > 0 {
			t.Fatal("junk decrypted")
		}
	})
}
