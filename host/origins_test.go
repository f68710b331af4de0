package host

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/xconn/xconn/protocol"
)

// cdnHost and the names below stand for other origins: the test resolver
// maps them to the addresses the guard judges, and the test dialer takes a
// connection to the public one to the loopback server that plays the CDN.
const (
	cdnHost      = "cdn.example.test"      // public: 203.0.113.7
	intranetHost = "files.intranet.test"   // private: 10.0.0.8
	metadataHost = "metadata.example.test" // 169.254.169.254
)

var cdnAddr = netip.MustParseAddr("203.0.113.7")

// guardSeams points the host's guarded dialer at the test resolver and
// dialer: connections to cdnAddr reach cdn; connects counts the dials.
func guardSeams(th *testHost, cdn *httptest.Server, connects *atomic.Int32) {
	cdnListen := cdn.Listener.Addr().String()
	th.dl.dialer.Lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case cdnHost:
			return []netip.Addr{cdnAddr}, nil
		case intranetHost:
			return []netip.Addr{netip.MustParseAddr("10.0.0.8")}, nil
		case metadataHost:
			return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
		}
		return net.DefaultResolver.LookupNetIP(context.Background(), "ip", host)
	}
	th.dl.dialer.Connect = func(ctx context.Context, network, address string) (net.Conn, error) {
		connects.Add(1)
		if ap, err := netip.ParseAddrPort(address); err == nil && ap.Addr() == cdnAddr {
			address = cdnListen
		}
		var d net.Dialer
		return d.DialContext(ctx, network, address)
	}
}

// TestDownloadGuard is issue 35 item 2: a download_url on another origin
// (a signed or one-time CDN URL, IM v2 sections 3 and 5.3) is fetched by
// default when its name resolves to a public address, and refused, not
// retryable, when it resolves to a loopback, private or metadata address,
// also behind a redirect; AllowPrivateDownloads lets private networks
// through but never the metadata address; DownloadOrigins still restricts
// the origins when set. The connector's own origin is fetched as before.
// The refusal names the address or origin, never the URL's key.
func TestDownloadGuard(t *testing.T) {
	t.Parallel()
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		_, _ = w.Write([]byte("cdn file"))
	}))
	t.Cleanup(cdn.Close)
	_, cdnPort, _ := net.SplitHostPort(cdn.Listener.Addr().String())
	signed := "http://" + net.JoinHostPort(cdnHost, cdnPort) + "/f_1?sig=one-time-key-123"
	loopback := cdn.URL + "/f_1?sig=one-time-key-123" // 127.0.0.1 on another port than the connector's

	tests := []struct {
		name      string
		private   bool
		origins   []string
		url       func(f *fakeConnector) string
		wantErr   string // "" for accepted
		noConnect bool   // the refusal comes before any connection
	}{
		{name: "relative", url: func(*fakeConnector) string { return "/files/refs/f_1" }},
		{name: "absolute, connector origin", url: func(f *fakeConnector) string { return f.srv.URL + "/files/refs/f_1" }},
		{name: "signed URL on a public CDN", url: func(*fakeConnector) string { return signed }},
		{name: "loopback address", url: func(*fakeConnector) string { return loopback }, wantErr: "address 127.0.0.1 is loopback", noConnect: true},
		{name: "name resolving to a private address", url: func(*fakeConnector) string { return "http://" + intranetHost + "/f?sig=one-time-key-123" },
			wantErr: "address 10.0.0.8 is private", noConnect: true},
		{name: "metadata address", url: func(*fakeConnector) string { return "http://" + metadataHost + "/latest/meta-data/" },
			wantErr: "169.254.169.254 is metadata", noConnect: true},
		{name: "connector redirects to a loopback address", url: func(f *fakeConnector) string { return "/redirect?to=" + url.QueryEscape(loopback) },
			wantErr: "address 127.0.0.1 is loopback", noConnect: true},
		{name: "connector redirects to the CDN", url: func(f *fakeConnector) string { return "/redirect?to=" + url.QueryEscape(signed) }},
		{name: "CDN redirects to a loopback address", url: func(*fakeConnector) string { return signed + "&to=" + url.QueryEscape(loopback) },
			wantErr: "address 127.0.0.1 is loopback"},
		{name: "private networks allowed", private: true, url: func(*fakeConnector) string { return loopback }},
		{name: "private networks allowed, metadata still refused", private: true,
			url: func(*fakeConnector) string { return "http://" + metadataHost + "/latest/meta-data/" }, wantErr: "169.254.169.254 is metadata", noConnect: true},
		{name: "origins restricted to the connector's", origins: []string{"http://example.invalid"}, url: func(*fakeConnector) string { return signed },
			wantErr: "origin http://" + net.JoinHostPort(cdnHost, cdnPort) + " is not allowed", noConnect: true},
		{name: "origins restricted, CDN listed", origins: []string{"http://" + net.JoinHostPort(cdnHost, cdnPort)}, url: func(*fakeConnector) string { return signed }},
		{name: "any origin", origins: []string{AnyDownloadOrigin}, url: func(*fakeConnector) string { return signed }},
		{name: "redirect within the connector", url: func(f *fakeConnector) string { return "/redirect?to=" + url.QueryEscape("/files/refs/f_1") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeConnector(t, "im.fake", "")
			f.set(func(f *fakeConnector) { f.downloads["f_1"] = []byte("file body") })
			agent := &countingAgent{}
			th := newTestHost(t, "", func(o *Options) {
				o.Agent, o.DownloadOrigins, o.AllowPrivateDownloads = agent, tt.origins, tt.private
			})
			var connects atomic.Int32
			guardSeams(th, cdn, &connects)
			th.admitOnline(t, f)
			uc := th.signinRoom(t, "ola", "im.fake")
			f.publish(uc.ChannelID, protocol.ChatMessagePayload{MessageID: "m1", Text: "see file",
				Files: []protocol.ChatFile{{Type: protocol.FileFile, FileRef: "f_1", Filename: "a.txt", DownloadURL: tt.url(f)}}})
			a := waitAck(t, f)
			if tt.wantErr == "" {
				if a.Status != protocol.AckAccepted || agent.files.Load() != 1 {
					t.Fatalf("ack %+v, files %d: want accepted with the file", a, agent.files.Load())
				}
				return
			}
			if a.Status != protocol.AckRejected || a.Code != string(CodeFileDownloadFailed) || a.Retryable == nil || *a.Retryable ||
				!strings.Contains(a.Message, tt.wantErr) {
				t.Fatalf("ack %+v: want a non-retryable file_download_failed saying %q", a, tt.wantErr)
			}
			if strings.Contains(a.Message, "one-time-key") {
				t.Fatalf("the refusal shows the URL's key: %s", a.Message)
			}
			if tt.noConnect && connects.Load() != 0 {
				t.Fatalf("%d connections made for a refused download", connects.Load())
			}
			if agent.n.Load() != 0 {
				t.Fatal("the agent got the message")
			}
		})
	}
}

// TestDownloadGuardRealDialer: without seams, a download_url naming
// localhost on another port than the connector's is refused after DNS
// resolution by the dialer's checks, and fetched with
// AllowPrivateDownloads.
func TestDownloadGuardRealDialer(t *testing.T) {
	t.Parallel()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("internal")) }))
	t.Cleanup(other.Close)
	_, port, _ := net.SplitHostPort(other.Listener.Addr().String())
	for _, allow := range []bool{false, true} {
		f := newFakeConnector(t, "im.fake", "")
		agent := &countingAgent{}
		th := newTestHost(t, "", func(o *Options) { o.Agent, o.AllowPrivateDownloads = agent, allow })
		th.admitOnline(t, f)
		uc := th.signinRoom(t, "ola", "im.fake")
		f.publish(uc.ChannelID, protocol.ChatMessagePayload{MessageID: "m1", Text: "see file",
			Files: []protocol.ChatFile{{Type: protocol.FileFile, FileRef: "f_1", DownloadURL: "http://localhost:" + port + "/secret"}}})
		a := waitAck(t, f)
		switch {
		case allow && (a.Status != protocol.AckAccepted || agent.files.Load() != 1):
			t.Fatalf("with private networks allowed: ack %+v", a)
		case !allow && (a.Status != protocol.AckRejected || !strings.Contains(a.Message, "is loopback")):
			t.Fatalf("by default: ack %+v, want the loopback address refused", a)
		}
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
