package feishu

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/xconn/xconn/connectors/feishu/feishutest"
)

// FuzzDecrypt: an encrypted webhook body opens to a JSON object, or is
// refused; whatever an attacker posts, Decrypt never panics, and what the
// fake encrypts (as Feishu does) opens to the same event.
func FuzzDecrypt(f *testing.F) {
	f.Add(feishutest.Encrypt([]byte(`{"type":"url_verification","challenge":"c"}`), "k"), "k", []byte(`{"a":1}`))
	f.Add("", "", []byte(`{}`))
	f.Add("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "key", []byte(`{"x":"}"}`))
	f.Fuzz(func(t *testing.T, encrypted, key string, event []byte) {
		if out, err := Decrypt(encrypted, key); err == nil {
			if len(out) == 0 || out[0] != '{' || !json.Valid(out) {
				t.Fatalf("Decrypt gave %q", out)
			}
		}
		if !json.Valid(event) {
			return
		}
		event = bytes.TrimSpace(event)
		if len(event) == 0 || event[0] != '{' {
			return
		}
		out, err := Decrypt(feishutest.Encrypt(event, key), key)
		if err != nil || !bytes.Equal(out, event) {
			t.Fatalf("round trip of %q: %q, %v", event, out, err)
		}
	})
}

// FuzzCombine: split payloads of the long connection are reassembled only
// when every part arrived, never from parts of another message or beyond
// the declared count, and the table of partial payloads stays bounded.
func FuzzCombine(f *testing.F) {
	f.Add([]byte{2, 0, 1, 2, 1, 1})
	f.Add([]byte{1, 0, 0})
	f.Add([]byte{200, 5, 3, 0, 0, 0})
	f.Fuzz(func(t *testing.T, script []byte) {
		lc := &longConn{parts: map[string]*partial{}}
		for i := 0; i+2 < len(script); i += 3 {
			sum, seq, id := int(int8(script[i])), int(int8(script[i+1])), string(rune('a'+script[i+2]%80))
			part := []byte{byte(seq)}
			out := lc.combine(id, sum, seq, part)
			if out != nil && (sum < 1 || len(out) != sum) {
				t.Fatalf("combined %d bytes for a message of %d parts", len(out), sum)
			}
			for j, b := range out {
				if int(b) != j {
					t.Fatalf("part %d holds the bytes of part %d", j, b)
				}
			}
			if len(lc.parts) > maxParts {
				t.Fatalf("%d partial payloads held", len(lc.parts))
			}
			held := 0
			for _, p := range lc.parts {
				for _, b := range p.parts {
					held += len(b)
				}
			}
			if held != lc.partLen || held > maxPartBytes {
				t.Fatalf("%d bytes held, %d counted, bound %d", held, lc.partLen, maxPartBytes)
			}
		}
	})
}

// TestCombineBoundedInBytes: a split payload that would hold more than
// maxPartBytes is dropped whole (Feishu pushes it again, unacked), and
// the bytes it held are freed for the next one.
func TestCombineBoundedInBytes(t *testing.T) {
	lc := &longConn{parts: map[string]*partial{}}
	big := bytes.Repeat([]byte{'x'}, maxFrameBytes)
	for seq := range 3 {
		if out := lc.combine("huge", 3, seq, big); out != nil {
			t.Fatalf("part %d: reassembled %d bytes past the bound", seq, len(out))
		}
	}
	if lc.partLen != 0 || len(lc.parts) != 0 {
		t.Fatalf("after the drop: %d bytes in %d partials", lc.partLen, len(lc.parts))
	}
	lc.combine("ok", 2, 1, []byte("b"))
	if out := lc.combine("ok", 2, 0, []byte("a")); string(out) != "ab" || lc.partLen != 0 {
		t.Fatalf("next payload: %q, %d bytes held", out, lc.partLen)
	}
}
