package host

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkDownloadCopy measures the copy of a download into FilesDir: a
// loopback HTTP server sends a 64 MiB file (sendfile), the client writes it
// to disk with io.Copy (32 KiB) or copyChunks with large chunks of several
// sizes.
func BenchmarkDownloadCopy(b *testing.B) {
	const size = 64 << 20
	dir := b.TempDir()
	src := filepath.Join(dir, "src")
	f, err := os.Create(src)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		b.Fatal(err)
	}
	f.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, src)
	}))
	defer srv.Close()
	client := srv.Client()
	copies := []struct {
		name string
		copy func(dst io.Writer, src io.Reader) (int64, error)
	}{
		{"32KiB-io.Copy", func(dst io.Writer, src io.Reader) (int64, error) { return io.Copy(dst, src) }},
		{"256KiB", func(dst io.Writer, src io.Reader) (int64, error) { return copyChunksSize(dst, src, size, 256<<10) }},
		{"1MiB", func(dst io.Writer, src io.Reader) (int64, error) { return copyChunksSize(dst, src, size, 1<<20) }},
		{"4MiB", func(dst io.Writer, src io.Reader) (int64, error) { return copyChunksSize(dst, src, size, 4<<20) }},
	}
	for _, c := range copies {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				dst, err := os.CreateTemp(dir, "dst")
				if err != nil {
					b.Fatal(err)
				}
				n, err := c.copy(dst, resp.Body)
				resp.Body.Close()
				cancel()
				dst.Close()
				os.Remove(dst.Name())
				if err != nil || n != size {
					b.Fatalf("copied %d: %v", n, err)
				}
			}
		})
	}
}

// BenchmarkDownloadGuard compares one small download (4 KiB, keep-alive)
// through the downloader with the connector's own origin (Options.HTTPClient)
// and with another origin (the guarded client: netguard's dialer, private
// networks allowed for loopback), against a bare http.Client in the same
// process, and a guarded download that dials a new connection each time
// against a bare client that does the same (the check's cost per
// connection: a lookup, the address check, the socket check).
func BenchmarkDownloadGuard(b *testing.B) {
	body := make([]byte, 4<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) }))
	defer srv.Close()
	base, _ := parseURL(srv.URL)
	other, _ := parseURL(strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/f")
	own, _ := parseURL(srv.URL + "/f")
	opts := Options{HTTPClient: &http.Client{Timeout: time.Minute}, AllowPrivateDownloads: true}
	d, err := newDownloader(opts)
	if err != nil {
		b.Fatal(err)
	}
	fresh, _ := newDownloader(opts)
	fresh.guarded.Transport.(*http.Transport).DisableKeepAlives = true
	bare := &http.Client{Timeout: time.Minute}
	bareTr := http.DefaultTransport.(*http.Transport).Clone()
	bareTr.DisableKeepAlives = true
	bareFresh := &http.Client{Timeout: time.Minute, Transport: bareTr}
	get := func(b *testing.B, do func() (*http.Response, error)) {
		for b.Loop() {
			resp, err := do()
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	ctx := context.Background()
	b.Run("bare-client", func(b *testing.B) { get(b, func() (*http.Response, error) { return bare.Get(own.String()) }) })
	b.Run("own-origin", func(b *testing.B) { get(b, func() (*http.Response, error) { return d.get(ctx, base, own) }) })
	b.Run("other-origin-guarded", func(b *testing.B) { get(b, func() (*http.Response, error) { return d.get(ctx, base, other) }) })
	b.Run("bare-client-new-conn", func(b *testing.B) { get(b, func() (*http.Response, error) { return bareFresh.Get(other.String()) }) })
	b.Run("other-origin-guarded-new-conn", func(b *testing.B) { get(b, func() (*http.Response, error) { return fresh.get(ctx, base, other) }) })
}
