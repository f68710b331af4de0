package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// zeroReader yields zero bytes forever without allocating.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// runHTTPCopy measures plain loopback HTTP: the server io.Copies FileSize
// bytes into the response, the client io.Copies the body to io.Discard.
func runHTTPCopy(ctx context.Context, cfg Config, _ *env) ([]Result, error) {
	srv, err := listen(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		if err != nil || n < 0 {
			http.Error(w, "bad n", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		_, _ = io.CopyN(w, zeroReader{}, n)
	}))
	if err != nil {
		return nil, err
	}
	defer srv.close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	get := func(n int64) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.url+"/?n="+strconv.FormatInt(n, 10), nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("bench: http get: %w", err)
		}
		defer resp.Body.Close()
		got, err := io.Copy(io.Discard, resp.Body)
		if err == nil && got != n {
			err = fmt.Errorf("bench: http copy: got %d of %d bytes", got, n)
		}
		return err
	}
	if err := get(min(cfg.FileSize, 8<<20)); err != nil { // warm-up
		return nil, err
	}
	m, err := medianOf(cfg.FileRuns, func(int) error { return get(cfg.FileSize) })
	if err != nil {
		return nil, err
	}
	res := fileResult(nameHTTPCopy, cfg.FileSize, m)
	res.Extra = fileExtras(cfg, m)
	return []Result{res}, nil
}

// timeOne measures one call of fn.
func timeOne(fn func() error) (measured, error) {
	mem := startMem()
	t := time.Now()
	err := fn()
	m := measured{ops: 1, elapsed: time.Since(t)}
	m.allocs, m.bytes = mem.stop()
	m.hist.Record(m.elapsed)
	return m, err
}

// fileResult is a row whose rate is MiB/s of one size-byte transfer.
func fileResult(name string, size int64, m measured) Result {
	r := m.result(name, "MiB/s")
	if m.elapsed > 0 {
		r.Rate = float64(size) / (1 << 20) / m.elapsed.Seconds()
	}
	return r
}
