package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/xconn/xconn/connector"
)

// connFlags are the serving flags every "serve <connector>" without a web
// side shares.
type connFlags struct {
	listen    string
	publicURL string
	dataDir   string
	storeDSN  string
	apiKey    string
	log       logFlags
	health    healthFlags
}

// register adds the shared flags to fs; dataDef is the connector's own
// default --data (datadir.go), dataHelp says what --data holds for this
// connector, publicHelp (empty: no --public-url) what the public URL is
// for.
func (f *connFlags) register(fs *pflag.FlagSet, dataDef, dataHelp, publicHelp string) {
	fs.StringVar(&f.listen, "listen", envOr("XCONN_LISTEN", serveDefaultListen), "address of the connector endpoints (env XCONN_LISTEN)")
	if publicHelp != "" {
		fs.StringVar(&f.publicURL, "public-url", os.Getenv("XCONN_PUBLIC_URL"), publicHelp+" (env XCONN_PUBLIC_URL)")
	}
	fs.StringVar(&f.dataDir, "data", envOr("XCONN_DATA", dataDef), dataHelp+"; one connector's, locked while it runs (env XCONN_DATA)")
	fs.StringVar(&f.storeDSN, "store", os.Getenv("XCONN_STORE"), `store DSN: "sqlite:/path/file.db" or "postgres://..." (default: SQLite in the data directory) (env XCONN_STORE)`)
	registerAPIKey(fs, &f.apiKey, "system API key xAgent must present (default: env XCONN_API_KEY)")
	f.log.register(fs, true)
	f.health.register(fs)
}

// key returns --api-key, else XCONN_API_KEY.
func (f *connFlags) key() string {
	if f.apiKey == "" {
		f.apiKey = os.Getenv("XCONN_API_KEY")
	}
	return f.apiKey
}

// start is what every "serve <connector>" does first, before it prints
// anything: resolve the key and the log flags, and lock --data for owner
// (the connector's card id). The caller closes the lock when serving ends.
func (f *connFlags) start(cmd *cobra.Command, owner string) (*connector.DataDirLock, *slog.Logger, error) {
	f.key()
	pretty, level, err := f.log.resolve(cmd.OutOrStdout())
	if err != nil {
		return nil, nil, err
	}
	lock, err := lockDataDir(f.dataDir, owner)
	if err != nil {
		return nil, nil, err
	}
	return lock, newLogger(pretty, level, new(sync.Mutex), cmd.OutOrStdout(), cmd.ErrOrStderr(), nil), nil
}

// sdkOptions returns the SDK options of a connector whose state lives in
// <--data>/sub (created 0700): the directory, --store, the API key,
// --public-url and the logger.
func (f *connFlags) sdkOptions(sub string, log *slog.Logger) (connector.Options, error) {
	dir := filepath.Join(f.dataDir, sub)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return connector.Options{}, &exitError{code: 1, err: fmt.Errorf("data directory: %w", err)}
	}
	return connector.Options{DataDir: dir, StoreDSN: f.storeDSN, APIKey: f.apiKey, PublicURL: f.publicURL, Logger: log}, nil
}

// serve runs the connector a "serve <connector>" command builds, the one
// way every such command opens: start (the key, the log flags, --data
// locked for owner, the connector's card id), --health, the SDK options
// under <--data>/sub, the connector built by build (an error exits 1), the
// listener checked, the server started (its store opened and migrated),
// the banner (given the Base URL) printed, then serveConnector until the
// command's context ends.
func (f *connFlags) serve(cmd *cobra.Command, owner, sub string, build func(sdk connector.Options) (*connector.Server, error), banner func(base string) string) error {
	lock, log, err := f.start(cmd, owner)
	if err != nil {
		return err
	}
	defer lock.Close()
	hs, err := startHealth(f.health.addr, log)
	if err != nil {
		return err
	}
	defer hs.Close()
	sdk, err := f.sdkOptions(sub, log)
	if err != nil {
		return err
	}
	srv, err := build(sdk)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	ln, err := f.listenChecked()
	if err != nil {
		return err
	}
	if err := srv.Start(cmd.Context()); err != nil { // the store opened and migrated
		ln.Close()
		if cmd.Context().Err() != nil {
			return nil // stopped while starting
		}
		return &exitError{code: 1, err: err}
	}
	fmt.Fprint(cmd.OutOrStdout(), banner("http://"+serveDialable(ln.Addr())))
	return serveConnector(cmd, srv, ln, f.apiKey, hs, nil)
}

// listenChecked listens on --listen and refuses, before anything is
// printed, a non-loopback address without an API key (checkListenKey).
// Errors exit 1.
func (f *connFlags) listenChecked() (net.Listener, error) {
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return nil, &exitError{code: 1, err: fmt.Errorf("listen %s: %w", f.listen, err)}
	}
	if err := checkListenKey(ln, f.apiKey); err != nil {
		ln.Close()
		return nil, &exitError{code: 1, err: err}
	}
	return ln, nil
}

// serveConnector serves srv on ln until the command's context ends (the
// first SIGINT or SIGTERM), printing the no-API-key warning before and
// "Stopping…" when the stop begins; then it runs closeAfter (for instance
// the store the command opened). hs reports the server's readiness and
// tells the service manager READY and STOPPING. Errors exit 1.
func serveConnector(cmd *cobra.Command, srv *connector.Server, ln net.Listener, apiKey string, hs *healthServer, closeAfter func() error) error {
	out := cmd.OutOrStdout()
	if apiKey == "" {
		fmt.Fprintln(out, "  API key:   none (set --api-key or XCONN_API_KEY before exposing --listen beyond this machine)")
	}
	stopping := make(chan struct{})
	unwatch := context.AfterFunc(cmd.Context(), func() { hs.stopping(); fmt.Fprintln(out, "Stopping…"); close(stopping) })
	hs.check(checkStore, srv.Ready)
	hs.up("serving on " + ln.Addr().String())
	err := srv.Serve(cmd.Context(), ln)
	if closeAfter != nil {
		err = errors.Join(err, closeAfter())
	}
	if !unwatch() {
		<-stopping
	}
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	return nil
}

// checkListenKey refuses, before anything is printed, what the SDK's
// Serve would refuse: no system API key on a listener that is not on a
// loopback address.
func checkListenKey(ln net.Listener, apiKey string) error {
	if apiKey != "" {
		return nil
	}
	if host, _, err := net.SplitHostPort(ln.Addr().String()); err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			return nil
		}
	}
	return fmt.Errorf("no system API key: --listen %s is not a loopback address; set --api-key or XCONN_API_KEY", ln.Addr())
}
