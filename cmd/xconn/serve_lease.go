package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/store"
)

// webchatLeaseName is the store lease that makes one "serve webchat"
// process on a shared store the active one (--lease-ttl).
const webchatLeaseName = "serve:" + webchat.CardID

// waitActiveWebchat blocks until this process holds the active lease of
// the web chat connector on the store of f (a hot standby until then),
// printing one line when it starts waiting and one when it is active. hs
// answers for the standby meanwhile: not ready, "standby: lease held by
// <holder>"; once active the store check says "starting" until the
// caller's connector serves.
func waitActiveWebchat(ctx context.Context, f webchatFlags, out io.Writer, log *slog.Logger, hs *healthServer) (*webchatLease, error) {
	dsn := f.storeDSN
	if dsn == "" {
		dsn = "sqlite:" + filepath.Join(f.dataDir, "webchat.db")
	}
	if err := os.MkdirAll(f.dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	db, err := store.Open(ctx, dsn, store.Options{DataDir: f.dataDir})
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	host, _ := os.Hostname()
	holder := fmt.Sprintf("%s/%d/%s", host, os.Getpid(), connector.NewID(""))
	hs.check(checkStore, storeCheck(db))
	hs.check(checkLease, leaseCheck(db, webchatLeaseName, holder))
	hs.up("standby: waiting for the active lease")
	fmt.Fprintf(out, "Standby: waiting for the active lease (takeover within %s of the active process's end)\n", f.leaseTTL*5/4)
	l, err := connector.WaitActive(ctx, db, webchatLeaseName, holder, f.leaseTTL)
	if err != nil {
		db.Close()
		return nil, err
	}
	hs.set(checkStore, errors.New("starting: taking over as the active replica"))
	fmt.Fprintln(out, "Active: holding the lease")
	log.Info("serve: active lease held", "lease", webchatLeaseName)
	return &webchatLease{ActiveLease: l, db: db}, nil
}

// heldLease is an active lease being watched: ctx ends when the lease is
// lost (or the parent ends); stop releases it.
type heldLease struct {
	ctx  context.Context
	stop func()
}

// holdActiveWebchat waits for the active lease (waitActiveWebchat) and
// watches it.
func holdActiveWebchat(ctx context.Context, f webchatFlags, out io.Writer, log *slog.Logger, hs *healthServer) (*heldLease, error) {
	l, err := waitActiveWebchat(ctx, f, out, log, hs)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-l.Lost():
			// Fencing: the standby may hold the lease a quarter of its
			// lifetime from now, too soon for a graceful shutdown; exit
			// at once, as a crash would (the protocol's records make
			// that safe).
			log.Error("serve: the active lease was lost; exiting")
			fmt.Fprintln(out, "xconn: the active lease was lost")
			os.Exit(1)
		case <-ctx.Done():
		}
	}()
	return &heldLease{ctx: ctx, stop: func() {
		cancel()
		<-done
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer rcancel()
		if err := l.release(rctx); err != nil {
			log.Warn("serve: release the active lease", "err", err)
		}
	}}, nil
}

// webchatLease is the held active lease with its own store handle (a pool
// of its own, so that renewals never queue behind the connector's work).
type webchatLease struct {
	*connector.ActiveLease
	db *store.DB
}

// release gives the lease up and closes its store handle.
func (l *webchatLease) release(ctx context.Context) error {
	return errors.Join(l.Release(ctx), l.db.Close())
}

// registerProcessMetrics adds the Go runtime and process collectors
// (go_goroutines, process_open_fds, ...) to a connector's /metrics.
func registerProcessMetrics(reg *prometheus.Registry) {
	_ = reg.Register(collectors.NewGoCollector())
	_ = reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}
