package wecomtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/xconn/xconn/connectors/wecom/internal/wxcrypt"
)

const (
	docToken  = "QDG6eK"
	docKey    = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"
	docCorpID = "wx5823bf96d3bd56c7"
)

// TestEncryptOpens: what the fake seals, the connector's crypto (checked
// against WeCom's documented vectors) opens, and the fake's Sign is the
// documented signature.
func TestEncryptOpens(t *testing.T) {
	c, err := wxcrypt.New(docToken, docKey, docCorpID)
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range [][]byte{{}, []byte("hello"), bytes.Repeat([]byte("x"), 100)} {
		enc, err := Encrypt(docKey, docCorpID, msg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Open(Sign(docToken, "1", "2", enc), "1", "2", enc)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("%q: %q %v", msg, got, err)
		}
	}
	if Sign(docToken, "1409659813", "1372623149", "RypEvHKD8QQKFhvQ6QleEB4J58tiPdvo+rtK1I9qca6aM/wvqnLSV5zEPeusUiX5L5X/0lWfrf0QADHHhGd3QczcdCUpj911L3vg3W/sYYvuJTs3TUUkSUXxaccAS0qhxchrRYt66wiSpGLYL42aM6A8dTT+6k4aSknmPj48kzJs8qLjvd4Xgpue06DOdnLxAUHzM6+kDZ+HMZfJYuR+LtwGc2hgf5gsijff0ekUNXZiqATP7PF5mZxZ3Izoun1s4zG4LUMnvw2r+KqCKIw+3IQH03v+BCA9nMELNqbSf6tiWSrXJB3LAVGUcallcrw8V2t9EL4EhzJWrQUax5wLVMNS0+rUPA3k22Ncx4XXZS9o0MBH27Bo6BpNelZpS+/uh9KsNlY6bHCmJU9p8g7m3fVKn28H3KDYA5Pl/T8Z1ptDAVe0lXdQ2YoyyH2uyPIGHBZZIs2pDBS8R07+qN+E7Q==") != "477715d11cdb4164915debcba66cb864d751f3e6" {
		t.Fatal("Sign differs from the documented signature")
	}
}

func getJSON(t *testing.T, u string) map[string]any {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTokens: gettoken refuses a wrong secret (40001) and an unknown corp
// (40013); an expired token answers 42001, a made-up one 40014.
func TestTokens(t *testing.T) {
	f := New()
	f.AddApp(App{CorpID: "ww1", AgentID: 1000002, Secret: "s", Token: "t", EncodingAESKey: docKey})
	base := f.Start()
	defer f.Close()
	tok := func(corp, secret string) map[string]any {
		return getJSON(t, base+"/cgi-bin/gettoken?"+url.Values{"corpid": {corp}, "corpsecret": {secret}}.Encode())
	}
	if got := tok("ww1", "bad")["errcode"]; got != float64(40001) {
		t.Fatalf("wrong secret: %v", got)
	}
	if got := tok("ww9", "s")["errcode"]; got != float64(40013) {
		t.Fatalf("unknown corp: %v", got)
	}
	ok := tok("ww1", "s")
	at, _ := ok["access_token"].(string)
	if ok["errcode"] != float64(0) || at == "" || ok["expires_in"] != float64(TokenTTL) {
		t.Fatalf("gettoken: %v", ok)
	}
	f.ExpireTokens()
	if got := getJSON(t, base+"/cgi-bin/media/get?access_token="+at+"&media_id=x")["errcode"]; got != float64(42001) {
		t.Fatalf("expired: %v", got)
	}
	if got := getJSON(t, base+"/cgi-bin/media/get?access_token=nope&media_id=x")["errcode"]; got != float64(40014) {
		t.Fatalf("invalid: %v", got)
	}
}
