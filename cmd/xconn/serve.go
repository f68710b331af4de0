package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/store"
)

// Defaults of "xconn serve webchat" (and "xconn demo").
const (
	serveDefaultListen  = "127.0.0.1:8080"
	shutdownTimeout     = 10 * time.Second
	serveSigningKeyFile = "webchat-signing.key"
)

func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a connector for a real xAgent",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newServeWebchatCmd())
	cmd.AddCommand(newServeWechatCmd())
	cmd.AddCommand(newServeTelegramCmd())
	cmd.AddCommand(newServeFeishuCmd())
	cmd.AddCommand(newServeWecomCmd())
	cmd.AddCommand(newServeSlackCmd())
	cmd.AddCommand(newServeDiscordCmd())
	cmd.AddCommand(newServeDingtalkCmd())
	cmd.AddCommand(newServeADBCmd())
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
	outboxTTL    time.Duration // 0: the SDK's default
	leaseTTL     time.Duration // > 0: active/standby on a shared store (serve_lease.go)
	log          logFlags
	health       healthFlags // serve webchat only (serve_health.go)
}

func (f *webchatFlags) register(cmd *cobra.Command, withAPIKey bool) {
	fs := cmd.Flags()
	fs.StringVar(&f.listen, "listen", envOr("XCONN_LISTEN", serveDefaultListen), "address of the connector endpoints (and of the web side unless --public-listen) (env XCONN_LISTEN)")
	fs.StringVar(&f.publicURL, "public-url", os.Getenv("XCONN_PUBLIC_URL"), "absolute URL at which browsers reach the web side, e.g. https://chat.example.com (default: the web listener's address) (env XCONN_PUBLIC_URL)")
	fs.StringVar(&f.publicListen, "public-listen", os.Getenv("XCONN_PUBLIC_LISTEN"), "serve the web side (/webchat/) on this address of its own instead of --listen (env XCONN_PUBLIC_LISTEN)")
	fs.StringVar(&f.dataDir, "data", envOr("XCONN_DATA", dataDirWebchat), "data directory: SQLite database, file cache, keys; the web chat connector's, locked while it runs (env XCONN_DATA)")
	fs.StringVar(&f.storeDSN, "store", os.Getenv("XCONN_STORE"), `store DSN: "sqlite:/path/file.db" or "postgres://..." (default: SQLite in the data directory) (env XCONN_STORE)`)
	fs.Int64Var(&f.maxUpload, "max-upload", webchat.DefaultMaxUploadBytes, "largest message (file included) a browser may post, in bytes")
	fs.DurationVar(&f.loginTTL, "login-ttl", webchat.DefaultLoginTTL, "lifetime of one QR login link")
	if withAPIKey {
		registerAPIKey(fs, &f.apiKey, "system API key xAgent must present (default: env XCONN_API_KEY)")
	}
	f.log.register(fs, withAPIKey) // serve webchat; the demo has its packet view
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
			pretty, level, err := f.log.resolve(cmd.OutOrStdout())
			if err != nil {
				return err
			}
			log := newLogger(pretty, level, new(sync.Mutex), cmd.OutOrStdout(), cmd.ErrOrStderr(), nil)
			ctx := cmd.Context()
			hs, err := startHealth(f.health.addr, log)
			if err != nil {
				return err
			}
			defer hs.Close()
			defer context.AfterFunc(cmd.Context(), hs.stopping)()
			if f.leaseTTL > 0 { // a hot standby until it holds the store's active lease
				held, err := holdActiveWebchat(ctx, f, cmd.OutOrStdout(), log, hs)
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return &exitError{code: 1, err: err}
				}
				defer held.stop()
				ctx = held.ctx
			}
			lock, err := lockWebchatData(ctx, f)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			rt, err := startWebchat(ctx, f, lock, "webchat.db", log)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Web chat connector\n  Base URL:  %s\n  Chat page: %s\n", rt.baseURL, rt.conn.WebURL())
			if f.apiKey == "" {
				fmt.Fprintln(out, "  API key:   none (set --api-key or XCONN_API_KEY before exposing --listen beyond this machine)")
			}
			stopping := make(chan struct{})
			unwatch := context.AfterFunc(cmd.Context(), func() { fmt.Fprintln(out, "Stopping…"); close(stopping) })
			hs.check(checkStore, rt.conn.Server().Ready)
			hs.up("serving on " + rt.ln.Addr().String())
			err = rt.serve(ctx)
			if !unwatch() {
				<-stopping
			}
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			if cmd.Context().Err() == nil && ctx.Err() != nil {
				return &exitError{code: 1, err: errors.New("the active lease was lost")}
			}
			return nil
		},
	}
	f.register(cmd, true)
	fs := cmd.Flags()
	f.health.register(fs)
	fs.DurationVar(&f.outboxTTL, "outbox-ttl", connector.DefaultOutboxTTL, "lifetime of an inbound message xAgent has not accepted; it then expires")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", 0, "run active/standby on a shared --store (PostgreSQL): serve only while holding the store's lease of this lifetime, else wait as a hot standby that takes over within 1.25× it of the active process's end (0: off); the processes must share --data (its keys, and the file cache whose paths the store records)")
	return cmd
}

// webchatRuntime is a started web chat connector with its store and
// listeners; serve runs it.
type webchatRuntime struct {
	conn    *webchat.Connector
	db      *store.DB
	ln      net.Listener // the connector's, and the web side's unless pubLn
	pubLn   net.Listener // the web side's own (--public-listen), or nil
	baseURL string       // the connector's Base URL for xAgent
	log     *slog.Logger
	lock    *connector.DataDirLock // of --data, released when serving ends
}

// lockWebchatData takes the lock of --data for the web chat connector
// (datadir.go); a second process on it gets one line naming this one's
// pid and address. With --lease-ttl, where active and standby share --data
// and the store's lease decides who serves, a process that has just taken
// the lease waits for the one it replaced to let go of the directory.
func lockWebchatData(ctx context.Context, f webchatFlags) (*connector.DataDirLock, error) {
	lock, err := connector.LockDataDir(f.dataDir)
	if f.leaseTTL > 0 {
		lock, err = waitDataDirLock(ctx, f.dataDir, lock, err, f.leaseTTL+shutdownTimeout)
	}
	if err != nil {
		return nil, &exitError{code: 1, err: err}
	}
	if err := lock.Claim(webchat.CardID); err != nil {
		lock.Close()
		return nil, &exitError{code: 1, err: err}
	}
	return lock, nil
}

// startWebchat listens, opens the store, builds and starts the connector
// whose data directory lock the caller holds (lockWebchatData); it records
// the address in the lock, and rt.serve (or demoServe's stop) releases it.
// dbName is the SQLite file used when f.storeDSN is empty. On an error
// the lock is released.
func startWebchat(ctx context.Context, f webchatFlags, lock *connector.DataDirLock, dbName string, log *slog.Logger) (*webchatRuntime, error) {
	rt, err := startWebchatLocked(ctx, f, dbName, log)
	if err != nil {
		lock.Close()
		return nil, err
	}
	rt.lock = lock
	_ = lock.SetAddr(rt.ln.Addr().String())
	return rt, nil
}

func startWebchatLocked(ctx context.Context, f webchatFlags, dbName string, log *slog.Logger) (*webchatRuntime, error) {
	dsn := f.storeDSN
	if dsn == "" {
		dsn = "sqlite:" + filepath.Join(f.dataDir, dbName)
	}
	key, err := serveLoadOrCreateKey(filepath.Join(f.dataDir, serveSigningKeyFile))
	if err != nil {
		return nil, err
	}
	rt := &webchatRuntime{log: log}
	if rt.ln, err = net.Listen("tcp", f.listen); err != nil {
		return nil, fmt.Errorf("listen %s: %w", f.listen, err)
	}
	if err := checkListenKey(rt.ln, f.apiKey); err != nil {
		rt.ln.Close()
		return nil, err
	}
	webLn := rt.ln
	if f.publicListen != "" {
		if rt.pubLn, err = net.Listen("tcp", f.publicListen); err != nil {
			rt.ln.Close()
			return nil, fmt.Errorf("listen %s: %w", f.publicListen, err)
		}
		webLn = rt.pubLn
	}
	rt.baseURL = "http://" + serveDialable(rt.ln.Addr())
	publicURL := f.publicURL
	if publicURL == "" {
		publicURL = "http://" + serveDialable(webLn.Addr())
	}
	if rt.db, err = store.Open(ctx, dsn, store.Options{DataDir: f.dataDir}); err != nil {
		err = fmt.Errorf("open store: %w", err)
	} else {
		rt.conn, err = webchat.New(webchat.Options{
			SDK: connector.Options{Store: rt.db, APIKey: f.apiKey, DataDir: filepath.Join(f.dataDir, "webchat-files"),
				SigningKey: key, Logger: log, OutboxTTL: f.outboxTTL},
			PublicURL:      publicURL,
			SeparateWeb:    rt.pubLn != nil,
			MaxUploadBytes: f.maxUpload,
			LoginTTL:       f.loginTTL,
		})
		if err == nil {
			registerProcessMetrics(rt.conn.Server().Metrics())
			err = rt.conn.Server().Start(ctx)
		}
	}
	if err != nil {
		rt.ln.Close()
		if rt.pubLn != nil {
			rt.pubLn.Close()
		}
		if rt.db != nil {
			rt.db.Close()
		}
		return nil, err
	}
	return rt, nil
}

// serve serves the connector until ctx ends or the process gets SIGINT or
// SIGTERM; the SDK server closes in order (the browsers' event streams
// first). A web side on its own listener is shut down after it. The store
// is closed last.
func (rt *webchatRuntime) serve(ctx context.Context) error {
	defer rt.lock.Close()
	if rt.pubLn == nil {
		return errors.Join(rt.conn.Server().Serve(ctx, rt.ln), rt.db.Close())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	web := connector.NewHTTPServer(rt.conn.WebHandler(), rt.log) // timeouts and a bound on open connections
	webDone := make(chan error, 1)
	go func() { webDone <- web.Serve(rt.pubLn); cancel() }()
	err := rt.conn.Server().Serve(ctx, rt.ln)
	sctx, scancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer scancel()
	if e := web.Shutdown(sctx); e != nil {
		err = errors.Join(err, e, web.Close())
	}
	if e := <-webDone; !errors.Is(e, http.ErrServerClosed) {
		err = errors.Join(err, e)
	}
	return errors.Join(err, rt.db.Close())
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
		if err := checkSecretFileMode(path); err != nil {
			return nil, err
		}
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

// waitDataDirLock retries LockDataDir every 100 ms while another process
// holds dir, for at most wait (first is the first attempt's result).
func waitDataDirLock(ctx context.Context, dir string, first *connector.DataDirLock, err error, wait time.Duration) (*connector.DataDirLock, error) {
	deadline := time.Now().Add(wait)
	var inUse *connector.DataDirInUseError
	for errors.As(err, &inUse) && time.Now().Before(deadline) {
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		first, err = connector.LockDataDir(dir)
	}
	return first, err
}
