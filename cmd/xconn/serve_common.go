package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

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
}

// register adds the shared flags to fs; dataHelp says what --data holds
// for this connector, publicHelp (empty: no --public-url) what the public
// URL is for.
func (f *connFlags) register(fs *pflag.FlagSet, dataHelp, publicHelp string) {
	fs.StringVar(&f.listen, "listen", envOr("XCONN_LISTEN", serveDefaultListen), "address of the connector endpoints (env XCONN_LISTEN)")
	if publicHelp != "" {
		fs.StringVar(&f.publicURL, "public-url", os.Getenv("XCONN_PUBLIC_URL"), publicHelp+" (env XCONN_PUBLIC_URL)")
	}
	fs.StringVar(&f.dataDir, "data", envOr("XCONN_DATA", serveDefaultDataDir), dataHelp+" (env XCONN_DATA)")
	fs.StringVar(&f.storeDSN, "store", os.Getenv("XCONN_STORE"), `store DSN: "sqlite:/path/file.db" or "postgres://..." (default: SQLite in the data directory) (env XCONN_STORE)`)
	registerAPIKey(fs, &f.apiKey, "system API key xAgent must present (default: env XCONN_API_KEY)")
}

// key returns --api-key, else XCONN_API_KEY.
func (f *connFlags) key() string {
	if f.apiKey == "" {
		f.apiKey = os.Getenv("XCONN_API_KEY")
	}
	return f.apiKey
}

// serveConnector serves srv on ln until the command's context ends (the
// first SIGINT or SIGTERM), printing the no-API-key warning before and
// "Stopping…" when the stop begins; then it runs closeAfter (for instance
// the store the command opened). Errors exit 1.
func serveConnector(cmd *cobra.Command, srv *connector.Server, ln net.Listener, apiKey string, closeAfter func() error) error {
	out := cmd.OutOrStdout()
	if apiKey == "" {
		fmt.Fprintln(out, "  API key:   none (set --api-key or XCONN_API_KEY before exposing --listen beyond this machine)")
	}
	stopping := make(chan struct{})
	unwatch := context.AfterFunc(cmd.Context(), func() { fmt.Fprintln(out, "Stopping…"); close(stopping) })
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
