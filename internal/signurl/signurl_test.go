package signurl

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func newSigner(t testing.TB, fill byte) *Signer {
	t.Helper()
	s, err := NewSigner(bytes.Repeat([]byte{fill}, 32))
	if err != nil {
		t.Fatalf("NewSigner: %v", err)
	}
	return s
}

var urlSafe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func TestSignVerify(t *testing.T) {
	s := newSigner(t, 1)
	t0 := time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC)
	exp := t0.Add(5 * time.Minute)
	tok := s.Sign("file_1|ch_1", exp)
	if !urlSafe.MatchString(tok) {
		t.Fatalf("token %q is not URL-safe", tok)
	}
	tests := []struct {
		name    string
		token   string
		subject string
		now     time.Time
		want    error
	}{
		{"valid", tok, "file_1|ch_1", t0, nil},
		{"valid just before expiry", tok, "file_1|ch_1", exp.Add(-time.Millisecond), nil},
		{"expired at expiry", tok, "file_1|ch_1", exp, ErrExpired},
		{"expired later", tok, "file_1|ch_1", exp.Add(time.Hour), ErrExpired},
		{"other subject", tok, "file_1|ch_2", t0, ErrInvalid},
		{"other subject after expiry", tok, "file_1|ch_2", exp.Add(time.Hour), ErrInvalid},
		{"empty token", "", "file_1|ch_1", t0, ErrInvalid},
		{"truncated", tok[:len(tok)-1], "file_1|ch_1", t0, ErrInvalid},
		{"extended", tok + "A", "file_1|ch_1", t0, ErrInvalid},
		{"not base64", strings.Repeat("*", len(tok)), "file_1|ch_1", t0, ErrInvalid},
		{"other key", newSigner(t, 2).Sign("file_1|ch_1", exp), "file_1|ch_1", t0, ErrInvalid},
		{"long subject", s.Sign(strings.Repeat("x", MaxSubjectLen+1), exp), strings.Repeat("x", MaxSubjectLen+1), t0, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Verify(tt.token, tt.subject, tt.now); !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestTamperedTokens(t *testing.T) {
	s := newSigner(t, 1)
	now := time.Unix(1_800_000_000, 0)
	tok := s.Sign("subject", now.Add(time.Minute))
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		bad := bytes.Clone(raw)
		bad[i] ^= 0x01
		if err := s.Verify(base64.RawURLEncoding.EncodeToString(bad), "subject", now); !errors.Is(err, ErrInvalid) {
			t.Fatalf("flipping byte %d: Verify = %v, want ErrInvalid", i, err)
		}
	}
}

func TestTokensAreDistinct(t *testing.T) {
	s := newSigner(t, 1)
	exp := time.Unix(1_800_000_000, 0)
	seen := map[string]bool{}
	for range 1000 {
		tok := s.Sign("same", exp)
		if seen[tok] {
			t.Fatal("Sign returned the same token twice")
		}
		seen[tok] = true
	}
}

func TestExpiryWithSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSigner(t, 3)
		tok := s.Sign("qr|sess_1", time.Now().Add(time.Minute))
		time.Sleep(59 * time.Second)
		if err := s.Verify(tok, "qr|sess_1", time.Now()); err != nil {
			t.Fatalf("after 59s: %v", err)
		}
		time.Sleep(time.Second)
		if err := s.Verify(tok, "qr|sess_1", time.Now()); !errors.Is(err, ErrExpired) {
			t.Fatalf("after 60s: %v, want ErrExpired", err)
		}
	})
}

func TestNewSignerKeyLength(t *testing.T) {
	if _, err := NewSigner(make([]byte, 31)); err == nil {
		t.Fatal("NewSigner accepted a 31-byte key")
	}
	key := bytes.Repeat([]byte{7}, 32)
	s, err := NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	tok := s.Sign("x", time.Unix(2_000_000_000, 0))
	key[0] = 8 // the Signer keeps its own copy
	if err := s.Verify(tok, "x", time.Unix(1_900_000_000, 0)); err != nil {
		t.Fatalf("Verify after caller changed its key slice: %v", err)
	}
}

func TestRandomID(t *testing.T) {
	re := regexp.MustCompile(`^auth_[a-z2-7]{26}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := RandomID("auth_")
		if !re.MatchString(id) {
			t.Fatalf("RandomID = %q", id)
		}
		if seen[id] {
			t.Fatal("RandomID repeated")
		}
		seen[id] = true
	}
}

func FuzzVerify(f *testing.F) {
	s := newSigner(f, 1)
	now := time.Unix(1_800_000_000, 0)
	valid := s.Sign("s", now.Add(time.Minute))
	f.Add(valid, "s")
	f.Add(valid[:10], "s")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, token, subject string) {
		err := s.Verify(token, subject, now)
		switch {
		case err == nil:
			// Only "s" was ever signed. Tokens carry a random nonce, so a
			// fuzz worker's own Sign differs from the seed's: any genuine
			// token for "s" is acceptable, nothing else is.
			if subject != "s" || len(token) != len(valid) {
				t.Fatalf("Verify accepted %q for %q", token, subject)
			}
		case !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrExpired):
			t.Fatalf("unexpected error %v", err)
		}
	})
}

func ExampleSigner() {
	s, err := NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC)
	tok := s.Sign("file_1|ch_1", now.Add(10*time.Minute))
	fmt.Println(s.Verify(tok, "file_1|ch_1", now))
	fmt.Println(s.Verify(tok, "file_1|ch_2", now))
	fmt.Println(s.Verify(tok, "file_1|ch_1", now.Add(time.Hour)))
	// Output:
	// <nil>
	// signurl: invalid token
	// signurl: token expired
}
