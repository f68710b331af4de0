package connector_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

func decodeJSON(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

func postUpload(t *testing.T, base, ch, key, name string, body []byte) *http.Response {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("recipient_ref", "r1")
	fw, _ := mw.CreateFormFile("file", name)
	_, _ = fw.Write(body)
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, base+protocol.PathFileUploads, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if ch != "" {
		req.Header.Set(protocol.HeaderChannelID, ch)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func status(t *testing.T, resp *http.Response) int {
	t.Helper()
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func getRef(t *testing.T, base, ref, ch, key string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+protocol.PathFileRefsPrefix+ref, nil)
	if ch != "" {
		req.Header.Set(protocol.HeaderChannelID, ch)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestTransferPlane(t *testing.T) {
	t.Parallel()
	const key = "system-key-abcdef"
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{APIKey: key, Adjust: func(o *connector.Options) {
		o.MaxUploadBytes = 1024
		o.FileTTL = 400 * time.Millisecond
		o.SweepInterval = 50 * time.Millisecond
	}})
	c, _ := f.Connect(t, "")
	ctx := testCtx(t)
	a1, _ := c.Open(ctx, "")
	a2, _ := c.Open(ctx, "")
	ch, other := a1.ConnectorChannelID, a2.ConnectorChannelID

	cases := []struct {
		name     string
		ch, key  string
		body     []byte
		wantCode int
	}{
		{"no key", ch, "", []byte("x"), http.StatusUnauthorized},
		{"wrong key", ch, "wrong-key-000000", []byte("x"), http.StatusForbidden},
		{"no channel", "", key, []byte("x"), http.StatusBadRequest},
		{"unknown channel", "cch_nope", key, []byte("x"), http.StatusNotFound},
		{"too large", ch, key, bytes.Repeat([]byte("x"), 1025), http.StatusRequestEntityTooLarge},
	}
	for _, tc := range cases {
		if got := status(t, postUpload(t, f.URL, tc.ch, tc.key, "a.txt", tc.body)); got != tc.wantCode {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.wantCode)
		}
	}
	up := upload(t, f, ch, key, "../../etc/photo.jpg", []byte("jpeg bytes"))
	if up.FileType != protocol.FileImage || up.Filename != "photo.jpg" || !strings.HasPrefix(up.FileRef, "file_") {
		t.Fatalf("upload %+v", up)
	}
	resp := getRef(t, f.URL, up.FileRef, ch, key)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "jpeg bytes" || resp.Header.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("get %d %q", resp.StatusCode, b)
	}
	if got := status(t, getRef(t, f.URL, up.FileRef, other, key)); got != http.StatusForbidden {
		t.Errorf("wrong channel: %d", got)
	}
	if got := status(t, getRef(t, f.URL, up.FileRef, ch, "")); got != http.StatusUnauthorized {
		t.Errorf("no key: %d", got)
	}
	if got := status(t, getRef(t, f.URL, "file_unknown", ch, key)); got != http.StatusNotFound {
		t.Errorf("unknown: %d", got)
	}
	if got := status(t, getRef(t, f.URL, up.FileRef+"?sig=forged", "", "")); got != http.StatusNotFound && got != http.StatusForbidden {
		t.Errorf("forged: %d", got)
	}
	// Expired: 404, and the sweeper deletes the record.
	eventually(t, "file expiry", func() bool { return status(t, getRef(t, f.URL, up.FileRef, ch, key)) == http.StatusNotFound })
	eventually(t, "sweeper", func() bool {
		_, err := f.Store.GetFile(ctx, sdkfixture.FixtureCardID, up.FileRef)
		return err != nil
	})
}
