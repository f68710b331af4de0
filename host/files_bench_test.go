package host

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
