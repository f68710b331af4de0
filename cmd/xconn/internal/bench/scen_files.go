package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/host"
)

// filesTimeout bounds one file transfer of the files scenario.
const filesTimeout = 5 * time.Minute

// runFiles moves one FileSize file each way through the transfer plane:
// upload (host ReplyStream.Final with a file -> POST /files/uploads ->
// connector handler reads it) and download (Channel.Publish with a file ->
// host fetches download_url -> Agent).
func runFiles(ctx context.Context, cfg Config, e *env) ([]Result, error) {
	dir, clean, err := scenarioDir(cfg, "files")
	if err != nil {
		return nil, err
	}
	defer clean()
	uploaded := make(chan error, 1)
	onMsg := func(_ context.Context, _ *connector.Channel, m *connector.AssistantMessage) error {
		var got int64
		for _, f := range m.Files {
			rc, err := f.Open()
			if err != nil {
				return err
			}
			n, err := io.Copy(io.Discard, rc)
			rc.Close()
			if err != nil {
				return err
			}
			got += n
		}
		var err error
		if got != cfg.FileSize {
			err = fmt.Errorf("connector read %d of %d bytes", got, cfg.FileSize)
		}
		select {
		case uploaded <- err:
		default:
		}
		return nil
	}
	downloaded := make(chan error, 1)
	agent := host.AgentFunc(func(_ context.Context, msg *host.UserMessage, _ host.ReplyStream) error {
		var err error
		if len(msg.Files) != 1 || msg.Files[0].Size != cfg.FileSize {
			err = fmt.Errorf("host received %d files, want one of %d bytes", len(msg.Files), cfg.FileSize)
		}
		for _, f := range msg.Files {
			_ = os.Remove(f.Path)
		}
		select {
		case downloaded <- err:
		default:
		}
		return nil
	})
	r, err := newRig(ctx, dir, rigOptions{maxFile: cfg.FileSize, agent: agent, onAssistant: onMsg})
	if err != nil {
		return nil, err
	}
	defer r.close()
	ucs, err := r.signIn(ctx, 1, 1, true)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "upload.bin")
	if err := writeFile(path, cfg.FileSize); err != nil {
		return nil, err
	}
	stream, err := r.host.Reply(ctx, ucs[0].ID)
	if err != nil {
		return nil, fmt.Errorf("files: reply stream: %w", err)
	}
	wait := func(ch chan error) error {
		select {
		case err := <-ch:
			return err
		case <-time.After(filesTimeout):
			return errors.New("timed out")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var out []Result
	// The memory the runs will hold: the connector keeps each uploaded
	// file and each file it caches for a download until the end.
	var pre []Metric
	if !cfg.NoPrefault {
		n, took := prefault(cfg.FileSize * int64(2*cfg.FileRuns+1))
		pre = []Metric{{Name: "prefault", Value: float64(n) / (1 << 20), Unit: fmt.Sprintf("MiB touched before the runs, untimed (%.2f s; --no-prefault skips it)", took.Seconds())}}
	}
	resetPeakRSS()
	m, err := medianOf(cfg.FileRuns, func(i int) error {
		if _, err := stream.Final(ctx, "file", host.OutgoingFile{Path: path, MimeType: "application/octet-stream"}); err != nil {
			return err
		}
		return wait(uploaded)
	})
	if err != nil {
		return out, fmt.Errorf("files upload: %w", err)
	}
	up := fileResult("files-upload", cfg.FileSize, m)
	up.PeakRSS, up.Baseline, up.Also, up.Goal = peakRSS(), nameHTTPCopy, []string{nameDiskWrite}, ">= 0.9, flat RSS"
	up.Extra = append(fileExtras(cfg, m), pre...)
	out = append(out, up)
	if err := os.Remove(path); err != nil {
		return out, fmt.Errorf("files: %w", err)
	}

	ch, err := r.conn.Channel(ucs[0].ChannelID)
	if err != nil {
		return out, fmt.Errorf("files: channel: %w", err)
	}
	resetPeakRSS()
	m, err = medianOf(cfg.FileRuns, func(i int) error {
		_, err := ch.Publish(ctx, connector.UserMessage{MessageID: "file-" + strconv.Itoa(i), Text: "file",
			Files: []connector.OutgoingFile{{Name: "download.bin", MimeType: "application/octet-stream",
				Content: io.LimitReader(zeroReader{}, cfg.FileSize)}}})
		if err != nil {
			return err
		}
		return wait(downloaded)
	})
	if err != nil {
		return out, fmt.Errorf("files download: %w", err)
	}
	down := fileResult("files-download", cfg.FileSize, m)
	down.PeakRSS, down.Baseline, down.Also, down.Goal = peakRSS(), nameHTTPCopy, []string{nameDiskWrite}, ">= 0.9, flat RSS"
	down.Extra = fileExtras(cfg, m)
	out = append(out, down)
	return out, nil
}

// fileExtras are the notes of a files row: the runs it is the median of
// and the slowest of them.
func fileExtras(cfg Config, m measured) []Metric {
	return []Metric{{Name: "runs", Value: float64(cfg.FileRuns), Unit: "transfers, median reported"},
		{Name: "slowest_run", Value: round2(m.slowest.Seconds() * 1000), Unit: "ms"}}
}

// medianOf runs fn runs times (i = 0, 1, ...) and returns the measurement
// of the median run (by time), with the slowest time noted.
func medianOf(runs int, fn func(i int) error) (measured, error) {
	ms := make([]measured, 0, runs)
	for i := range runs {
		m, err := timeOne(func() error { return fn(i) })
		if err != nil {
			return measured{}, err
		}
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b measured) int { return cmp.Compare(a.elapsed, b.elapsed) })
	med := ms[len(ms)/2]
	med.slowest = ms[len(ms)-1].elapsed
	return med, nil
}

// runDiskWrite measures writing FileSize bytes to a new file in the run's
// directory (the disk the files scenario's stores and caches are on),
// closed but not synced, as xconn does; the median of FileRuns writes.
func runDiskWrite(ctx context.Context, cfg Config, _ *env) ([]Result, error) {
	dir, clean, err := scenarioDir(cfg, "disk-write")
	if err != nil {
		return nil, err
	}
	defer clean()
	path := filepath.Join(dir, "disk.bin")
	if err := writeFile(path, min(cfg.FileSize, 8<<20)); err != nil { // warm-up
		return nil, err
	}
	m, err := medianOf(cfg.FileRuns, func(int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("bench: %w", err)
		}
		return writeFile(path, cfg.FileSize)
	})
	if err != nil {
		return nil, fmt.Errorf("disk-write: %w", err)
	}
	res := fileResult(nameDiskWrite, cfg.FileSize, m)
	res.Extra = fileExtras(cfg, m)
	return []Result{res}, nil
}

// writeFile writes size zero bytes to path.
func writeFile(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if _, err := io.CopyN(f, zeroReader{}, size); err != nil {
		f.Close()
		return fmt.Errorf("bench: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}
