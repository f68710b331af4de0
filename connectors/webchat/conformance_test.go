package webchat_test

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/store"
)

// TestConformance keeps the shipped web chat connector passing every
// applicable MUST of the conformance suite, signed in by each of its flows:
// the room form flow, and the QR flow confirmed by opening its URL.
func TestConformance(t *testing.T) {
	const apiKey = "conformance-api-key-0123456789"
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "w.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := httptest.NewUnstartedServer(nil)
	srv.Start()
	defer srv.Close()
	conn, err := webchat.New(webchat.Options{SDK: connector.Options{Store: db, APIKey: apiKey, DataDir: filepath.Join(dir, "files")},
		PublicURL: srv.URL, LoginPollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Server().Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer conn.Server().Close(ctx)
	srv.Config.Handler = conn.Server()

	// A browser user in the room posts a text with a file, so that the
	// inbound and transfer.download checks run on a signed download_url.
	var posted atomic.Int32
	postFromBrowser := func(ctx context.Context, _ string) error {
		jar, _ := cookiejar.New(nil)
		browser := &http.Client{Jar: jar, Timeout: 5 * time.Second}
		res, err := browser.PostForm(srv.URL+"/webchat/rooms/lobby", url.Values{"access_code": {"s3cret-1234"}})
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("enter room: %s", res.Status)
		}
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		_ = mw.WriteField("text", fmt.Sprintf("a text with a file %d", posted.Add(1)))
		fw, _ := mw.CreateFormFile("file", "note.txt")
		_, _ = fw.Write([]byte("a file from the browser\n"))
		_ = mw.Close()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/webchat/api/messages?room=lobby", &body)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		res, err = browser.Do(req)
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusAccepted {
			return fmt.Errorf("post message: %s", res.Status)
		}
		return nil
	}
	for _, tc := range []struct {
		name string
		opts conformance.Options
	}{
		{"room form", conformance.Options{APIKey: apiKey, AuthFlow: webchat.FlowRoom,
			AuthInput: map[string]string{"room": "lobby", "access_code": "s3cret-1234"}, Inbound: postFromBrowser}},
		{"qr by url", conformance.Options{APIKey: apiKey, AuthFlow: webchat.FlowQR, AuthOpenURL: true, QRWait: 10 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var progress bytes.Buffer
			tc.opts.Out = &progress
			tc.opts.Timeout = 5 * time.Second
			tc.opts.Tool, tc.opts.ToolArgs = webchat.ToolSend, []byte(`{"text":"from the conformance suite"}`)
			rep, err := conformance.Check(ctx, srv.URL, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			passed, failed, skipped := rep.Counts()
			t.Logf("%s", rep.Summary())
			if !rep.OK() || failed != 0 {
				var text bytes.Buffer
				_ = rep.WriteText(&text)
				t.Fatalf("web chat fails MUSTs %v:\n%s", rep.Failed(), text.String())
			}
			// Signed in, the suite reaches the tool, chat and transfer checks.
			for _, id := range []string{"card.schema", "ws.first-packet-hello", "imv2.ack-duplicate", "tool.invoke", "imv2.ack-accepted"} {
				if r, ok := rep.Result(id); ok && r.Status != "pass" {
					t.Errorf("%s: %s (%s)", id, r.Status, r.Reason)
				}
			}
			if passed < 80 || skipped > 15 {
				t.Fatalf("%d passed, %d skipped: the signed-in checks did not run", passed, skipped)
			}
			if tc.opts.Inbound != nil {
				for _, id := range []string{"transfer.download", "imv2.inbound-delivered", "imv2.inbound-valid"} {
					if r, _ := rep.Result(id); r.Status != "pass" {
						t.Errorf("%s: %s %s %s", id, r.Status, r.Actual, r.Reason)
					}
				}
			}
			// No live signed token (a download sig, a QR login link) in any
			// report format.
			var all bytes.Buffer
			_ = rep.WriteText(&all)
			_ = rep.WriteJSON(&all)
			_ = rep.WriteJUnit(&all)
			if m := liveToken.FindString(all.String()); m != "" {
				t.Errorf("a report holds a live token: %q", m)
			}
		})
	}
}

// liveToken matches a signed URL token that was not redacted.
var liveToken = regexp.MustCompile(`sig=[^\[&"\s]|/login/[A-Za-z0-9_-]{8,}`)
