package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/store"
)

// Defaults of "xconn serve webchat" (and "xconn demo").
const (
	serveDefaultListen  = "127.0.0.1:8080"
	serveDefaultDataDir = "./xconn-data"
	shutdownTimeout     = 10 * time.Second
	// serveReadHeaderTimeout bounds request headers; there is no write timeout
	// because event streams are long-lived (each write has its own
	// deadline in the web side).
	serveReadHeaderTimeout = 10 * time.Second
	serveSigningKeyFile    = "webchat-signing.key"
)

func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a connector for a real xAgent",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newServeWebchatCmd())
	return cmd
}

// webchatFlags are the flags of "serve webchat", shared with "demo".
type webchatFlags struct {
	listen       string
	publicURL    string
	publicListen string
	dataDir      string
	storeDSN     string
	apiKey       string
	maxUpload    int64
	loginTTL     time.Duration
}

func (f *webchatFlags) register(cmd *cobra.Command, withAPIKey bool) {
	fs := cmd.Flags()
	fs.StringVar(&f.listen, "listen", envOr("XCONN_LISTEN", serveDefaultListen), "address of the connector endpoints (and of the web side unless --public-listen) (env XCONN_LISTEN)")
	fs.StringVar(&f.publicURL, "public-url", os.Getenv("XCONN_PUBLIC_URL"), "absolute URL at which browsers reach the web side, e.g. https://chat.example.com (default: the web listener's address) (env XCONN_PUBLIC_URL)")
	fs.StringVar(&f.publicListen, "public-listen", os.Getenv("XCONN_PUBLIC_LISTEN"), "serve the web side (/webchat/) on this address of its own instead of --listen (env XCONN_PUBLIC_LISTEN)")
	fs.StringVar(&f.dataDir, "data", envOr("XCONN_DATA", serveDefaultDataDir), "data directory: SQLite database, file cache, keys (env XCONN_DATA)")
	fs.StringVar(&f.storeDSN, "store", os.Getenv("XCONN_STORE"), `store DSN: "sqlite:/path/file.db" or "postgres://..." (default: SQLite in the data directory) (env XCONN_STORE)`)
	fs.Int64Var(&f.maxUpload, "max-upload", webchat.DefaultMaxUploadBytes, "largest message (file included) a browser may post, in bytes")
	fs.DurationVar(&f.loginTTL, "login-ttl", webchat.DefaultLoginTTL, "lifetime of one QR login link")
	if withAPIKey {
		fs.StringVar(&f.apiKey, "api-key", "", "system API key xAgent must present (default: env XCONN_API_KEY)")
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func newServeWebchatCmd() *cobra.Command {
	var f webchatFlags
	cmd := &cobra.Command{
		Use:   "webchat",
		Short: "Serve the web chat connector (Base URL for xAgent, chat pages for browsers)",
		Long: `Serve the web chat connector: the Connector Server endpoints at the root of
--listen (its Base URL for xAgent) and the chat pages under /webchat/, on the same
listener or on --public-listen. State lives in --data (SQLite) or --store.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.apiKey == "" {
				f.apiKey = os.Getenv("XCONN_API_KEY")
			}
			log := serveLogger(cmd.ErrOrStderr(), slog.LevelInfo)
			rt, err := startWebchat(cmd.Context(), f, "webchat.db", log)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Web chat connector\n  Base URL:  %s\n  Chat page: %s\n", rt.baseURL, rt.conn.WebURL())
			if f.apiKey == "" {
				fmt.Fprintln(cmd.OutOrStdout(), "  API key:   none (set --api-key or XCONN_API_KEY before exposing --listen beyond this machine)")
			}
			<-cmd.Context().Done()
			fmt.Fprintln(cmd.OutOrStdout(), "Stopping…")
			return rt.close()
		},
	}
	f.register(cmd, true)
	return cmd
}

// serveLogger returns a text logger whose secrets are redacted.
func serveLogger(w io.Writer, level slog.Level) *slog.Logger {
	h := slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})
	return slog.New(connector.NewRedactingHandler(h, nil))
}

// webchatRuntime is a running web chat connector with its listeners and
// store. close stops it.
type webchatRuntime struct {
	conn    *webchat.Connector
	db      *store.DB
	servers []*http.Server
	done    chan error // one result per server
	baseURL string     // the connector's Base URL for xAgent
	log     *slog.Logger
}

// startWebchat opens the store, builds and starts the connector and serves
// it. dbName is the SQLite file used when f.storeDSN is empty.
func startWebchat(ctx context.Context, f webchatFlags, dbName string, log *slog.Logger) (*webchatRuntime, error) {
	if err := os.MkdirAll(f.dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	dsn := f.storeDSN
	if dsn == "" {
		dsn = "sqlite:" + filepath.Join(f.dataDir, dbName)
	}
	key, err := serveLoadOrCreateKey(filepath.Join(f.dataDir, serveSigningKeyFile))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", f.listen, err)
	}
	var pubLn net.Listener
	if f.publicListen != "" {
		if pubLn, err = net.Listen("tcp", f.publicListen); err != nil {
			ln.Close()
			return nil, fmt.Errorf("listen %s: %w", f.publicListen, err)
		}
	}
	closeListeners := func() {
		ln.Close()
		if pubLn != nil {
			pubLn.Close()
		}
	}
	publicURL := f.publicURL
	if publicURL == "" {
		webLn := ln
		if pubLn != nil {
			webLn = pubLn
		}
		publicURL = "http://" + serveDialable(webLn.Addr())
	}
	db, err := store.Open(ctx, dsn, store.Options{DataDir: f.dataDir})
	if err != nil {
		closeListeners()
		return nil, fmt.Errorf("open store: %w", err)
	}
	conn, err := webchat.New(webchat.Options{
		Store:          db,
		Delivery:       db,
		APIKey:         f.apiKey,
		PublicURL:      publicURL,
		DataDir:        filepath.Join(f.dataDir, "webchat-files"),
		SigningKey:     key,
		Logger:         log,
		MaxUploadBytes: f.maxUpload,
		LoginTTL:       f.loginTTL,
	})
	if err == nil {
		err = conn.Start(ctx)
	}
	if err != nil {
		closeListeners()
		db.Close()
		return nil, err
	}
	rt := &webchatRuntime{conn: conn, db: db, done: make(chan error, 2), baseURL: "http://" + serveDialable(ln.Addr()), log: log}
	if pubLn == nil {
		rt.serve(ln, conn)
	} else {
		rt.serve(ln, conn.ConnectorHandler())
		rt.serve(pubLn, conn.WebHandler())
	}
	return rt, nil
}

func (rt *webchatRuntime) serve(ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: serveReadHeaderTimeout, ErrorLog: slog.NewLogLogger(rt.log.Handler(), slog.LevelWarn)}
	rt.servers = append(rt.servers, srv)
	go func() {
		err := srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		rt.done <- err
	}()
}

// close ends the browser streams and the connector, shuts the listeners
// down, waits for the serving goroutines and closes the store.
func (rt *webchatRuntime) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	errs := []error{rt.conn.Close(ctx)}
	for _, srv := range rt.servers {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, err, srv.Close())
		}
	}
	for range rt.servers {
		errs = append(errs, <-rt.done)
	}
	errs = append(errs, rt.db.Close())
	return errors.Join(errs...)
}

// serveDialable turns a listener address into host:port a browser on this
// machine can open (an unspecified address becomes the loopback one).
func serveDialable(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if ip.To4() != nil {
			host = "127.0.0.1"
		} else {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, port)
}

// serveLoadOrCreateKey reads a 32-byte key file, creating it (mode 0600) with
// random bytes when it does not exist.
func serveLoadOrCreateKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if len(b) != 32 {
			return nil, fmt.Errorf("key file %s: want 32 bytes, found %d", path, len(b))
		}
		return b, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("key file: %w", err)
	}
	b = make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, fmt.Errorf("key file: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	return b, nil
}

// demoTrim shortens s to n runes for a log line.
func demoTrim(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
