package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/telegram"
)

// telegramFlags are the flags of "serve telegram": the web chat's serving
// flags that apply to a connector without a web side, and the Bot API's.
type telegramFlags struct {
	listen    string
	publicURL string
	dataDir   string
	storeDSN  string
	apiKey    string
	apiURL    string
	proxy     string
}

func newServeTelegramCmd() *cobra.Command {
	var f telegramFlags
	cmd := &cobra.Command{
		Use:   "telegram",
		Short: "Serve the Telegram connector (Base URL for xAgent; a bot in a chat)",
		Long: `Serve the Telegram connector (im.telegram) at the root of --listen, its Base URL
for xAgent. A user signs in with the telegram_bot_binding form: a bot token from
BotFather and the chat id the bot serves. State lives in <--data>/telegram
(SQLite) or --store. Where Telegram is blocked, reach it through --telegram-proxy
(http://, https://, socks5:// or socks5h://; HTTPS_PROXY and HTTP_PROXY are
honoured too).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.apiKey == "" {
				f.apiKey = os.Getenv("XCONN_API_KEY")
			}
			log := serveLogger(cmd.ErrOrStderr(), slog.LevelInfo)
			dir := filepath.Join(f.dataDir, "telegram")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return &exitError{code: 1, err: fmt.Errorf("data directory: %w", err)}
			}
			conn, err := telegram.New(telegram.Options{
				SDK:    connector.Options{DataDir: dir, StoreDSN: f.storeDSN, APIKey: f.apiKey, PublicURL: f.publicURL, Logger: log},
				APIURL: f.apiURL,
				Proxy:  f.proxy,
			})
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			ln, err := net.Listen("tcp", f.listen)
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("listen %s: %w", f.listen, err)}
			}
			out := cmd.OutOrStdout()
			api := f.apiURL
			if api == "" {
				api = telegram.DefaultAPIURL
			}
			fmt.Fprintf(out, "Telegram connector\n  Base URL:  http://%s\n  Bot API:   %s\n", serveDialable(ln.Addr()), api)
			if f.apiKey == "" {
				fmt.Fprintln(out, "  API key:   none (set --api-key or XCONN_API_KEY before exposing --listen beyond this machine)")
			}
			stopping := make(chan struct{})
			unwatch := context.AfterFunc(cmd.Context(), func() { fmt.Fprintln(out, "Stopping…"); close(stopping) })
			err = conn.Server().Serve(cmd.Context(), ln)
			if !unwatch() {
				<-stopping
			}
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.listen, "listen", envOr("XCONN_LISTEN", serveDefaultListen), "address of the connector endpoints (env XCONN_LISTEN)")
	fs.StringVar(&f.publicURL, "public-url", os.Getenv("XCONN_PUBLIC_URL"), "absolute URL at which xAgent reaches the connector, for absolute file download URLs (default: relative ones) (env XCONN_PUBLIC_URL)")
	fs.StringVar(&f.dataDir, "data", envOr("XCONN_DATA", serveDefaultDataDir), "data directory: SQLite database, file cache, keys, under telegram/ (env XCONN_DATA)")
	fs.StringVar(&f.storeDSN, "store", os.Getenv("XCONN_STORE"), `store DSN: "sqlite:/path/file.db" or "postgres://..." (default: SQLite in the data directory) (env XCONN_STORE)`)
	fs.StringVar(&f.apiKey, "api-key", "", "system API key xAgent must present (default: env XCONN_API_KEY)")
	fs.StringVar(&f.apiURL, "telegram-api-url", envOr("XCONN_TELEGRAM_API_URL", telegram.DefaultAPIURL), "Bot API server: the public one, a self-hosted telegram-bot-api, or a fake for tests (env XCONN_TELEGRAM_API_URL)")
	fs.StringVar(&f.proxy, "telegram-proxy", os.Getenv("XCONN_TELEGRAM_PROXY"), "proxy for the Bot API: http://, https://, socks5:// or socks5h:// URL (default: HTTPS_PROXY/HTTP_PROXY) (env XCONN_TELEGRAM_PROXY)")
	return cmd
}
