package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/store"
)

// refreshExpired records the connector's expired outcomes.
func (r *chaosRun) refreshExpired(ctx context.Context, obs *store.DB) {
	r.mu.Lock()
	chans := make([]string, 0, len(r.channels))
	for _, c := range r.channels {
		chans = append(chans, c)
	}
	r.mu.Unlock()
	for _, c := range chans {
		outs, err := obs.OutboxOutcomes(ctx, chaosOutboxQueue, c, 100000)
		if err != nil {
			continue
		}
		for _, o := range outs {
			if o.Kind == delivery.OutcomeExpired {
				r.chk.Expired(o.MessageID)
			}
		}
	}
}

func (r *chaosRun) watchExpired(ctx context.Context, obs *store.DB) {
	for sleepCtx(ctx, 3*time.Second) {
		r.refreshExpired(ctx, obs)
	}
}

// tailJournal feeds the host child's journal to the checker.
func (r *chaosRun) tailJournal(ctx context.Context) {
	path := filepath.Join(r.work, "journal.jsonl")
	var off int64
	var partial []byte
	buf := make([]byte, 64<<10)
	for {
		f, err := os.Open(path)
		if err == nil {
			for {
				n, err := f.ReadAt(buf, off)
				if n > 0 {
					off += int64(n)
					partial = append(partial, buf[:n]...)
					for {
						i := bytes.IndexByte(partial, '\n')
						if i < 0 {
							break
						}
						r.journalLine(partial[:i])
						partial = partial[i+1:]
					}
				}
				if err != nil {
					break
				}
			}
			f.Close()
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return
		}
	}
}

func (r *chaosRun) journalLine(line []byte) {
	var rec chaosRecord
	if err := json.Unmarshal(line, &rec); err != nil {
		return // a line torn by SIGKILL is completed by nothing: skip it
	}
	switch rec.Kind {
	case "recv":
		r.chk.Received(rec.ID, rec.Text)
	case "ack":
		r.chk.Ack(rec.ID, rec.Status)
	case "tool-start":
		r.chk.ToolStarted(rec.Call)
	case "tool-done":
		r.chk.ToolDone(rec.Call, rec.Result)
	case "ready":
		r.mu.Lock()
		r.ready[rec.Room] = true
		if rec.ID != "" {
			r.channels[rec.Room] = rec.ID
		}
		r.mu.Unlock()
	case "metrics":
		r.mu.Lock()
		r.hostMetrics = rec.Addr
		r.mu.Unlock()
	}
}
