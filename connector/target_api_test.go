package connector_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

func newTargetServer(t testing.TB) *connector.Server {
	t.Helper()
	srv, err := connector.New(connector.Options{DataDir: t.TempDir(), Skill: []byte("# T\n\nT.\n"),
		Identity: connector.Identity{CardID: "im.target", Name: "T", Provider: "target", TargetType: protocol.TargetIM}})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func TestTargetAPIOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		o       connector.TargetAPIOptions
		base    string
		wantErr string
	}{
		{"default", connector.TargetAPIOptions{DefaultURL: "https://api.example.com/"}, "https://api.example.com", ""},
		{"override", connector.TargetAPIOptions{BaseURL: "http://127.0.0.1:9/x/", DefaultURL: "https://api.example.com"}, "http://127.0.0.1:9/x", ""},
		{"not a URL", connector.TargetAPIOptions{BaseURL: "not a url", Field: "Options.APIURL"}, "", `Options.APIURL must be an absolute http(s) URL, got "not a url"`},
		{"bad scheme", connector.TargetAPIOptions{BaseURL: "ftp://x"}, "", "BaseURL must be an absolute http(s) URL"},
		{"proxy scheme", connector.TargetAPIOptions{DefaultURL: "https://a.example", Proxy: "ftp://proxy:21"}, "", `proxy scheme "ftp"`},
		{"proxy not a URL", connector.TargetAPIOptions{DefaultURL: "https://a.example", Proxy: "::"}, "", "Proxy must be a URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api, err := newTargetServer(t).TargetAPI(tc.o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || api.BaseURL != tc.base || api.Timeout != connector.DefaultRequestTimeout {
				t.Fatalf("api %+v, err %v", api, err)
			}
		})
	}
}

// TestTargetAPIClient: the client follows no redirect (a token would go
// along), a proxy's password is redacted, Context bounds a request
// without a deadline and keeps one that has it.
func TestTargetAPIClient(t *testing.T) {
	hs := httptest.NewServer(http.RedirectHandler("http://elsewhere.invalid/steal", http.StatusFound))
	defer hs.Close()
	srv := newTargetServer(t)
	api, err := srv.TargetAPI(connector.TargetAPIOptions{BaseURL: hs.URL, Proxy: "http://user:proxy-pass-123@127.0.0.1:1", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := srv.SecretsHeld(); n == 0 {
		t.Fatal("the proxy password was not added to the redaction set")
	}
	direct, err := srv.TargetAPI(connector.TargetAPIOptions{BaseURL: hs.URL, Transport: http.DefaultTransport})
	if err != nil {
		t.Fatal(err)
	}
	res, err := direct.Client.Get(hs.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound {
		t.Fatalf("status %d: the redirect was followed", res.StatusCode)
	}
	ctx, cancel := api.Context(context.Background())
	dl, ok := ctx.Deadline()
	cancel()
	if !ok || time.Until(dl) > time.Minute {
		t.Fatalf("deadline %v %v", dl, ok)
	}
	short, cancelShort := context.WithTimeout(context.Background(), time.Second)
	defer cancelShort()
	ctx, cancel = api.Context(short)
	defer cancel()
	if ctx != short {
		t.Fatal("Context replaced a deadline the caller set")
	}
}

// A connector opens its target's API the same way every time: its Options'
// URL (or the public one), proxy, transport, timeout and rate-limit wait
// go to Server.TargetAPI in New.
func ExampleServer_TargetAPI() {
	dir, err := os.MkdirTemp("", "xconn-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	srv, err := connector.New(connector.Options{DataDir: dir, Skill: []byte("# Chat\n\nTalk.\n"),
		Identity: connector.Identity{CardID: "im.chat", Name: "Chat", Provider: "chat", TargetType: protocol.TargetIM}})
	if err != nil {
		fmt.Println(err)
		return
	}
	api, err := srv.TargetAPI(connector.TargetAPIOptions{
		BaseURL: "", DefaultURL: "https://slack.com/api/", Field: "Options.APIURL", // Options.APIURL: "" is the public API
		MaxRetryWait: 5 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(api.BaseURL, api.Timeout, api.RateLimit.MaxWait)
	_, err = srv.TargetAPI(connector.TargetAPIOptions{BaseURL: "slack.com", Field: "Options.APIURL"})
	fmt.Println(err)
	// Output:
	// https://slack.com/api 30s 5s
	// Options.APIURL must be an absolute http(s) URL, got "slack.com"
}
