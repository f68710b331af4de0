package webchat

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestReadMessage(t *testing.T) {
	c := &Connector{maxUpload: 1 << 10}
	mp := func(text string, file []byte) (string, []byte) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		mw.WriteField("text", text)
		if file != nil {
			fw, _ := mw.CreateFormFile("file", "../a.png")
			fw.Write(file)
		}
		mw.Close()
		return mw.FormDataContentType(), buf.Bytes()
	}
	tests := []struct {
		name, ct, body string
		wantText       string
		wantFile       string
		wantErr        bool
	}{
		{name: "json", ct: "application/json", body: `{"text":" hi "}`, wantText: "hi"},
		{name: "json with charset", ct: "application/json; charset=utf-8", body: `{"text":"hi"}`, wantText: "hi"},
		{name: "json empty", ct: "application/json", body: `{"text":"  "}`, wantErr: true},
		{name: "json malformed", ct: "application/json", body: `{"text":`, wantErr: true},
		{name: "json bad utf8", ct: "application/json", body: "{\"text\":\"\xff\"}", wantText: "\ufffd"},
		{name: "form urlencoded", ct: "application/x-www-form-urlencoded", body: "text=hi", wantErr: true},
		{name: "no content type", body: `{"text":"hi"}`, wantErr: true},
	}
	ct, body := mp("with file", []byte("PNGDATA"))
	tests = append(tests, struct {
		name, ct, body string
		wantText       string
		wantFile       string
		wantErr        bool
	}{name: "multipart", ct: ct, body: string(body), wantText: "with file", wantFile: "a.png"})
	ct, body = mp("", make([]byte, 2<<10))
	tests = append(tests, struct {
		name, ct, body string
		wantText       string
		wantFile       string
		wantErr        bool
	}{name: "multipart file too big", ct: ct, body: string(body), wantErr: true})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/webchat/api/messages", strings.NewReader(tt.body))
			if tt.ct != "" {
				r.Header.Set("Content-Type", tt.ct)
			}
			text, file, cleanup, err := c.readMessage(r)
			defer cleanup()
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if text != tt.wantText {
				t.Errorf("text %q, want %q", text, tt.wantText)
			}
			switch {
			case tt.wantFile == "" && file != nil:
				t.Errorf("unexpected file %q", file.Filename)
			case tt.wantFile != "" && (file == nil || file.Filename != tt.wantFile):
				t.Errorf("file %+v, want %q", file, tt.wantFile)
			}
		})
	}
}

func FuzzReadMessage(f *testing.F) {
	f.Add("application/json", []byte(`{"text":"hello"}`))
	f.Add("application/json", []byte(`{"text":""}`))
	f.Add("multipart/form-data; boundary=XX", []byte("--XX\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\nhi\r\n--XX--\r\n"))
	f.Add("multipart/form-data; boundary=XX", []byte("--XX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a/b.png\"\r\n\r\nxx\r\n--XX--\r\n"))
	c := &Connector{maxUpload: 4 << 10}
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		r := httptest.NewRequest("POST", "/webchat/api/messages", bytes.NewReader(body))
		r.Header.Set("Content-Type", ct)
		text, file, cleanup, err := c.readMessage(r)
		defer cleanup()
		if err != nil {
			return
		}
		if text == "" && file == nil {
			t.Fatal("accepted an empty message")
		}
		if len(text) > DefaultMaxTextBytes || !utf8.ValidString(text) || text != strings.TrimSpace(text) {
			t.Fatalf("accepted text %q", text)
		}
		if file != nil && (file.Filename == "" || strings.ContainsAny(file.Filename, `/\`)) {
			t.Fatalf("accepted file name %q", file.Filename)
		}
	})
}

// TestBindingFormat: the typed binding reads and writes the JSON that
// channels signed in before the typed SDK have in the store.
func TestBindingFormat(t *testing.T) {
	for _, tt := range []struct {
		stored string
		want   binding
	}{
		{`{"kind":"room","room":"lobby","access_code":"s3cret"}`, binding{Kind: bindRoom, Room: "lobby", AccessCode: "s3cret"}},
		{`{"kind":"qr","sessions":["k1","k2"]}`, binding{Kind: bindQR, Sessions: []string{"k1", "k2"}}},
	} {
		var got binding
		if err := json.Unmarshal([]byte(tt.stored), &got); err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Fatalf("decode %s: %+v, %v", tt.stored, got, err)
		}
		if b, _ := json.Marshal(tt.want); string(b) != tt.stored {
			t.Fatalf("encode %+v: %s, want %s", tt.want, b, tt.stored)
		}
	}
}
