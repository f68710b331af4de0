package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/wechat"
	"github.com/xconn/xconn/store"
)

// wechatFlags are the flags of "serve wechat".
type wechatFlags struct {
	connFlags
	apiURL string
	cdnURL string
}

func newServeWechatCmd() *cobra.Command {
	var f wechatFlags
	cmd := &cobra.Command{
		Use:   "wechat",
		Short: "Serve the WeChat connector (iLink bot API; sign in by scanning a QR code)",
		Long: `Serve the WeChat connector: the Connector Server endpoints at the root of
--listen (its Base URL for xAgent). A user signs a WeChat bot account in with the
QR flow wechat_qr_login. State lives in --data (SQLite) or --store.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServeWechat(cmd, f)
		},
	}
	fs := cmd.Flags()
	f.register(fs, dataDirWechat, "data directory: SQLite database, file cache, keys", "")
	fs.StringVar(&f.apiURL, "wechat-api-url", envOr("XCONN_WECHAT_API_URL", wechat.DefaultAPIURL), "iLink API base URL (env XCONN_WECHAT_API_URL)")
	fs.StringVar(&f.cdnURL, "wechat-cdn-url", envOr("XCONN_WECHAT_CDN_URL", wechat.DefaultCDNURL), "WeChat media CDN base URL (env XCONN_WECHAT_CDN_URL)")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	return cmd
}

// runServeWechat opens the store, builds the connector and serves it until
// the command's context ends.
func runServeWechat(cmd *cobra.Command, f wechatFlags) error {
	ctx := cmd.Context()
	lock, log, err := f.start(cmd, wechat.CardID)
	if err != nil {
		return err
	}
	defer lock.Close()
	hs, err := startHealth(f.health.addr, log)
	if err != nil {
		return err
	}
	defer hs.Close()
	dsn := f.storeDSN
	if dsn == "" {
		dsn = "sqlite:" + filepath.Join(f.dataDir, "wechat.db")
	}
	key, err := serveLoadOrCreateKey(filepath.Join(f.dataDir, "wechat-signing.key"))
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	ln, err := f.listenChecked()
	if err != nil {
		return err
	}
	db, err := store.Open(ctx, dsn, store.Options{DataDir: f.dataDir})
	if err != nil {
		ln.Close()
		return &exitError{code: 1, err: fmt.Errorf("open store: %w", err)}
	}
	conn, err := wechat.New(wechat.Options{
		SDK: connector.Options{Store: db, APIKey: f.apiKey, DataDir: filepath.Join(f.dataDir, "wechat-files"),
			SigningKey: key, Logger: log},
		APIURL: f.apiURL, CDNURL: f.cdnURL,
	})
	if err == nil {
		err = conn.Server().Start(ctx)
	}
	if err != nil {
		ln.Close()
		db.Close()
		return &exitError{code: 1, err: err}
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "WeChat connector\n  Base URL:  http://%s\n  iLink API: %s\n  Sign in:   auth flow %s (scan the QR code with WeChat)\n",
		serveDialable(ln.Addr()), f.apiURL, wechat.FlowQR)
	return serveConnector(cmd, conn.Server(), ln, f.apiKey, hs, db.Close)
}
