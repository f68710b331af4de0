package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
func runFiles(ctx context.Context, cfg Config, _ *env) ([]Result, error) {
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
	resetPeakRSS()
	m, err := timeOne(func() error {
		if _, err := stream.Final(ctx, "file", host.OutgoingFile{Path: path, MimeType: "application/octet-stream"}); err != nil {
			return err
		}
		return wait(uploaded)
	})
	if err != nil {
		return out, fmt.Errorf("files upload: %w", err)
	}
	up := fileResult("files-upload", cfg.FileSize, m)
	up.PeakRSS, up.Baseline, up.Goal = peakRSS(), nameHTTPCopy, ">= 0.7, flat RSS"
	out = append(out, up)
	if err := os.Remove(path); err != nil {
		return out, fmt.Errorf("files: %w", err)
	}

	ch, err := r.conn.Channel(ucs[0].ChannelID)
	if err != nil {
		return out, fmt.Errorf("files: channel: %w", err)
	}
	resetPeakRSS()
	m, err = timeOne(func() error {
		err := ch.Publish(ctx, connector.UserMessage{MessageID: "file-1", Text: "file",
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
	down.PeakRSS, down.Baseline, down.Goal = peakRSS(), nameHTTPCopy, ">= 0.7, flat RSS"
	out = append(out, down)
	return out, nil
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
