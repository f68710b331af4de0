package host

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/xconn/xconn/protocol"
)

// A connector's download_url is fetched only from the connector's own
// origin unless Options.DownloadOrigins allows another; redirects follow the
// same rule, and a refusal fails the file clearly (not retryable).
func TestDownloadOrigins(t *testing.T) {
	t.Parallel()
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("internal data"))
	}))
	t.Cleanup(elsewhere.Close)
	other := elsewhere.URL + "/secret?key=one-time-key-123"

	tests := []struct {
		name    string
		origins []string
		url     func(f *fakeConnector) string
		ok      bool
	}{
		{"relative", nil, func(*fakeConnector) string { return "/files/refs/f_1" }, true},
		{"absolute, connector origin", nil, func(f *fakeConnector) string { return f.srv.URL + "/files/refs/f_1" }, true},
		{"other origin", nil, func(*fakeConnector) string { return other }, false},
		{"other origin allowed", []string{elsewhere.URL}, func(*fakeConnector) string { return other }, true},
		{"other origin allowed with default port spelled", []string{"http://example.invalid:80", elsewhere.URL + "/"}, func(*fakeConnector) string { return other }, true},
		{"any origin", []string{AnyDownloadOrigin}, func(*fakeConnector) string { return other }, true},
		{"redirect to another origin", nil, func(f *fakeConnector) string { return "/redirect?to=" + url.QueryEscape(other) }, false},
		{"redirect to an allowed origin", []string{elsewhere.URL}, func(f *fakeConnector) string { return "/redirect?to=" + url.QueryEscape(other) }, true},
		{"redirect within the connector", nil, func(f *fakeConnector) string { return "/redirect?to=" + url.QueryEscape("/files/refs/f_1") }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeConnector(t, "im.fake", "")
			f.set(func(f *fakeConnector) { f.downloads["f_1"] = []byte("file body") })
			agent := &countingAgent{}
			th := newTestHost(t, "", func(o *Options) { o.Agent = agent; o.DownloadOrigins = tt.origins })
			th.admitOnline(t, f)
			uc := th.signinRoom(t, "ola", "im.fake")
			f.publish(uc.ChannelID, protocol.ChatMessagePayload{MessageID: "m1", Text: "see file",
				Files: []protocol.ChatFile{{Type: protocol.FileFile, FileRef: "f_1", Filename: "a.txt", DownloadURL: tt.url(f)}}})
			a := waitAck(t, f)
			if tt.ok {
				if a.Status != protocol.AckAccepted || agent.files.Load() != 1 {
					t.Fatalf("ack %+v, files %d: want accepted with the file", a, agent.files.Load())
				}
				return
			}
			if a.Status != protocol.AckRejected || a.Code != string(CodeFileDownloadFailed) || a.Retryable == nil || *a.Retryable ||
				!strings.Contains(a.Message, "origin "+strings.TrimSuffix(elsewhere.URL, "/")+" is not allowed") {
				t.Fatalf("ack %+v: want a non-retryable file_download_failed naming the origin", a)
			}
			if strings.Contains(a.Message, "one-time-key") {
				t.Fatalf("the refusal shows the URL's key: %s", a.Message)
			}
			if agent.n.Load() != 0 {
				t.Fatal("the agent got the message")
			}
		})
	}
}

func TestDownloadOriginsOption(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	t.Cleanup(func() { _ = db.Close() })
	for _, bad := range []string{"example.com", "ftp://example.com", "https://example.com/path", "https://u:p@example.com", "https://example.com?q=1"} {
		if _, err := New(Options{Store: db, DownloadOrigins: []string{bad}}); err == nil {
			t.Errorf("origin %q was accepted", bad)
		}
	}
	for _, good := range []string{"https://example.com", "http://127.0.0.1:8080", "https://[::1]:8443/", "*"} {
		if _, err := New(Options{Store: db, DownloadOrigins: []string{good}}); err != nil {
			t.Errorf("origin %q: %v", good, err)
		}
	}
}
