package wxcrypt

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"testing"
)

// The documented example of "加解密方案说明"
// (developer.work.weixin.qq.com/document/path/90968), also in the official
// WXBizMsgCrypt samples: a corp's token, EncodingAESKey and corp_id, the
// URL verification (GET) and a message callback (POST).
const (
	docToken  = "QDG6eK"
	docKey    = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"
	docCorpID = "wx5823bf96d3bd56c7"

	docVerifySig   = "5c45ff5e21c57e6ad56bac8758b79b1d9ac89fd3"
	docVerifyTS    = "1409659589"
	docVerifyNonce = "263014780"
	docEchoStr     = "P9nAzCzyDtyTWESHep1vC5X9xho/qYX3Zpb4yKa9SKld1DsH3Iyt3tP3zNdtp+4RPcs8TgAE7OaBO+FZXvnaqQ=="
	docEchoPlain   = "1616140317555161061"

	docMsgSig   = "477715d11cdb4164915debcba66cb864d751f3e6"
	docMsgTS    = "1409659813"
	docMsgNonce = "1372623149"
	docMsgEnc   = "RypEvHKD8QQKFhvQ6QleEB4J58tiPdvo+rtK1I9qca6aM/wvqnLSV5zEPeusUiX5L5X/0lWfrf0QADHHhGd3QczcdCUpj911L3vg3W/sYYvuJTs3TUUkSUXxaccAS0qhxchrRYt66wiSpGLYL42aM6A8dTT+6k4aSknmPj48kzJs8qLjvd4Xgpue06DOdnLxAUHzM6+kDZ+HMZfJYuR+LtwGc2hgf5gsijff0ekUNXZiqATP7PF5mZxZ3Izoun1s4zG4LUMnvw2r+KqCKIw+3IQH03v+BCA9nMELNqbSf6tiWSrXJB3LAVGUcallcrw8V2t9EL4EhzJWrQUax5wLVMNS0+rUPA3k22Ncx4XXZS9o0MBH27Bo6BpNelZpS+/uh9KsNlY6bHCmJU9p8g7m3fVKn28H3KDYA5Pl/T8Z1ptDAVe0lXdQ2YoyyH2uyPIGHBZZIs2pDBS8R07+qN+E7Q=="
)

func docCrypter(t testing.TB, token, key, id string) *Crypter {
	t.Helper()
	c, err := New(token, key, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDocumentedVectors: the documented signatures verify, and the
// documented ciphertexts open to the documented plaintexts.
func TestDocumentedVectors(t *testing.T) {
	c := docCrypter(t, docToken, docKey, docCorpID)
	if got := Signature(docToken, docMsgTS, docMsgNonce, docMsgEnc); got != docMsgSig {
		t.Fatalf("Signature = %s, want the documented %s", got, docMsgSig)
	}
	echo, err := c.Open(docVerifySig, docVerifyTS, docVerifyNonce, docEchoStr)
	if err != nil || string(echo) != docEchoPlain {
		t.Fatalf("echostr: %q %v", echo, err)
	}
	msg, err := c.Open(docMsgSig, docMsgTS, docMsgNonce, docMsgEnc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<ToUserName><![CDATA[wx5823bf96d3bd56c7]]></ToUserName>", "<FromUserName><![CDATA[mycreate]]></FromUserName>",
		"<Content><![CDATA[hello]]></Content>", "<MsgId>4561255354251345929</MsgId>", "<AgentID>218</AgentID>"} {
		if !bytes.Contains(msg, []byte(want)) {
			t.Errorf("decrypted message lacks %s:\n%s", want, msg)
		}
	}
	// Upper-case hex is the same signature.
	if !c.Verify(strings.ToUpper(docMsgSig), docMsgTS, docMsgNonce, docMsgEnc) {
		t.Error("upper-case signature refused")
	}
}

// TestRefusals: each way a forged callback can be wrong is refused with
// its kind, and the error holds neither the token nor the key.
func TestRefusals(t *testing.T) {
	good := docCrypter(t, docToken, docKey, docCorpID)
	otherKey := strings.Repeat("A", 42) + "B"
	tests := []struct {
		name               string
		c                  *Crypter
		sig, ts, nonce, in string
		want               Kind
	}{
		{"bad signature", good, strings.Repeat("0", 40), docMsgTS, docMsgNonce, docMsgEnc, KindSignature},
		{"empty signature", good, "", docMsgTS, docMsgNonce, docMsgEnc, KindSignature},
		{"other timestamp", good, docMsgSig, "1409659814", docMsgNonce, docMsgEnc, KindSignature},
		{"other nonce", good, docMsgSig, docMsgTS, "1", docMsgEnc, KindSignature},
		{"altered ciphertext", good, docMsgSig, docMsgTS, docMsgNonce, "A" + docMsgEnc[1:], KindSignature},
		{"other token", docCrypter(t, "another", docKey, docCorpID), docMsgSig, docMsgTS, docMsgNonce, docMsgEnc, KindSignature},
		{"other key", docCrypter(t, docToken, otherKey, docCorpID), docMsgSig, docMsgTS, docMsgNonce, docMsgEnc, KindDecrypt},
		{"other corp", docCrypter(t, docToken, docKey, "wwanothercorp"), docMsgSig, docMsgTS, docMsgNonce, docMsgEnc, KindReceiver},
		{"not base64", good, Signature(docToken, "1", "2", "!!!"), "1", "2", "!!!", KindDecrypt},
		{"short", good, Signature(docToken, "1", "2", "AAAA"), "1", "2", "AAAA", KindDecrypt},
		{"not a block", good, Signature(docToken, "1", "2", base64.StdEncoding.EncodeToString(make([]byte, 40))), "1", "2",
			base64.StdEncoding.EncodeToString(make([]byte, 40)), KindDecrypt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := tt.c.Open(tt.sig, tt.ts, tt.nonce, tt.in)
			if KindOf(err) != tt.want {
				t.Fatalf("Open = %q, %v; want kind %v", msg, err, tt.want)
			}
			if s := err.Error(); strings.Contains(s, docToken) || strings.Contains(s, docKey) || strings.Contains(s, otherKey) {
				t.Fatalf("error holds a secret: %s", s)
			}
		})
	}
}

// seal encrypts plain exactly as given (no padding added), for the
// padding and msg_len cases the encoder never makes.
func seal(t *testing.T, plain []byte) string {
	t.Helper()
	key, _ := DecodeKey(docKey)
	b, _ := aes.NewCipher(key)
	out := make([]byte, len(plain))
	cipher.NewCBCEncrypter(b, key[:16]).CryptBlocks(out, plain)
	return base64.StdEncoding.EncodeToString(out)
}

// TestMalformedPlaintext: a plaintext with bad padding or a msg_len
// beyond its end is refused as undecryptable.
func TestMalformedPlaintext(t *testing.T) {
	c := docCrypter(t, docToken, docKey, docCorpID)
	frame := func(msgLen uint32, body string, pad []byte) []byte {
		p := make([]byte, 16, 64)
		p = binary.BigEndian.AppendUint32(p, msgLen)
		p = append(p, body...)
		return append(p, pad...)
	}
	pad := func(n, v int) []byte { return bytes.Repeat([]byte{byte(v)}, n) }
	body := "hi" + docCorpID // 20 bytes
	tests := []struct {
		name  string
		plain []byte
		want  Kind
	}{
		{"ok", frame(2, body, pad(24, 24)), 0},
		{"zero pad", frame(2, body, pad(24, 0)), KindDecrypt},
		{"pad beyond block", frame(2, body+strings.Repeat("x", 16), pad(24, 40)), KindDecrypt},
		{"mixed pad", frame(2, body, append(pad(23, 24), 5)), KindDecrypt},
		{"msg_len too long", frame(200, body, pad(24, 24)), KindDecrypt},
		{"msg_len huge", frame(1<<31, body, pad(24, 24)), KindDecrypt},
		{"receiveid cut", frame(3, body, pad(24, 24)), KindReceiver},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := c.Decrypt(seal(t, tt.plain))
			if KindOf(err) != tt.want {
				t.Fatalf("Decrypt = %q, %v; want kind %v", msg, err, tt.want)
			}
			if tt.want == 0 && string(msg) != "hi" {
				t.Fatalf("Decrypt = %q", msg)
			}
		})
	}
}

// TestRoundTrip: what Encrypt seals opens to the same message, padded
// to 32-byte blocks, for every length around a block boundary.
func TestRoundTrip(t *testing.T) {
	c := docCrypter(t, docToken, docKey, docCorpID)
	for n := 0; n < 100; n++ {
		msg := bytes.Repeat([]byte{'m'}, n)
		enc, err := c.Encrypt(msg, nil)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := base64.StdEncoding.DecodeString(enc)
		if len(raw)%blockSize != 0 {
			t.Fatalf("len %d: ciphertext of %d bytes is not padded to %d", n, len(raw), blockSize)
		}
		got, err := c.Decrypt(enc)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("len %d: %q %v", n, got, err)
		}
	}
}

func TestNewKey(t *testing.T) {
	for _, k := range []string{"", "short", docKey + "A", strings.Repeat("!", 43)} {
		if _, err := New(docToken, k, docCorpID); err != ErrKey {
			t.Errorf("New(%q) = %v, want ErrKey", k, err)
		}
	}
}

// FuzzDecrypt: whatever a callback carries, Decrypt never panics, what
// it returns fits in the input, and what Encrypt seals opens again.
func FuzzDecrypt(f *testing.F) {
	c := docCrypter(f, docToken, docKey, docCorpID)
	f.Add(docMsgEnc, []byte("hello"))
	f.Add(docEchoStr, []byte{})
	f.Add("", []byte("<xml/>"))
	f.Add(strings.Repeat("A", 44), []byte{0, 1, 2})
	f.Fuzz(func(t *testing.T, enc string, msg []byte) {
		if out, err := c.Decrypt(enc); err == nil && len(out) > len(enc) {
			t.Fatalf("Decrypt gave %d bytes from %d", len(out), len(enc))
		} else if err != nil && KindOf(err) == 0 {
			t.Fatalf("untyped error %v", err)
		}
		sealed, err := c.Encrypt(msg, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Open(Signature(docToken, "1", "n", sealed), "1", "n", sealed)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("round trip of %q: %q %v", msg, got, err)
		}
	})
}

// FuzzDecryptFile: a robot's file opens only with its aeskey and never
// panics, whatever the bytes.
func FuzzDecryptFile(f *testing.F) {
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	f.Add(key, []byte("0123456789abcdef0123456789abcdef"))
	f.Add("", []byte{})
	f.Add("AAAA", []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, aesKey string, data []byte) {
		out, err := DecryptFile(aesKey, data)
		if err == nil && len(out) >= len(data) {
			t.Fatalf("%d bytes from %d", len(out), len(data))
		}
		if err != nil && KindOf(err) != KindDecrypt {
			t.Fatalf("untyped %v", err)
		}
	})
}

// TestDecryptFile: the official SDK's scheme round-trips; a wrong key
// fails.
func TestDecryptFile(t *testing.T) {
	raw := bytes.Repeat([]byte{9}, 32)
	key := base64.StdEncoding.EncodeToString(raw)
	plain := []byte("a robot's image bytes")
	pad := 32 - len(plain)%32
	buf := append(append([]byte(nil), plain...), bytes.Repeat([]byte{byte(pad)}, pad)...)
	b, _ := aes.NewCipher(raw)
	cipher.NewCBCEncrypter(b, raw[:16]).CryptBlocks(buf, buf)
	if got, err := DecryptFile(key, buf); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("%q %v", got, err)
	}
	if got, err := DecryptFile(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{8}, 32)), buf); err == nil && bytes.Equal(got, plain) {
		t.Fatal("opened with another key")
	}
}

// BenchmarkOpen: verifying and decrypting the documented callback.
func BenchmarkOpen(b *testing.B) {
	c := docCrypter(b, docToken, docKey, docCorpID)
	for b.Loop() {
		if _, err := c.Open(docMsgSig, docMsgTS, docMsgNonce, docMsgEnc); err != nil {
			b.Fatal(err)
		}
	}
}
