package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/internal/health"
	"github.com/xconn/xconn/internal/sdnotify"
	"github.com/xconn/xconn/store"
)

// Names of the readiness checks of a serve or host process, as /readyz
// lists them.
const (
	checkStore = "store" // reachable, schema applied, server started
	checkLease = "lease" // the active lease held (--lease-ttl only)
	checkHost  = "host"  // the host admitted its connector and serves
)

// errStarting is the store check's state until the store is open.
var errStarting = errors.New("starting: opening the store")

// healthFlags is --health (env XCONN_HEALTH), on every serve target and on
// host.
type healthFlags struct {
	addr string
}

func (f *healthFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.addr, "health", os.Getenv("XCONN_HEALTH"), `serve GET /livez and /readyz on this address of its own, e.g. ":8081", for load balancers and container health checks (ready: store reachable, migrations applied, the active lease held; a standby answers 503 "standby: lease held by ..."); unset: none (env XCONN_HEALTH)`)
}

// healthServer is the process's readiness: the checks of /readyz, served on
// --health when set, and the service manager's notifications
// ($NOTIFY_SOCKET, sd_notify) whether or not it is. The zero value is not
// usable; create it with startHealth and Close it.
type healthServer struct {
	reg    *health.Registry
	notify *sdnotify.Notifier
	log    *slog.Logger
	srv    *http.Server // nil without --health
	addr   string       // the bound --health address
	served chan error   // srv.Serve's result
	cancel context.CancelFunc
	wd     sync.WaitGroup // the watchdog goroutine

	mu    sync.Mutex
	ready bool // READY=1 sent
}

// startHealth listens on addr (unless empty) and serves the registry's
// /livez and /readyz there until Close; the store check says "starting"
// until the caller replaces it. With $WATCHDOG_USEC set it sends the
// service manager's keep-alives while a round of readiness checks
// completes (a wedged check stops them, and the manager restarts the
// process). Errors exit 1.
func startHealth(addr string, log *slog.Logger) (*healthServer, error) {
	h := &healthServer{reg: health.New(), notify: sdnotify.FromEnv(), log: log}
	h.reg.Set(checkStore, errStarting)
	if addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, &exitError{code: 1, err: fmt.Errorf("--health: listen %s: %w", addr, err)}
		}
		h.addr = ln.Addr().String()
		h.srv = &http.Server{
			Handler:           h.reg.Handler(),
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       5 * time.Second,
			WriteTimeout:      health.CheckTimeout + 5*time.Second,
			IdleTimeout:       time.Minute,
			MaxHeaderBytes:    8 << 10,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		}
		h.served = make(chan error, 1)
		go func() { h.served <- h.srv.Serve(ln) }()
		log.Info("health: serving /livez and /readyz", "addr", h.addr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.wd.Add(1)
	go func() {
		defer h.wd.Done()
		h.notify.RunWatchdog(ctx, func(ctx context.Context) bool {
			h.reg.Ready(ctx) // returns unless a check is wedged
			return true
		})
	}()
	return h, nil
}

// check registers a readiness check under name (replacing one there).
func (h *healthServer) check(name string, c health.Check) { h.reg.Add(name, c) }

// set registers a state under name: err, or nil for passing.
func (h *healthServer) set(name string, err error) { h.reg.Set(name, err) }

// up tells the service manager the process is up (READY=1 the first time,
// with status as its STATUS line; STATUS alone after that). A standby is
// up too, its status saying so: /readyz, not READY=1, tells a load
// balancer which replica serves.
func (h *healthServer) up(status string) {
	h.mu.Lock()
	first := !h.ready
	h.ready = true
	h.mu.Unlock()
	var err error
	if first {
		err = h.notify.Ready(status)
	} else {
		err = h.notify.Status(status)
	}
	if err != nil {
		h.log.Warn("health: notify the service manager", "err", err)
	}
}

// stopping tells the service manager the process has begun to stop and
// makes /readyz fail, so a load balancer stops sending to it.
func (h *healthServer) stopping() {
	h.reg.Set("stopping", errors.New("stopping"))
	if err := h.notify.Stopping(); err != nil {
		h.log.Warn("health: notify the service manager", "err", err)
	}
}

// Close stops the watchdog and the --health listener (waiting for both).
func (h *healthServer) Close() error {
	h.cancel()
	h.wd.Wait()
	if h.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := h.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, h.srv.Close())
	}
	if e := <-h.served; !errors.Is(e, http.ErrServerClosed) {
		err = errors.Join(err, e)
	}
	if err != nil {
		return fmt.Errorf("--health: %w", err)
	}
	return nil
}

// leaseCheck is the readiness of a process on the active lease name of db:
// passing while holder holds it, else "standby: lease held by <other>"
// (or "standby: lease free" in the moment before a takeover).
func leaseCheck(db *store.DB, name, holder string) health.Check {
	return func(ctx context.Context) error {
		h, _, err := db.LeaseHolder(ctx, name)
		switch {
		case err != nil:
			return errors.New("lease: the store does not answer")
		case h == holder:
			return nil
		case h == "":
			return errors.New("standby: lease free, taking over")
		}
		return fmt.Errorf("standby: lease held by %s", h)
	}
}

// storeCheck is the readiness of an open store: it answers and its schema
// is this binary's (pending migrations and a newer schema fail). The
// store's own error is not shown: a DSN may carry a password.
func storeCheck(db *store.DB) health.Check {
	return func(ctx context.Context) error {
		if err := db.Ping(ctx); err != nil {
			return errors.New("store: unreachable")
		}
		if err := db.CheckSchema(ctx); err != nil {
			var se *store.SchemaError
			switch {
			case errors.As(err, &se):
				return fmt.Errorf("store: schema at migration %d, newer than this binary's %d", se.Database, se.Binary)
			case errors.Is(err, store.ErrMigrationsPending):
				return errors.New("migrating: " + err.Error())
			}
			return errors.New("store: cannot read the schema version")
		}
		return nil
	}
}

// hostStarting registers the readiness of "xconn host" once its store is
// open: the store, and "starting" until hostServing.
func hostStarting(hs *healthServer, db *store.DB) {
	hs.check(checkStore, storeCheck(db))
	hs.set(checkHost, errors.New("starting: admitting the connector and signing in"))
}

// hostServing makes the host ready while the data plane of connector
// cardID is online, and tells the service manager it is up.
func hostServing(hs *healthServer, h *host.Host, cardID string) {
	hs.check(checkHost, func(context.Context) error {
		c, ok := h.Connector(cardID)
		switch {
		case !ok:
			return fmt.Errorf("connector %s: not admitted", cardID)
		case c.Link != host.LinkOnline:
			if c.LastError != "" {
				return fmt.Errorf("connector %s: data plane %s: %s", cardID, c.Link, c.LastError)
			}
			return fmt.Errorf("connector %s: data plane %s", cardID, c.Link)
		}
		return nil
	})
	hs.up("serving connector " + cardID)
}
